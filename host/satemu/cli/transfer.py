# SPDX-License-Identifier: BSD-2-Clause
"""What ``satemu quic`` and ``satemu experiment`` share: the options of a transfer (its endpoint
settings generated from satemu.quic.settings.SETTINGS), their checks, and one transfer run with
a progress line."""

from __future__ import annotations

import sys

from satemu.quic.engine import ENGINES
from satemu.quic.settings import SETTINGS
from satemu.base.units import UnitError
from satemu.cli.args import U64_MAX, given, seconds, whole
from satemu.cli.errors import UsageError


def transfer_args(p) -> None:
    """A transfer's options: the engine, the seed, every endpoint setting (``--NAME``, refused
    empty here and read when the settings are built: :func:`endpoint_settings`), and where and
    how it runs."""
    p.add_argument("--engine", choices=ENGINES, default="board",
                   help="what carries the link: 'board', the simulated board in Verilator "
                   "(the hardware path), or 'model', the reference models of the same path, "
                   "which equal it frame for frame and run far faster (default %(default)s)")
    p.add_argument("--seed", type=whole(0, U64_MAX, "a seed"), default=0,
                   help="randomness of both endpoints (0 .. 2^64-1)")
    for s in SETTINGS:
        p.add_argument(s.option, default=s.default(), type=given(s.what), metavar=s.metavar,
                       help=s.help)
    p.add_argument("--max-time", type=seconds(0, 1e6, "a time limit"), default=600.0,
                   metavar="S",
                   help="give up after S seconds of link time (default %(default)s)")
    p.add_argument("--out", metavar="DIR", type=given("a directory"),
                   help="where to write results (made if need be, and checked before "
                   "anything runs)")
    p.add_argument("--pcap", action="store_true",
                   help="also write each run's capture.pcapng: the frames into and out of "
                   "both ports at their cycles, each with its fate, and the TLS secrets "
                   "that let Wireshark decrypt QUIC (also in keys.log beside it)")
    p.add_argument("--keep", action="store_true",
                   help="leave the simulated board running if this command started it")
    p.add_argument("--port", metavar="URL", type=given("a simulated board's URL"),
                   help="a running simulated board's UART "
                   "(default: the one 'satemu sim' manages, started if need be); with "
                   "--realtime --scenario, the UART of the box between the interfaces, which "
                   "takes the scenario's profile and whose counters the run reads")
    p.add_argument("--eth-port", type=whole(1, 65535, "a TCP port"), metavar="PORT",
                   help="with --port: that board's Ethernet-module TCP port")


def transfer(state, profile: str, size: int, ack: str, args, label: str = "", qlog_dir=None,
              pcap=None):
    """One QUIC download on the engine ``args.engine`` (the simulated board ``state``, or the
    model when ``state`` is None), with a progress line."""
    from satemu.base.boards import BOARDS, DEFAULT_BOARD
    from satemu.quic.engine import run_transfer
    from satemu.report.progress import ProgressLine
    f_clk = state["hello"]["f_clk"] if state else BOARDS[DEFAULT_BOARD].f_clk
    line = ProgressLine(size, f_clk=f_clk, every=5.0)
    last = {}

    def progress(sim):
        import time as _t
        now = _t.monotonic()
        rate = 0.0
        if last:
            rate = (sim.now_cycle - last["cycle"]) / max(now - last["wall"], 1e-9)
        last.update(cycle=sim.now_cycle, wall=now)
        line.update(sim.time(sim.now_cycle), sim.client.received, rate)

    if label:
        print(label, file=sys.stderr)
    settings, stacks = endpoint_settings(args)
    t = run_transfer(args.engine, profile, size, ack=ack, seed=args.seed,
                     max_seconds=args.max_time, settings=settings, stacks=stacks,
                     progress=progress, qlog_dir=qlog_dir, board=state, pcap=pcap)
    line.update(t.virtual_s, t.size if t.completed else 0,
                t.virtual_s * t.f_clk / max(t.wall_s, 1e-9))        # the average, at the end
    line.finish()
    return t


def endpoint_settings(args, **fixed):
    """(EndpointSettings, (client stack, server stack)) from the command line's endpoint
    options (``fixed`` replaces some, as a sweep does), each stack checked against them;
    UsageError (one line) for anything a stack cannot take."""
    from satemu.quic.settings import SETTING_NAMES, EndpointSettings, parse_setting
    try:
        values = dict(parse_setting(name, getattr(args, name)) for name in SETTING_NAMES)
        values.update(fixed)
        stacks = values.pop("stacks")
        settings = EndpointSettings(**values)
        settings.check_stacks(stacks)
    except ValueError as e:
        raise UsageError(f"{e}") from None
    return settings, stacks


def check_receiver(stack: str, ack: str) -> None:
    """UsageError (one line) if a client of ``stack`` cannot apply the ACK policy ``ack``."""
    if stack == "quinn":
        from satemu.quic.quinn import quinn_policy
        try:
            quinn_policy(ack)
        except ValueError as e:
            raise UsageError(f"--ack: {e}") from None


def read_size(text: str) -> int:
    """``--size`` (or one of ``--sizes``) in bytes: a whole number, at least 1; UsageError (one
    line) if not."""
    from satemu.base.units import parse_size
    bare = text.strip()
    try:
        value = (int(bare) if bare.isascii() and bare.isdigit() and len(bare) <= 30
                 else parse_size(text))
    except UnitError as e:
        raise UsageError(f"--size {text[:40]!r}: {e}") from None
    if value < 1 or value != int(value):
        raise UsageError(f"--size {text[:40]!r}: a whole number of bytes, at least 1")
    return int(value)


def check_ack(text: str) -> str:
    """The ACK policy ``text`` in its canonical form; UsageError (one line, with N's range: the
    one every stack takes, satemu.quic.settings.ACK_N_MAX) if it is none."""
    from satemu.quic.ackpolicy import AckPolicy
    try:
        return str(AckPolicy.parse(text))
    except ValueError as e:
        raise UsageError(f"--ack: {e}") from None
