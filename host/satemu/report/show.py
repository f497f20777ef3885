# SPDX-License-Identifier: BSD-2-Clause
"""A profile and what it means for a board's hardware, in words: the text of ``satemu show``,
which the lab console (``satemu.serve``) serves too."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from satemu.base.boards import BOARDS
from satemu.base.hardware import Hardware
from satemu.base.protocol import CHANNEL_NAMES
from satemu.base.regmap import BOD_RATE_ONE
from satemu.base.units import format_rate, format_size, format_time

# The hardware facts ``show_hardware`` takes over a board's: (key, the command line's option).
SHOW_OVERRIDES = (("f_clk", "--f-clk"), ("mem_words", "--mem-words"), ("mem_wpc", "--mem-wpc"))


def show_hardware(board_name: str, given: dict | None = None) -> tuple[Hardware, list[str]]:
    """Board ``board_name``'s hardware, with the facts ``given`` (SHOW_OVERRIDES' keys) over
    it; and the lines that say so."""
    board = BOARDS[board_name]
    given = {k: v for k, v in (given or {}).items() if v is not None}
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
    return hw, [f"board: {board_name} ({board.title}), {hw.f_clk / 1e6:g} MHz, ports at "
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


def show_lines(p, hw: Hardware, board: list[str], steps: int | None = 40) -> list[str]:
    """Profile ``p`` (checked against ``hw`` here: ProfileError if it does not fit) in words:
    its channels as the registers of ``hw`` hold them, their delay-line budgets, its terminals
    and its timeline (the first ``steps`` steps; None: all), after the ``board`` lines
    (``show_hardware``'s)."""
    regs = p.check(hw)
    out = [f"{p.name}: {p.description}" if p.description else p.name]
    if p.source:
        out.append(f"  source: {p.source}")
    out += [f"  {line}" for line in board]
    for name, ch in p.channels():
        r = regs[name]
        per_byte = Fraction(r.rate_q) + Fraction(r.rate_num, r.rate_den)
        out.append(f"  {name:<8} {ch.describe(hw, name)}")
        frac = f" + {r.rate_num}/{r.rate_den}" if r.rate_num else ""
        shaping = f"{r.rate_q}{frac} cycles per byte" if per_byte else "not shaped"
        if r.bod:
            shaping = "BoD grants"
        jitter = (f", jitter scale {r.jit_sigma} cycles, correlation {r.jit_corr}/65536"
                  if r.jit_sigma else "")
        out.append(f"           at {hw.f_clk / 1e6:g} MHz: {shaping}, delay {r.delay} cycles "
                   f"({format_time(Fraction(max(r.delay, hw.params.latency_floor), hw.f_clk))} "
                   f"departure to egress){jitter}")
        if r.bod:
            out.append(f"           {r.bod_slots} slots of {r.bod_slot_cycles} cycles; CRA "
                       f"{r.bod_cra}, RBDC max {r.bod_rbdc_max} (slots/superframe x "
                       f"{BOD_RATE_ONE}), VBDC max {r.bod_vbdc_max} slots")
        need = ch.budget_words(hw, name)
        out.append(f"           delay line: at most {format_size(need * 8)} of "
                   f"{format_size(hw.mem_words * 8)} ({100 * need / hw.mem_words:.1f}%)")
        wpc = ch.traffic_wpc(hw, name)
        have = (f" of {hw.wpc(name)} guaranteed ({100 * wpc / hw.wpc(name):.1f}%)"
                if hw.wpc(name)
                else " (not limited)")
        out.append(f"           delay-line throughput: up to {wpc} words per 65536 cycles{have}")
    if p.terminals is not None:
        out += [f"  {line}" for line in p.terminals.describe(p.ret, hw)]
    if p.timeline is not None:
        out += timeline_lines(p, hw, steps)
    return out


def timeline_lines(p, hw: Hardware, steps: int | None = 40) -> list[str]:
    """``satemu show``'s timeline: every step checked against the board, then listed (the first
    ``steps``; None: all)."""
    from satemu.link.timeline import compile_timeline
    c = compile_timeline(p, hw)
    t = p.timeline
    repeat = f", repeating every {format_time(t.repeat)}" if t.repeat else ", once"
    out = [f"  timeline: {len(c.steps)} steps, {len(c.entries)} of the board's "
           f"{hw.timeline_entries} entries{repeat}"]
    out += [f"    trace {source}" for source in t.sources]
    lines = t.describe()
    shown = lines if steps is None else lines[:steps]
    out += [f"    {line}" for line in shown]
    if len(shown) < len(lines):
        out.append(f"    ... {len(lines) - len(shown)} more steps (--steps N shows more)")
    return out
