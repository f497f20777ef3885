# SPDX-License-Identifier: BSD-2-Clause
"""What the command line and the lab console (``satemu.serve``) both do to a box: load a profile
with its timeline, and read one snapshot of everything a box counts."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

from satemu.base.params import TERMINAL_COUNTERS
from satemu.base.protocol import (CHANNEL_NAMES, TIMELINE_AHEAD_MAX_S, Capability, Status,
    TimelineFault, TimelineRun)
from satemu.base.units import format_time
from satemu.box.device import Device, DeviceError


@dataclass
class LoadReport:
    """A load that took effect: the profile's name, each channel's summary, and its timeline's
    steps, entries, start cycle and period (cycles; 0: once), where it has one."""
    name: str
    channels: dict[str, str]
    steps: int = 0
    entries: int = 0
    entries_max: int = 0
    start: int | None = None
    period: int = 0
    f_clk: int = 0

    def lines(self, url: str) -> list[str]:
        """The load in words, as ``satemu load`` prints it."""
        out = [f"loaded {self.name} into {url}: the whole profile is in force on both channels"
               f"{' with its timeline' if self.start is not None else ''}"]
        out += [f"  {name:<8} {text}" for name, text in self.channels.items()]
        if self.start is not None:
            repeat = (f", repeating every {format_time(Fraction(self.period, self.f_clk))}"
                      if self.period else ", once")
            out.append(f"timeline: {self.steps} steps ({self.entries} entries of the box's "
                       f"{self.entries_max}), from cycle {self.start}{repeat}")
        return out


def load_into(dev: Device, p, reseed: bool = False, start_in: float = 1.0,
              start_cycle: int | None = None, start_name: str = "start_cycle") -> LoadReport:
    """Load profile ``p`` (``satemu.link.profile.Profile``) into the box on ``dev`` and commit
    it: checked against the box's hardware (HELLO) first, every timeline step too, then staged
    and applied by one commit, which also starts its timeline ``start_in`` seconds of box time
    later (or at cycle ``start_cycle``, which an error calls ``start_name``). A timeline running
    stops. A load cut short leaves the old profile in force; nothing is half-applied
    (``Device.load``)."""
    from satemu.link.timeline import compile_timeline
    info = dev.hello()
    hw = dev.hardware()
    regs = p.check(hw)
    compiled = None
    if p.timeline is not None:
        compiled = compile_timeline(p, hw, regs)        # every step checked first
        if start_cycle is not None:                     # ... and the start, as the box will
            ahead = start_cycle - dev.now()
            if ahead > TIMELINE_AHEAD_MAX_S * info["f_clk"]:
                raise DeviceError(f"{start_name} {start_cycle}: "
                                  f"{format_time(Fraction(ahead, info['f_clk']))} of box time "
                                  f"ahead, more than the box takes ({TIMELINE_AHEAD_MAX_S} s); "
                                  f"nothing was loaded")
    f_clk = info["f_clk"]
    dev.load(p, reseed=reseed, stop_timeline=True, regs=regs, timeline=compiled,
             start=start_cycle, lead=round(Fraction(start_in) * f_clk))
    report = LoadReport(p.name, {name: ch.describe() for name, ch in p.channels()}, f_clk=f_clk)
    if compiled is not None:
        report.steps, report.entries = len(compiled.steps), len(compiled.entries)
        report.entries_max, report.start = hw.timeline_entries, dev.timeline_start
        report.period = compiled.period
    return report


def timeline_words(t: dict, f_clk: int) -> str:
    """TIMELINE_STATUS in words: the run's state and the step in force."""
    state = TimelineRun(t["state"]).name.lower()
    if t["state"] == TimelineRun.IDLE and not t["applied"]:
        return "timeline: none running"
    since = (f", the last since cycle {t['in_force_cycle']} "
             f"({t['in_force_cycle'] / f_clk:.3f} s)" if t["applied"] else "")
    late = f", {t['late']} late" if t["late"] else ", none late"
    lap = f" (lap {t['lap'] + 1})" if t["period"] else ""
    out = (f"timeline: {state}, {t['applied']} steps taken{lap}{since}{late}; next entry "
           f"{t['next']} of {t['entries']}")
    if t["state"] == TimelineRun.FAILED:
        verdict = Status(t["verdict"]).name if t["verdict"] in Status._value2member_map_ else ""
        out += (f"; stopped at entry {t['fault_entry']}: {TimelineFault(t['fault']).name}"
                + (f" ({verdict})" if t["fault"] == TimelineFault.PROFILE else ""))
    return out


def terminal_rows(dev: Device, channel: int, framed: int) -> dict[str, dict[str, int]]:
    """Channel ``channel``'s counters for each of its ``framed`` terminals (TERMINAL_STATS), by
    the terminal's index as text, and "none" for the frames of no terminal."""
    return {("none" if who is None else str(who)): dev.terminal_stats(channel, who)
            for who in [*range(framed), None]}


def terminal_counters(dev: Device, profiles: list[dict] | None = None
                      ) -> dict[str, dict[str, dict[str, int]]]:
    """Each terminal's counters (TERMINAL_STATS) on each channel with a terminal table in force,
    by channel name and then terminal index as text ("0", "1", ...; "none": the frames of no
    terminal); channels without a table are left out. ``profiles``: each channel's profile in
    force (GET_PROFILE) as read already, else read here."""
    out = {}
    for ch, name in enumerate(CHANNEL_NAMES):
        framed = (profiles[ch] if profiles else dev.get_profile(ch))["term_framed"]
        if framed:
            out[name] = terminal_rows(dev, ch, framed)
    return out


def snapshot(dev: Device, info: dict | None = None, terminals: bool = True,
             profiles: list[dict] | None = None) -> dict:
    """One reading of everything the box counts: each channel's counters and gauges
    (GET_STATS), with ``terminals`` each terminal's where a table is in force (``profiles``:
    the channels' profiles in force, as ``terminal_counters`` takes them), the timeline's run
    (TIMELINE_STATUS, and the same in words) where the box has timelines, and the cycle and the
    host's clock when it was read."""
    info = info or dev.hello()
    channels = {name: dev.get_stats(ch) for ch, name in enumerate(CHANNEL_NAMES)}
    out = {"cycle": max(s["snapshot_cycle"] for s in channels.values()),
           "f_clk": info["f_clk"], "host_time": time.time(), "channels": channels}
    if terminals and info["capabilities"] & Capability.TERMINALS:
        out["terminals"] = terminal_counters(dev, profiles)
    if info["capabilities"] & Capability.TIMELINE:
        t = dev.timeline_status()
        out["timeline"] = {**t, "state_name": TimelineRun(t["state"]).name.lower(),
                           "words": timeline_words(t, info["f_clk"])}
    return out


__all__ = ["LoadReport", "load_into", "snapshot", "terminal_counters", "terminal_rows",
           "timeline_words", "TERMINAL_COUNTERS"]
