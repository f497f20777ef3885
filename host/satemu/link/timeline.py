# SPDX-License-Identifier: BSD-2-Clause
"""Timelines: a profile's link changing over time, as steps the box applies at exact cycles.

A profile's ``[[timeline]]`` list holds steps; each has a time ``at`` from the timeline's start and
the settings it changes on either channel, in a ``forward`` or ``return`` table with the keys of a
channel (``rate``, ``delay``, ``queue``, ``loss``, ``gilbert_elliott``, ``overhead``, ``min_len``,
``max_len``, ``jitter``, ``jitter_correlation``, ``corrupt``, ``corrupt_correlation``,
``duplicate``, ``duplicate_correlation``, ``ecn_step``). A step changes only what it names;
everything else stays as the steps before it left it. ``timeline_repeat`` (a time above the last
step's) repeats the whole list. A channel may also take its steps from a trace file (``trace``, with
``trace_resolution`` for a
Mahimahi trace; satemu.link.traces), which then also sets the period. A trace's rate of 0 (no
delivery) is an outage: every frame lost, the rate left as it was. It lies over the channel's
loss settings rather than replacing them: the step that ends it puts back the loss in force
before it (the profile's, a step's or the trace's own), and a loss set during it applies from
its end.

The box holds a timeline as entries (satemu.base.protocol's TIMELINE_*): each sets one register of
one channel at a cycle offset from the start, and the entries of one offset form one step. The
firmware stages each step on the profile in force and commits it named for its cycle
(COMMIT_AT), so that it applies to every frame that arrives after that cycle, and to none
before: the same rule as every commit (docs/architecture.md, "Timelines"). A step's time is
made whole cycles by rounding to the nearest cycle.

A timeline has at most ``MAX_STEPS`` steps (the largest store a board has: a step sets one entry
or more) and its times are at most ``MAX_TIME`` (its cycles, and a start below 2^63, fit the
box's 64-bit cycle counts at any board's clock); both are refused as the profile is read (a
trace as soon as its reading passes MAX_STEPS), so ``load`` refuses them before it opens the
port.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from satemu.base.boards import BOARDS
from satemu.model.channel import Commit
from satemu.base.params import ChannelRegs
from satemu.link.channel import (IMPAIRMENT_KEYS, check_meaning, explain,
    parse_ecn_step, parse_gilbert_elliott, parse_queues)
from satemu.link.tables import ProfileError, Table, toml_key
from satemu.base.protocol import CHANNEL_NAMES, PROFILE_FIELDS, Status, TIMELINE_VALUE_BITS
from satemu.base.regmap import LAYOUT_FIELDS
from satemu.base.units import (UnitError, format_rate, format_size, format_time, parse_probability,
                               parse_rate, parse_time)
from satemu.link.traces import MAX_STEPS
from satemu.base.hardware import Hardware
from satemu.base.validate import profile_fields, validate

__all__ = ["Step", "Timeline", "CompiledStep", "CompiledTimeline", "STEP_KEYS", "parse_timeline",
           "compile_timeline", "timeline_dict", "MAX_STEPS", "MAX_CYCLES", "MAX_TIME"]

STEP_KEYS = {"rate", "delay", "queue", "loss", "gilbert_elliott", "overhead", "min_len",
             "max_len", "bod", "jitter", "jitter_correlation", "corrupt", "corrupt_correlation",
             "duplicate", "duplicate_correlation", "ecn_step"}
# The BoD settings a step may change; they apply from the block's first superframe after the
# step. The others (latency, fca, background_repeat) restart the block, which takes an empty
# delay line (regmap.LAYOUT_FIELDS).
BOD_STEP_KEYS = {"superframe", "slots", "slot_bytes", "cra", "rbdc_max", "rbdc_timeout",
                 "vbdc_max", "request_period", "background"}
BOD_FIXED_KEYS = {"latency", "fca", "background_repeat"}
FIELD_INDEX = {f.name: i for i, f in enumerate(PROFILE_FIELDS)}
# A timeline's cycles: TIMELINE_ENTRY's offsets and TIMELINE_START's start and period are 64-bit,
# and the firmware adds them (start + lap x period + offset) in 64 bits. A start the command
# line allows is below 2^63 (--start-cycle; --start-in adds at most a day to the box's cycle),
# so offsets and periods of at most 2^63 - 1 keep start + offset and start + period in 64 bits.
MAX_CYCLES = (1 << 63) - 1
# A profile is read before its board is known: its times are bounded at the fastest board's
# clock, where MAX_CYCLES is the least time (some 5,300 years); compile_timeline checks the
# cycles again at the box's own clock.
F_CLK_MAX = max(board.f_clk for board in BOARDS.values())
MAX_TIME = Fraction(MAX_CYCLES, F_CLK_MAX)


@dataclass(frozen=True)
class Step:
    """One step: its time from the start (seconds), what it changes on each channel (a channel
    name → the ChannelProfile fields it sets, in physical units), and where it was written, for
    messages."""

    at: Fraction
    changes: dict
    where: str


@dataclass(frozen=True)
class Timeline:
    steps: tuple[Step, ...]
    repeat: Fraction | None = None       # seconds; None: once
    sources: tuple[str, ...] = ()        # each trace's description

    def describe(self) -> list[str]:
        """The steps, a line each."""
        lines = []
        for s in self.steps:
            parts = [f"{name} {_describe_changes(c)}" for name, c in s.changes.items()]
            at = format_time(s.at) if s.at else "0 s"
            lines.append(f"{at:>10}  " + "; ".join(parts))
        return lines


@dataclass(frozen=True)
class CompiledStep:
    at: Fraction                         # seconds from the start, as written
    offset: int                          # cycles from the start
    where: str
    regs: dict                           # channel name → ChannelRegs in force from this step on
    profiles: dict                       # channel name → ChannelProfile in force from it on


@dataclass(frozen=True)
class CompiledTimeline:
    """A timeline at a box's clock: its steps with their registers, the entries the box stores
    (offset, channel, field index, value), the period in cycles (0: once), the clock, and the
    most steps ``cycles`` lays out (the entries of the box's store)."""

    steps: tuple[CompiledStep, ...]
    entries: tuple[tuple[int, int, int, int], ...]
    period: int
    f_clk: int = F_CLK_MAX
    most: int = MAX_STEPS

    def cycles(self, start: int, laps: int = 1) -> list[tuple[int, CompiledStep]]:
        """(cycle, step) of every step of the first ``laps`` laps from cycle ``start``: at most
        ``most`` of them, as many as the box's store holds entries. More (a short repeat over a
        long run) raises ProfileError, counted before any is laid out."""
        laps = max(laps, 1) if self.period else 1
        count = laps * len(self.steps)
        if count > self.most:
            raise ProfileError(
                f"timeline_repeat: {laps:,} laps of {len(self.steps):,} steps every "
                f"{format_time(Fraction(self.period, self.f_clk))} are {count:,} steps, more "
                f"than the {self.most:,} the model lays out (the entries of the box's timeline "
                f"store); a longer repeat or a shorter run fits")
        return [(start + lap * self.period + s.offset, s) for lap in range(laps)
                for s in self.steps]

    def laps_within(self, cycles: int) -> int:
        """The laps that may begin within ``cycles`` of the start (1 without a repeat)."""
        return 1 + (cycles // self.period if self.period else 0)

    def commits(self, start: int, channel: str, laps: int = 1) -> list[Commit]:
        """The model's commits (satemu.model.channel) of channel ``channel`` for a run started
        at cycle ``start``: every step, as the box commits it (both channels at each step)."""
        return [Commit(cycle, s.regs[channel]) for cycle, s in self.cycles(start, laps)]

    def step_in_force(self, applied: int) -> CompiledStep | None:
        """The step in force after ``applied`` steps took effect (TIMELINE_STATUS)."""
        if not applied:
            return None
        return self.steps[(applied - 1) % len(self.steps)]


def _describe_changes(c: dict) -> str:
    out = []
    for key, v in c.items():
        if key == "rate":
            out.append(f"rate {format_rate(v)}")
        elif key in ("delay", "jitter"):
            out.append(f"{key} {format_time(v)}")
        elif key in ("loss", "jitter_correlation", "corrupt", "corrupt_correlation", "duplicate",
                     "duplicate_correlation"):
            out.append(f"{key.replace('_', ' ')} {float(v) * 100:g}%")
        elif key == "queue":
            frames, nbytes = v
            q = [f"{frames} packets"] if frames else []
            q += [format_size(nbytes)] if nbytes else []
            out.append("queue " + " or ".join(q))
        elif key == "gilbert_elliott":
            out.append("Gilbert-Elliott " + "/".join(f"{float(x):g}" for x in v))
        elif key == "ecn_step":
            steps = ([format_time(v["ecn_sojourn"])] if v["ecn_sojourn"] else []) + (
                [f"{v['ecn_queue']} packets"] if v["ecn_queue"] else [])
            out.append("ECN step " + (" or ".join(steps) or "off"))
        elif key == "bod":
            out += [f"BoD {_describe_bod(k, x)}" for k, x in v.items()]
        elif key == "outage":
            out.append("outage (100% loss)" if v else "outage ends")
        else:
            out.append(f"{key} {v}")
    return ", ".join(out)


def _describe_bod(key: str, v) -> str:
    if key == "superframe":
        return f"superframe {format_time(v)}"
    if key in ("cra", "rbdc_max"):
        return f"{key} {format_rate(v or 0)}"
    if key == "vbdc_max":
        return f"vbdc_max {format_size(v or 0)}"
    if key == "background":
        return f"background {float(v[0][0]) * 100:g}%"
    return f"{key} {v}"


def _changes(path: str, table) -> dict:
    """A step's changes to one channel, parsed: the keys of STEP_KEYS in physical units."""
    t = Table(path, table, STEP_KEYS, "a channel's settings a step may change")
    out = {}
    if "rate" in table:
        out["rate"] = t.get("rate", parse_rate, None)
    if "delay" in table:
        out["delay"] = t.get("delay", parse_time, None)
    # Jitter's scale and correlation (its distribution is the profile's: the box's table), and
    # corruption's and duplication's shares and correlations.
    out.update({key: t.get(key, parse, None) for key, parse in IMPAIRMENT_KEYS if key in table})
    if "queue" in table:
        out["queue"] = parse_queues(path, table["queue"])
    if "ecn_step" in table:
        out["ecn_step"] = parse_ecn_step(path, table["ecn_step"])
    if "loss" in table and "gilbert_elliott" in table:
        raise ProfileError(f"{path}.loss: give either loss or gilbert_elliott, not both")
    if "loss" in table:
        out["loss"] = t.get("loss", parse_probability, None)
    if "gilbert_elliott" in table:
        out["gilbert_elliott"] = parse_gilbert_elliott(path, table["gilbert_elliott"], False)
    if "overhead" in table:
        out["overhead"] = t.bytes("overhead", 0)
    for key in ("min_len", "max_len"):
        if key in table:
            out[key] = t.whole(key, None)
    if "bod" in table:
        out["bod"] = _bod_changes(f"{path}.bod", table["bod"])
    return out


def _bod_changes(path: str, table) -> dict:
    """A step's changes to a channel's BoD settings, as ``BodProfile`` fields."""
    if isinstance(table, dict):
        fixed = sorted(set(table) & BOD_FIXED_KEYS)
        if fixed:
            raise ProfileError(f"{path}.{fixed[0]}: a step cannot change it; it restarts the "
                                 f"BoD block, which needs an empty delay line (a step may change "
                                 f"{', '.join(sorted(BOD_STEP_KEYS))})")
    t = Table(path, table, BOD_STEP_KEYS, "the BoD settings a step may change")
    if not table:
        raise ProfileError(f"{path}: changes nothing")
    out = {}
    if "superframe" in table:
        out["superframe"] = t.get("superframe", parse_time, None)
    for key in ("slots", "rbdc_timeout", "request_period"):
        if key in table:
            out[key] = t.whole(key, None)
    if "slot_bytes" in table:
        out["slot_bytes"] = t.bytes("slot_bytes", None, bare=True)
    if "cra" in table:
        out["cra"] = t.get("cra", parse_rate, None)
    if "rbdc_max" in table:
        out["rbdc_max"] = t.get("rbdc_max", parse_rate, None) or None
    if "vbdc_max" in table:
        out["vbdc_max"] = t.bytes("vbdc_max", None) or None
    if "background" in table:
        if isinstance(table["background"], list):
            raise ProfileError(f"{path}.background: a step sets a constant share of the slots; "
                                 f"a schedule of levels is the profile's")
        out["background"] = ((t.get("background", parse_probability, None), None),)
    return out


def apply_changes(ch, changes: dict):
    """ChannelProfile ``ch`` with a step's ``changes`` made, but for an outage's start or end
    (``outage``), which lies over the loss (``in_outage``)."""
    fields = {}
    for key, v in changes.items():
        if key == "outage":
            continue
        if key == "queue":
            fields["queue_frames"], fields["queue_bytes"] = v
        elif key == "loss":
            fields["loss"], fields["gilbert_elliott"] = v, None
        elif key == "gilbert_elliott":
            fields["loss"], fields["gilbert_elliott"] = Fraction(0), v
        elif key == "bod":
            fields["bod"] = replace(ch.bod, **v)
        elif key == "ecn_step":
            fields.update(v)
        else:
            fields[key] = v
    return replace(ch, **fields)


def _time(path: str, value) -> Fraction:
    try:
        return parse_time(value)
    except UnitError as e:
        raise ProfileError(f"{path}: {e}") from None


def _check_time(path: str, at: Fraction, what: str = "") -> Fraction:
    """``at`` if a timeline may hold it (at most ``MAX_TIME``); else ProfileError naming
    ``path``."""
    if at > MAX_TIME:
        raise ProfileError(
            f"{path}: {what}{format_time(at)} is outside the allowed range 0 s .. "
            f"{int(MAX_TIME)} s (2^63 - 1 cycles at {F_CLK_MAX / 1e6:g} MHz, the fastest "
            f"board's clock: a timeline's cycles from its start fit the box's 64-bit counts)")
    return at


def parse_timeline(doc: dict, base_dir: Path | None) -> Timeline | None:
    """The timeline of a profile's TOML ``doc`` (its ``timeline`` list, ``timeline_repeat`` and
    each channel's ``trace``), or None without one. Trace paths are relative to ``base_dir``."""
    from satemu.link.traces import TraceError, read_trace
    raw = doc.get("timeline")
    repeat = None
    if "timeline_repeat" in doc:
        repeat = _check_time("timeline_repeat", _time("timeline_repeat", doc["timeline_repeat"]))
        if repeat <= 0:
            raise ProfileError("timeline_repeat: must be above 0 s")
    steps = []
    if raw is not None:
        if not isinstance(raw, list):
            raise ProfileError("timeline: expected a list of steps ([[timeline]] tables)")
        if len(raw) > MAX_STEPS:
            raise ProfileError(f"timeline: {len(raw):,} steps; a timeline has at most "
                                 f"{MAX_STEPS:,} (the entries of a box's timeline store, one "
                                 f"or more a step)")
        for i, entry in enumerate(raw):
            path = f"timeline[{i}]"
            if not isinstance(entry, dict):
                raise ProfileError(f"{path}: expected a table with at, and forward or return")
            unknown = set(entry) - {"at", "forward", "return"}
            if unknown:
                raise ProfileError(f"{path}.{toml_key(sorted(unknown)[0])}: unknown setting; a "
                                     f"step has at, forward and return")
            if "at" not in entry:
                raise ProfileError(f"{path}.at: missing; every step has a time")
            at = _check_time(f"{path}.at", _time(f"{path}.at", entry["at"]))
            changes = {name: _changes(f"{path}.{name}", entry[name])
                       for name in CHANNEL_NAMES if name in entry}
            if not any(changes.values()):
                raise ProfileError(f"{path}: changes nothing; give forward or return settings")
            if steps and at <= steps[-1].at:
                raise ProfileError(f"{path}.at: {format_time(at)} is not after the step "
                                     f"before it ({format_time(steps[-1].at)}); steps are in "
                                     f"time order, one per time")
            steps.append(Step(at, changes, f"{path} (at {format_time(at)})"))
    sources = []
    traced = {}
    for name in CHANNEL_NAMES:
        table = doc.get(name)
        if not isinstance(table, dict) or "trace" not in table:
            continue
        file = table["trace"]
        if not isinstance(file, str):
            raise ProfileError(f"{name}.trace: expected a file name")
        resolution = None
        if "trace_resolution" in table:
            resolution = _time(f"{name}.trace_resolution", table["trace_resolution"])
        path = Path(file) if base_dir is None else base_dir / file
        try:
            trace = read_trace(path, resolution=resolution)
        except TraceError as e:
            raise ProfileError(f"{name}.trace: {e}") from None
        _check_time(f"{name}.trace", trace.period, "it repeats every ")
        sources.append(f"{name}: {trace.source}")
        traced[name] = trace
    if traced:
        periods = {t.period for t in traced.values()}
        if len(periods) > 1:
            raise ProfileError("forward.trace: the two traces repeat with different periods; "
                                 "give traces of one length")
        period = periods.pop()
        if repeat is not None and repeat != period:
            raise ProfileError(f"timeline_repeat: {format_time(repeat)}, but the trace "
                                 f"repeats every {format_time(period)}")
        repeat = period
        steps = _merge(steps, traced)
        if len(steps) > MAX_STEPS:
            raise ProfileError(f"timeline: the traces and the steps listed make {len(steps):,} "
                                 f"steps; a timeline has at most {MAX_STEPS:,} (the entries of "
                                 f"a box's timeline store, one or more a step)")
    if not steps:
        if repeat is not None:
            raise ProfileError("timeline_repeat: there is no timeline to repeat")
        return None
    if repeat is not None and repeat <= steps[-1].at:
        raise ProfileError(f"timeline_repeat: {format_time(repeat)} is not after the last "
                             f"step ({steps[-1].where})")
    return Timeline(tuple(steps), repeat, tuple(sources))


def in_outage(ch):
    """ChannelProfile ``ch`` in an outage: every frame lost (a loss of 100%, which the loss
    register holds as its largest value), everything else as it was."""
    return replace(ch, loss=Fraction(1), gilbert_elliott=None)


def _trace_changes(trace) -> list[dict]:
    """A trace's steps' changes as steps': a rate of 0 (no delivery) starts an outage
    (``outage`` true; the rate stays as it was) and the next rate above 0 ends it (``outage``
    false), so that the loss settings under it, which the trace's other steps may change, are
    in force again from there."""
    out, down = [], False
    for ts in trace.steps:
        changes = dict(ts.changes)
        if "rate" in changes:
            if changes["rate"] == 0:
                del changes["rate"]
                changes["outage"] = down = True
            elif down:
                changes["outage"] = down = False
        out.append(changes)
    return out


def _merge(steps: list[Step], traced: dict) -> list[Step]:
    """The listed steps and the traces' steps, by time, one step per time."""
    at: dict[Fraction, Step] = {s.at: s for s in steps}
    for name, trace in traced.items():
        for ts, trace_changes in zip(trace.steps, _trace_changes(trace)):
            where = f"{name}.trace at {format_time(ts.at)}"
            old = at.get(ts.at)
            changes = dict(old.changes) if old else {}
            if name in changes:
                raise ProfileError(f"{old.where}: sets the {name} channel at a time its "
                                            f"trace sets it too")
            changes[name] = trace_changes
            at[ts.at] = Step(ts.at, changes, old.where if old else where)
    return [at[t] for t in sorted(at)]


def compile_timeline(profile, hw: Hardware,
                     regs: dict[str, ChannelRegs] | None = None) -> CompiledTimeline:
    """``profile``'s timeline at ``hw``'s clock, every step checked as the box will check it
    (satemu.base.validate): a step whose profile the box would refuse raises ProfileError naming
    the step and the setting, as does a timeline the box cannot hold or time. ``regs``: the
    base profile's registers, if the caller checked it against ``hw`` already."""
    timeline = profile.timeline
    if timeline is None:
        raise ProfileError(f"{profile.name}: has no timeline")
    if not hw.timeline_entries:
        raise ProfileError("this box runs no timelines (its firmware has no timeline store)")
    current = dict(profile.channels())          # each channel's settings in force
    under = dict(current)                       # the same, but for an outage's loss
    down: set[str] = set()                      # the channels in an outage
    regs_now = regs or profile.check(hw)
    entries, compiled = [], []
    last_offset = -1
    mhz = f"{hw.f_clk / 1e6:g} MHz"
    for step in timeline.steps:
        offset = round(step.at * hw.f_clk)
        if offset > MAX_CYCLES:                 # a clock above F_CLK_MAX's: see MAX_CYCLES
            raise ProfileError(f"{step.where}: {offset:,} cycles at {mhz}, above the "
                                 f"{MAX_CYCLES:,} a timeline's offset may be")
        if offset <= last_offset:
            raise ProfileError(f"{step.where}: falls on the same cycle as the step before it "
                                 f"at {hw.f_clk / 1e6:g} MHz")
        last_offset = offset
        regs_step = dict(regs_now)
        for index, name in enumerate(CHANNEL_NAMES):
            if name not in step.changes:
                continue
            changes, old_ch = step.changes[name], current[name]
            if "bod" in changes and old_ch.bod is None:
                raise ProfileError(f"{step.where}: {name}.bod: the {name} channel has no "
                                     f"Bandwidth-on-Demand settings to change")
            if old_ch.bod is not None and "rate" in changes:
                raise ProfileError(f"{step.where}: {name}.rate: a BoD channel is paced by "
                                     f"its grants, not a rate")
            if old_ch.bod is not None and "overhead" in changes:
                raise ProfileError(f"{step.where}: {name}.overhead: a BoD channel's overhead "
                                     f"is fixed while frames wait for their slots")
            if "background" in changes.get("bod", {}) and (
                    len(old_ch.bod.background) > 1 or old_ch.bod.background[0][1] is not None):
                raise ProfileError(f"{step.where}: {name}.bod.background: the profile's "
                                     f"background is a schedule of levels, which a step cannot "
                                     f"replace")
            # A step during an outage changes the settings under it; the outage's end puts
            # them back (a step's whole state is what the trace and the profile say).
            base = apply_changes(under[name], changes)
            if "outage" in changes:
                (down.add if changes["outage"] else down.discard)(name)
            ch = in_outage(base) if name in down else base
            try:
                check_meaning(name, base)
                if ch is not base:
                    check_meaning(name, ch)
            except ProfileError as e:
                raise ProfileError(f"{step.where}: {e}") from None
            regs = ch.registers(hw, name)
            verdict = validate(profile_fields(regs), hw, index)
            if verdict.status != Status.OK:
                raise ProfileError(f"{step.where}: {explain(name, ch, hw, verdict)}")
            old = profile_fields(regs_now[name])
            for field, value in profile_fields(regs).items():
                if value != old[field]:
                    if field in LAYOUT_FIELDS:       # not reachable from the step keys
                        raise ProfileError(f"{step.where}: {name}.{field} needs an empty "
                                             f"delay line; a step cannot change it")
                    if value >> TIMELINE_VALUE_BITS:
                        raise ProfileError(f"{step.where}: {name}.{field} does not fit a "
                                             f"timeline entry")
                    entries.append((offset, index, FIELD_INDEX[field], value))
            current[name], under[name], regs_step[name] = ch, base, regs
        regs_now = regs_step
        compiled.append(CompiledStep(step.at, offset, step.where, regs_step, dict(current)))
    period = 0
    if timeline.repeat is not None:
        period = round(timeline.repeat * hw.f_clk)
        if period > MAX_CYCLES:
            raise ProfileError(f"timeline_repeat: {period:,} cycles at {mhz}, above the "
                                 f"{MAX_CYCLES:,} a timeline's period may be")
        if period <= last_offset:
            raise ProfileError(f"timeline_repeat: {format_time(timeline.repeat)} is not after "
                                 f"the last step at {hw.f_clk / 1e6:g} MHz")
        # A repeating timeline starts each lap from the last step's settings, which must lead
        # back to the first step's: the first lap's first step is applied on the profile, the
        # next laps' on the last step. Entries are kept for every field the first step sets,
        # so each lap starts from the same settings.
        first = compiled[0]
        firsts = {e for e in entries if e[0] == first.offset}     # a set: entries may be many
        for index, name in enumerate(CHANNEL_NAMES):
            old = profile_fields(regs_now[name])
            for field, value in profile_fields(first.regs[name]).items():
                if value != old[field] and (first.offset, index, FIELD_INDEX[field], value) \
                        not in firsts:
                    entries.append((first.offset, index, FIELD_INDEX[field], value))
        entries.sort(key=lambda e: e[0])
    if len(entries) > hw.timeline_entries:
        raise ProfileError(f"timeline: needs {len(entries)} entries, the box holds "
                             f"{hw.timeline_entries}")
    if not entries:
        raise ProfileError(f"{timeline.steps[0].where}: the timeline changes nothing")
    return CompiledTimeline(tuple(compiled), tuple(entries), period, hw.f_clk,
                            hw.timeline_entries)


def _settings(ch) -> dict:
    return {"rate_bps": None if ch.rate is None else float(ch.rate),
            "delay_s": float(ch.delay), "loss": float(ch.loss)}


def timeline_dict(profile, compiled: CompiledTimeline, start_cycle: int, f_clk: int) -> dict:
    """A run's timeline for result.json and its plot: the cycle it started at, its period (s,
    0: once) and the settings in force from 0 (the profile) and from each step on."""
    steps = [{"at_s": 0.0, **{name: _settings(ch) for name, ch in profile.channels()}}]
    steps += [{"at_s": s.offset / f_clk, **{name: _settings(s.profiles[name])
                                            for name in CHANNEL_NAMES}}
              for s in compiled.steps]
    return {"start_cycle": start_cycle, "period_s": compiled.period / f_clk, "steps": steps}
