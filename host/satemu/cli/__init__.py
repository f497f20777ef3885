# SPDX-License-Identifier: BSD-2-Clause
"""The ``satemu`` command line: a thin layer over the profile and device APIs.

Each verb is a module here that adds its own subparser (options, defaults, help) and the
function that carries it out; :func:`main` builds the top parser from them and dispatches.
"""

from __future__ import annotations

import argparse

from satemu import __version__
from satemu.cli import box, experiment, flash, profiles, quic, serve, sim
from satemu.cli.box import STAT_ROWS
from satemu.cli.errors import UsageError, run
# Importable from here as before the verbs had modules of their own (tests use them).
from satemu.cli.args import output_dir as _output_dir, output_file as _output_file  # noqa: F401
from satemu.cli.transfer import read_size as _size  # noqa: F401

__all__ = ["main", "build_parser", "UsageError", "STAT_ROWS", "VERBS"]

# Every verb's subparser, in the order `satemu --help` lists them.
VERBS = (profiles.add_profiles, profiles.add_show, box.add_load, box.add_stats,
         box.add_bod_trace, quic.add_quic, experiment.add_experiment, box.add_capture,
         sim.add_sim, flash.add_flash, serve.add_serve)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="satemu", description="FPGA-backed satellite link emulator")
    ap.add_argument("--version", action="version", version=f"satemu {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    for add in VERBS:
        add(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's). Its status: 0 on success, 2 after a
    one-line error on stderr for anything expected (a bad option, profile, file or box: no
    traceback; argparse's own usage errors exit with 2 too), 130 on Ctrl-C."""
    args = build_parser().parse_args(argv)
    return run(args.func, args)

