# SPDX-License-Identifier: BSD-2-Clause
"""What the command line and the lab console (``satemu.serve``) both do to a box: load a profile
with its timeline, read one snapshot of everything a box counts, and read its BoD records as
rows."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

from satemu.base.params import TERMINAL_COUNTERS
from satemu.base.protocol import (CHANNEL_NAMES, CHANNEL_RETURN, TIMELINE_AHEAD_MAX_S,
    Capability, Status, TimelineFault, TimelineRun)
from satemu.base.regmap import BOD_ENABLE
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


class NoBod(DeviceError):
    """A box without BoD hardware, or with BoD off on its return channel (one line)."""


@dataclass
class BodReading:
    """The return channel's BoD records read from a box (``read_bod``), as CSV rows
    (satemu.box.bod_trace.COLUMNS), with what a reader should know of them."""
    rows: list[dict]
    trace: object               # satemu.box.device.BodTrace
    superframe: Fraction        # seconds, the shape in force now
    f_clk: int
    first: int                  # the superframe asked for first
    shaped: bool                # each superframe took its shape from the profile's timeline
    timeline_ran: bool          # a timeline ran on the box

    def lines(self) -> list[str]:
        """What was read, in words, as ``satemu bod-trace`` prints it."""
        t = self.trace
        out = []
        if not self.shaped and self.timeline_ran:
            out.append("note: a timeline ran; if its steps changed the superframe or the slot "
                       "bytes, give the profile loaded with it, or the rows take the shape in "
                       "force now for every superframe")
        if t.records:
            out.append(f"read superframes {t.records[0].sf} .. {t.records[-1].sf} of {t.count} "
                       f"recorded (a superframe is {format_time(self.superframe)})"
                       + (f", a record each for {t.terminals} terminals"
                          if t.terminals > 1 else ""))
        else:
            out.append(f"no records from superframe {self.first} on; {t.count} recorded so far")
        out.append(f"  superframe 0 began at cycle {t.start} "
                   f"({t.start / self.f_clk:.3f} s of box time)")
        if t.lost:
            what = ("records (superframe x terminals + terminal)" if t.terminals > 1
                    else "superframes")
            out.append(f"  {t.lost_count} {what} were overwritten in the box's ring before "
                       f"they were read: " + ", ".join(f"{a} .. {b - 1}" for a, b in t.lost))
        return out


def read_bod(dev: Device, first: int = 0, link=None) -> BodReading:
    """The return channel's BoD records from superframe ``first`` on, as rows. ``link``: the
    profile loaded (a ``satemu.link.profile.Profile``), whose timeline's BoD steps give each
    superframe its length and slot bytes; without it each takes the shape in force now.
    NoBod (one line) for a box without BoD, or with BoD off; ValueError for a ``link``
    whose return channel has none."""
    from satemu.box.bod_trace import records_to_rows
    info = dev.info or dev.hello()
    if not info["capabilities"] & Capability.BOD:
        raise NoBod(f"{dev.url} has no Bandwidth-on-Demand hardware")
    prof = dev.get_profile(CHANNEL_RETURN)
    if not prof["bod_flags"] & BOD_ENABLE:
        raise NoBod("BoD is off on the return channel: load a profile with a "
                          "[return.bod] table first (e.g. satemu load geo-testbed-bod)")
    # a record a terminal a superframe where the profile in force declares terminals
    trace = dev.bod_trace(first=first)
    timeline = dev.timeline_status() if info["capabilities"] & Capability.TIMELINE else None
    segments = None
    if link is not None:
        segments = bod_segments(link, dev.hardware(), trace, timeline)
    superframe_cycles = prof["bod_slots"] * prof["bod_slot_cycles"]
    rows = records_to_rows(trace.records, trace.start, superframe_cycles, info["f_clk"],
                           prof["bod_slot_bytes"], segments)
    return BodReading(rows, trace, Fraction(superframe_cycles, info["f_clk"]), info["f_clk"],
                      first, segments is not None, bool(timeline and timeline["applied"]))


def bod_segments(link, hw, trace, timeline):
    """The superframes' shapes (satemu.box.bod_trace.superframe_segments) from profile ``link``
    as loaded, and its timeline's steps when one ran since the block started."""
    from satemu.box.bod_trace import superframe_segments
    regs = link.check(hw)["return"]
    if not regs.bod:
        raise ValueError(f"{link.name}: its return channel has no BoD")
    commits = ()
    if link.timeline is not None and timeline and timeline["start"] >= trace.start:
        from satemu.link.timeline import compile_timeline
        commits = compile_timeline(link, hw).commits(timeline["start"], "return",
                                                     timeline["lap"] + 1)
    return superframe_segments(regs, trace.start, commits, trace.records)


__all__ = ["BodReading", "LoadReport", "NoBod", "bod_segments", "load_into", "read_bod", "snapshot", "terminal_counters", "terminal_rows",
           "timeline_words", "TERMINAL_COUNTERS"]
