# SPDX-License-Identifier: BSD-2-Clause
"""The ``satemu`` command line: a thin layer over the profile and device APIs."""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

from . import __version__
from .profile import Hardware, ProfileError, builtin_profiles, load_profile
from .units import format_size, format_time


def cmd_profiles(args) -> int:
    profiles = builtin_profiles()
    width = max(map(len, profiles))
    for name, p in profiles.items():
        print(f"{name:<{width}}  {p.description}")
    return 0


def cmd_show(args) -> int:
    hw = Hardware(f_clk=args.f_clk, mem_words=args.mem_words)
    p = load_profile(args.profile)
    regs = p.check(hw)
    print(f"{p.name}: {p.description}" if p.description else p.name)
    if p.source:
        print(f"  source: {p.source}")
    for name, ch in p.channels():
        r = regs[name]
        per_byte = Fraction(r.rate_q) + Fraction(r.rate_num, r.rate_den)
        print(f"  {name:<8} {ch.describe(hw)}")
        frac = f" + {r.rate_num}/{r.rate_den}" if r.rate_num else ""
        shaping = f"{r.rate_q}{frac} cycles per byte" if per_byte else "not shaped"
        print(f"           at {hw.f_clk / 1e6:g} MHz: {shaping}, delay {r.delay} cycles "
              f"({format_time(Fraction(max(r.delay, hw.params.latency_floor), hw.f_clk))} "
              f"departure to egress)")
        need = ch.budget_words(hw)
        print(f"           delay line: at most {format_size(need * 8)} of "
              f"{format_size(hw.mem_words * 8)} ({100 * need / hw.mem_words:.1f}%)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="satemu", description="FPGA-backed satellite link emulator")
    ap.add_argument("--version", action="version", version=f"satemu {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("profiles", help="list the built-in link profiles").set_defaults(func=cmd_profiles)
    show = sub.add_parser("show", help="show a profile and what it means for the hardware")
    show.add_argument("profile", help="a built-in profile name or a TOML file")
    show.add_argument("--f-clk", type=int, default=Hardware.f_clk, metavar="HZ",
                      help="system clock the registers count in (default %(default)s)")
    show.add_argument("--mem-words", type=int, default=Hardware.mem_words, metavar="N",
                      help="delay-line memory per channel, in 64-bit words (default %(default)s)")
    show.set_defaults(func=cmd_show)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ProfileError as e:
        print(f"satemu: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
