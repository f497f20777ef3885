# SPDX-License-Identifier: BSD-2-Clause
"""A run on a box over its UART: the link loaded (with its timeline and terminal table) before
it, and the box's counters, each terminal's and the return channel's BoD records read after it.
The board engine (sim/engine.py) and a real-time scenario with ``--port``
(satemu.quic.realtime.scenario) both run this way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from satemu.base import protocol as P
from satemu.quic.cosim import bod_dict
from satemu.box.control import terminal_rows

__all__ = ["TIMELINE_LEAD", "LinkLoaded", "load_link", "read_counters", "read_bod"]

# A timeline starts 1/TIMELINE_LEAD s of box time after it is armed: time enough for the
# answers to START and COMMIT over the (simulated) UART.
TIMELINE_LEAD = 20


@dataclass
class LinkLoaded:
    """A link in force on a box: its clock, the registers per direction, the timeline as
    satemu.link.timeline.timeline_dict says it (None without one) and its steps on the return
    channel that may change the superframes (``commits``)."""
    f_clk: int
    regs: dict
    timeline: Optional[dict] = None
    commits: tuple = ()


def load_link(dev, link, max_seconds: float,
              before: Callable[[], None] = lambda: None) -> LinkLoaded:
    """Check ``link`` against the box ``dev`` (a satemu.box.device.Device), call ``before``
    (the board engine cleans the board there), load it reseeded with its timeline armed a
    moment later (stopping one that runs), and clear the counters. The timeline's commits
    cover as many laps as ``max_seconds`` of box time hold."""
    info = dev.hello()
    hw = dev.hardware()
    regs = link.check(hw)
    compiled = None
    if link.timeline is not None:
        from satemu.link.timeline import compile_timeline
        compiled = compile_timeline(link, hw, regs)
    before()
    dev.load(link, reseed=True, stop_timeline=True, regs=regs, timeline=compiled,
             lead=info["f_clk"] // TIMELINE_LEAD)
    loaded = LinkLoaded(info["f_clk"], regs)
    if compiled is not None:
        from satemu.link.timeline import timeline_dict
        start = dev.timeline_start
        loaded.timeline = timeline_dict(link, compiled, start, info["f_clk"])
        loaded.commits = tuple(compiled.commits(
            start, "return", compiled.laps_within(round(max_seconds * info["f_clk"]))))
    dev.reset_stats()
    return loaded


def read_counters(dev, regs: dict) -> tuple[dict, Optional[dict]]:
    """Both channels' counters by direction, and with a terminal table each terminal's
    (satemu.box.control.terminal_rows, by direction), else None."""
    stats = {"forward": dev.get_stats(P.CHANNEL_FORWARD),
             "return": dev.get_stats(P.CHANNEL_RETURN)}
    terminals = None
    if regs["return"].term_match:
        terminals = {name: terminal_rows(dev, ch, regs[name].term_framed)
                     for ch, name in ((P.CHANNEL_FORWARD, "forward"), (P.CHANNEL_RETURN, "return"))}
    return stats, terminals


def read_bod(dev, regs, origin: int, commits=()) -> Optional[dict]:
    """The BoD ring of the return channel after a run that began at box cycle ``origin``
    (satemu.quic.cosim.bod_dict; None when it is not BoD-served), whose registers as loaded,
    before any step, are ``regs``; ``commits``: a timeline's steps on the return channel,
    which may change its superframes."""
    if not regs.bod:
        return None
    trace = dev.bod_trace()         # a record a terminal a superframe, as the profile says
    return bod_dict(trace.start, origin, regs, trace.records, trace.lost, commits)
