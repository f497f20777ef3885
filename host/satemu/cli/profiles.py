# SPDX-License-Identifier: BSD-2-Clause
"""``satemu profiles`` and ``satemu show``: the built-in profiles, and what one means for a
board's hardware."""

from __future__ import annotations

from pathlib import Path

from satemu.base.boards import BOARDS as SHOW_BOARDS, DEFAULT_BOARD
from satemu.link.profile import builtin_profiles, load_profile
from satemu.report.show import SHOW_OVERRIDES, show_hardware, show_lines
from satemu.cli.args import U32_MAX, given, output_file, whole
from satemu.cli.errors import UsageError


def add_profiles(sub) -> None:
    sub.add_parser("profiles", help="list the built-in link profiles").set_defaults(
        func=cmd_profiles)


def cmd_profiles(args) -> int:
    profiles = builtin_profiles()
    width = max(map(len, profiles))
    for name, p in profiles.items():
        print(f"{name:<{width}}  {p.description}")
    return 0


def add_show(sub) -> None:
    show = sub.add_parser("show", help="show a profile and what it means for the hardware")
    show.add_argument("profile", type=given("a profile"),
                      help="a built-in profile name or a TOML file")
    show.add_argument("--board", choices=list(SHOW_BOARDS), default=DEFAULT_BOARD,
                      help="the board to check against, with its clock, memory, delay-line "
                           "throughput, line rate and channel parameters: " + "; ".join(
                               f"{name}: {b.title}" for name, b in SHOW_BOARDS.items())
                           + " (default %(default)s)")
    show.add_argument("--f-clk", type=whole(1, U32_MAX, "a clock in Hz"), metavar="HZ",
                      help="system clock the registers count in (default: the board's)")
    show.add_argument("--mem-words", type=whole(1, U32_MAX, "a number of words"), metavar="N",
                      help="delay-line memory per channel, in 64-bit words (default: the "
                           "board's)")
    show.add_argument("--mem-wpc", type=whole(0, U32_MAX, "words per 65536 cycles"),
                      metavar="N",
                      help="delay-line throughput per channel with both busy, in 64-bit words "
                           "per 65536 cycles; 0: not limited (default: the board's)")
    show.add_argument("--steps", type=whole(0, U32_MAX, "a number of steps"), default=40,
                      metavar="N", help="a timeline's steps to list (default %(default)s)")
    show.add_argument("--plot", metavar="FILE.png", type=given("a file name"),
                      help="a profile with a timeline: plot each channel's rate, delay and "
                           "loss over time into FILE.png")
    show.set_defaults(func=cmd_show)


def cmd_show(args) -> int:
    hw, board = show_hardware(args.board, {key: getattr(args, key)
                                           for key, _ in SHOW_OVERRIDES})
    p = load_profile(args.profile)
    if args.plot:
        if p.timeline is None:
            raise UsageError(f"--plot draws a profile's timeline: {p.name} has none")
        output_file(Path(args.plot), "--plot")
    for line in show_lines(p, hw, board, args.steps):
        print(line)
    if args.plot:
        from satemu.link.timeline import compile_timeline
        from satemu.report.timeline_plot import plot_timeline
        plot_timeline(p, compile_timeline(p, hw), hw.f_clk, Path(args.plot))
        print(f"  plot: {args.plot}")
    return 0
