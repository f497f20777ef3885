# SPDX-License-Identifier: BSD-2-Clause
"""``satemu profiles`` and ``satemu show``: the built-in profiles, and what one means for a
board's hardware."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from satemu.base.boards import BOARDS as SHOW_BOARDS, DEFAULT_BOARD
from satemu.link.profile import builtin_profiles, load_profile
from satemu.base.protocol import CHANNEL_NAMES
from satemu.base.regmap import BOD_RATE_ONE
from satemu.base.units import format_rate, format_size, format_time
from satemu.base.hardware import Hardware
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


SHOW_OVERRIDES = (("f_clk", "--f-clk"), ("mem_words", "--mem-words"), ("mem_wpc", "--mem-wpc"))


def show_hardware(args) -> tuple[Hardware, list[str]]:
    """``satemu show``'s hardware: the ``--board``'s, with the options given over it; and the
    lines that say so."""
    board = SHOW_BOARDS[args.board]
    given = {key: getattr(args, key) for key, _ in SHOW_OVERRIDES if getattr(args, key) is not None}
    hw = replace(board.hardware, **given)
    over = ("; given " + ", ".join(f"{opt} {given[key]}" for key, opt in SHOW_OVERRIDES
                                   if key in given)) if given else ""
    def per_channel(values):
        if values[0] == values[1]:
            return f"{values[0]}"
        return " and ".join(f"{v} ({name})" for v, name in zip(values, CHANNEL_NAMES))

    wpcs = [hw.wpc(ch) for ch in range(len(CHANNEL_NAMES))]
    paces = [hw.channel_params(ch).mem_pace for ch in range(len(CHANNEL_NAMES))]
    wpc = (f"{per_channel(wpcs)} words per 65536 cycles guaranteed" if any(wpcs)
           else "throughput not limited")
    if any(paces):
        wpc += f", frames falling due together leave at {per_channel(paces)} cycles a word"
    return hw, [f"board: {args.board} ({board.title}), {hw.f_clk / 1e6:g} MHz, ports at "
                f"{format_rate(hw.port_bps)}{over}",
                f"       delay line per channel: {format_size(hw.mem_words * 8)}, {wpc}",
                f"       timelines: " + (f"up to {hw.timeline_entries} entries (a field of a "
                                         f"channel each)" if hw.timeline_entries else "none"),
                f"       terminals: " + _terminal_limits(hw.channel_params("return")),
                f"       impairments: " + _impairments(hw.params)]


def _impairments(p) -> str:
    """The impairments a board's channels have besides loss, queue, rate and delay (its build
    options, satemu.base.params.ChannelParams), and those it leaves out."""
    built = {"jitter (in order)": p.jitter, "corruption (FCS recomputed)": p.corrupt,
             "duplication": p.duplicate, "ECN marking (step)": p.ecn}
    have = [name for name, on in built.items() if on]
    out = [name for name, on in built.items() if not on]
    return ((", ".join(have) if have else "none beyond loss, queue, rate and delay")
            + (f"; left out of this build: {', '.join(out)}" if out else ""))


def _terminal_limits(p) -> str:
    """What a board's return channel tells apart (HELLO's terminals, synthetic, demand_levels)."""
    if not p.terminals:
        return "none (this build tells no terminals apart)"
    return (f"{p.terminals} with frames (by MAC or VLAN), {p.synthetic} synthetic, "
            f"{p.demand_levels} demand levels")


def cmd_show(args) -> int:
    hw, board = show_hardware(args)
    p = load_profile(args.profile)
    if args.plot:
        if p.timeline is None:
            raise UsageError(f"--plot draws a profile's timeline: {p.name} has none")
        output_file(Path(args.plot), "--plot")
    regs = p.check(hw)
    print(f"{p.name}: {p.description}" if p.description else p.name)
    if p.source:
        print(f"  source: {p.source}")
    for line in board:
        print(f"  {line}")
    for name, ch in p.channels():
        r = regs[name]
        per_byte = Fraction(r.rate_q) + Fraction(r.rate_num, r.rate_den)
        print(f"  {name:<8} {ch.describe(hw, name)}")
        frac = f" + {r.rate_num}/{r.rate_den}" if r.rate_num else ""
        shaping = f"{r.rate_q}{frac} cycles per byte" if per_byte else "not shaped"
        if r.bod:
            shaping = "BoD grants"
        jitter = (f", jitter scale {r.jit_sigma} cycles, correlation {r.jit_corr}/65536"
                  if r.jit_sigma else "")
        print(f"           at {hw.f_clk / 1e6:g} MHz: {shaping}, delay {r.delay} cycles "
              f"({format_time(Fraction(max(r.delay, hw.params.latency_floor), hw.f_clk))} "
              f"departure to egress){jitter}")
        if r.bod:
            print(f"           {r.bod_slots} slots of {r.bod_slot_cycles} cycles; CRA {r.bod_cra}, "
                  f"RBDC max {r.bod_rbdc_max} (slots/superframe x {BOD_RATE_ONE}), "
                  f"VBDC max {r.bod_vbdc_max} slots")
        need = ch.budget_words(hw, name)
        print(f"           delay line: at most {format_size(need * 8)} of "
              f"{format_size(hw.mem_words * 8)} ({100 * need / hw.mem_words:.1f}%)")
        wpc = ch.traffic_wpc(hw, name)
        have = (f" of {hw.wpc(name)} guaranteed ({100 * wpc / hw.wpc(name):.1f}%)"
                if hw.wpc(name)
                else " (not limited)")
        print(f"           delay-line throughput: up to {wpc} words per 65536 cycles{have}")
    if p.terminals is not None:
        for line in p.terminals.describe(p.ret, hw):
            print(f"  {line}")
    if p.timeline is not None:
        _show_timeline(p, hw, args)
    return 0


def _show_timeline(p, hw: Hardware, args) -> None:
    """``satemu show``'s timeline: every step checked against the board, then listed (and
    plotted with ``--plot``)."""
    from satemu.link.timeline import compile_timeline
    c = compile_timeline(p, hw)
    t = p.timeline
    repeat = f", repeating every {format_time(t.repeat)}" if t.repeat else ", once"
    print(f"  timeline: {len(c.steps)} steps, {len(c.entries)} of the board's "
          f"{hw.timeline_entries} entries{repeat}")
    for source in t.sources:
        print(f"    trace {source}")
    lines = t.describe()
    shown = lines if args.steps is None else lines[:args.steps]
    for line in shown:
        print(f"    {line}")
    if len(shown) < len(lines):
        print(f"    ... {len(lines) - len(shown)} more steps (--steps N shows more)")
    if args.plot:
        from satemu.report.timeline_plot import plot_timeline
        plot_timeline(p, c, hw.f_clk, Path(args.plot))
        print(f"  plot: {args.plot}")
