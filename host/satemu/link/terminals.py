# SPDX-License-Identifier: BSD-2-Clause
"""A profile's terminals behind port A (``[terminals]`` and ``[[terminal]]``), in physical units,
read from TOML and turned into each channel's terminal table at a board's clock.

::

    [terminals]
    match = "mac"                  # or "vlan": frames are told apart by MAC address or VLAN ID
    unclassified = "drop"          # or a terminal's name: where frames of no terminal go

    [[terminal]]
    name = "client"
    mac = "02:00:00:00:00:02"      # with match = "vlan": vlan = 100
    queue = "50 packets"           # default: the return channel's queue
    loss = "0.1%"                  # or gilbert_elliott = {...}; default: the return channel's
    cra = "100 kbit/s"             # the BoD settings (cra, rbdc_max, rbdc_timeout, vbdc_max,
    vbdc_max = "64 KB"             # fca, request_period); default: [return.bod]'s

    [[terminal]]
    name = "neighbour"
    count = 16                     # 16 such terminals: neighbour-1 .. neighbour-16
    demand = { kind = "onoff", rate = "512 kbit/s", on = "2 s", off = "6 s" }
    rbdc_max = "1 Mbit/s"

A terminal with ``demand`` is synthetic: it carries no frames, its demand is a process, bytes a
superframe (``constant``: ``rate``; ``onoff``: ``rate`` while on, on and off for random periods
of the means ``on`` and ``off``, drawn each superframe from the channel's seed; ``trace``: a CSV
``file`` of ``duration, rate`` lines, repeating). Every terminal is served by the rules of
docs/bod.md, "Terminals": the return channel must be a BoD channel. The forward channel keeps
one queue and only counts each terminal's frames (by their destination).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from satemu.base.hardware import Hardware
from satemu.base.params import ChannelParams, ChannelRegs
from satemu.base.regmap import LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT, LOSS_NONE
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONE, DEMAND_ONOFF,
    MATCH_MAC, MATCH_VLAN, TERM_FCA, TERM_SYNTHETIC, UNCLASSIFIED_DROP, TerminalRegs,
    TerminalTable, frame_key)
from satemu.base.units import (UnitError, format_rate, format_size, format_time,
    parse_probability, parse_rate, parse_time, shown)
from satemu.base.validate import TerminalVerdict, terminal_budget, terminal_verdict
from satemu.link.channel import (BodProfile, ChannelProfile, parse_gilbert_elliott,
    parse_queues)
from satemu.link.registers import probability_register
from satemu.link.tables import ProfileError, Table

__all__ = ["Demand", "TerminalProfile", "Terminals", "parse_terminals", "TERMINALS_KEYS",
           "TERMINAL_KEYS", "MAX_TRACE_BYTES"]

TERMINALS_KEYS = {"match", "unclassified"}
TERMINAL_KEYS = {"name", "mac", "vlan", "count", "queue", "loss", "gilbert_elliott", "cra",
                 "rbdc_max", "rbdc_timeout", "vbdc_max", "fca", "request_period", "demand"}
DEMAND_KEYS = {"kind", "rate", "on", "off", "file"}
DEMAND_KINDS = {"constant": DEMAND_CONSTANT, "onoff": DEMAND_ONOFF, "trace": DEMAND_LEVELS}
MATCHES = {"mac": MATCH_MAC, "vlan": MATCH_VLAN}
# A demand trace file is read only up to this many bytes (a level a line, and a box's level
# table holds a few hundred at most).
MAX_TRACE_BYTES = 1 << 16
MAX_COUNT = 64
_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")


@dataclass(frozen=True)
class Demand:
    """A synthetic terminal's demand: ``kind`` (constant, onoff or trace), its ``rate`` in
    bit/s (constant, onoff), the mean ``on`` and ``off`` periods in seconds (onoff), and the
    trace's levels, (duration in seconds, rate in bit/s) each, repeating."""

    kind: str
    rate: Fraction = Fraction(0)
    on: Fraction | None = None
    off: Fraction | None = None
    levels: tuple[tuple[Fraction, Fraction], ...] = ()
    file: str = ""

    def describe(self) -> str:
        if self.kind == "constant":
            return f"demand {format_rate(self.rate)}"
        if self.kind == "onoff":
            return (f"demand {format_rate(self.rate)} on for {format_time(self.on)}, off for "
                    f"{format_time(self.off)} (means)")
        period = sum((d for d, _ in self.levels), Fraction(0))
        return (f"demand from {self.file}: {len(self.levels)} levels over "
                f"{format_time(period)}, repeating")


@dataclass(frozen=True)
class TerminalProfile:
    """One terminal's settings; None where the return channel's (and its ``bod``'s) apply."""

    name: str
    key: int | None = None           # MAC (48-bit number) or VLAN ID; None: synthetic
    queue_frames: int | None = None
    queue_bytes: int | None = None
    loss: Fraction | None = None
    gilbert_elliott: tuple[Fraction, Fraction, Fraction, Fraction] | None = None
    cra: Fraction | None = None
    rbdc_max: Fraction | None = None
    rbdc_timeout: int | None = None
    vbdc_max: int | None = None
    fca: bool | None = None
    request_period: int | None = None
    demand: Demand | None = None

    @property
    def synthetic(self) -> bool:
        return self.demand is not None

    def bod(self, pool: BodProfile) -> BodProfile:
        """The BoD settings it runs with: its own, else the pool's (``[return.bod]``'s)."""
        own = {k: getattr(self, k) for k in ("cra", "rbdc_max", "rbdc_timeout", "vbdc_max",
                                              "fca", "request_period")
               if getattr(self, k) is not None}
        return replace(pool, **own)


@dataclass(frozen=True)
class Terminals:
    """A profile's terminals: how frames are told apart, where frames of no terminal go (None:
    dropped) and the terminals, those with frames first."""

    match: str
    terminals: tuple[TerminalProfile, ...]
    unclassified: str | None = None

    @property
    def framed(self) -> tuple[TerminalProfile, ...]:
        return tuple(t for t in self.terminals if not t.synthetic)

    def whose(self):
        """A function naming the terminal of a frame (from its destination MAC address on) on
        a channel (0 forward, by its destination; 1 return, by its source), as a capture says
        it: ``terminal NAME``, ``terminal NAME (unclassified)`` where the return channel sends
        a frame of no terminal to one, else ``no terminal's``."""
        match = MATCH_MAC if self.match == "mac" else MATCH_VLAN
        names = {t.key: t.name for t in self.framed}

        def whose(channel: int, frame: bytes) -> str:
            name = names.get(frame_key(frame, match, channel == 1))
            if name is not None:
                return f"terminal {name}"
            if channel == 1 and self.unclassified is not None:
                return f"terminal {self.unclassified} (unclassified)"
            return "no terminal's"
        return whose

    def tables(self, ret: ChannelProfile, hw: Hardware) -> dict[str, TerminalTable]:
        """Each channel's table at ``hw``'s clock: the return channel's, every terminal with
        its settings; the forward channel's, shared, only the keys of those with frames."""
        f_clk = hw.f_clk
        pool = ret.bod
        levels: list[tuple[int, int]] = []
        regs = []
        params = hw.channel_params("return")
        for t in self.terminals:
            regs.append(_terminal_registers(t, ret, pool, f_clk, levels, params, len(self.framed)))
        match = MATCHES[self.match]
        names = [t.name for t in self.framed]
        unclassified = (UNCLASSIFIED_DROP if self.unclassified is None
                        else names.index(self.unclassified))
        framed_keys = tuple(TerminalRegs(key=t.key) for t in self.framed)
        return {"forward": TerminalTable(match, framed_keys, UNCLASSIFIED_DROP, (), True),
                "return": TerminalTable(match, tuple(regs), unclassified, tuple(levels))}

    def check(self, ret: ChannelProfile, regs: dict[str, ChannelRegs], hw: Hardware) -> None:
        """ProfileError, one line naming the terminal and its key, unless ``hw`` can run the
        terminals with the channels' registers ``regs`` (by direction, without their tables)."""
        params = hw.channel_params("return")
        if not params.terminals:
            raise ProfileError("terminal: this box tells no terminals apart (HELLO reports a "
                               "terminal table of 0); a profile with [[terminal]] tables needs "
                               "one (the simulated board's has 8, docs/bod.md)")
        if ret.bod is None:
            raise ProfileError("terminal: terminals share a Bandwidth-on-Demand return link; "
                               "give the return channel a [return.bod] table")
        tables = self.tables(ret, hw)
        for side in ("forward", "return"):
            p = hw.channel_params(side)
            r = replace(regs[side], **tables[side].registers())
            v = (terminal_verdict(tables[side], r, p)
                 or terminal_budget(tables[side], r, p, hw.f_clk, hw.port_bps))
            if v is not None:
                raise ProfileError(self._explain(v, tables["return"], ret, hw))

    def _explain(self, v: TerminalVerdict, table: TerminalTable, ret: ChannelProfile,
                 hw: Hardware) -> str:
        """A table verdict said of the profile's keys."""
        p = hw.channel_params("return")
        if v.field == "terminals" and v.hi == 0:
            return ("terminal: terminals share a Bandwidth-on-Demand return link; give the "
                    "return channel a [return.bod] table")
        if v.field == "terminals":
            return (f"terminal: {v.value} terminals with frames, this box tells at most "
                    f"{v.hi} apart")
        if v.field == "synthetic":
            return f"terminal: {v.value} synthetic terminals, this box serves at most {v.hi}"
        if v.field == "levels":
            return (f"terminal: the demand traces hold {v.value} levels together, this box's "
                    f"level table {v.hi}")
        if v.field == "cra":
            pool = ret.bod
            total = pool.register_rate(v.value, hw.f_clk)
            return (f"terminal: the terminals' CRA adds up to {format_rate(total)}, more than "
                    f"the pool's {format_rate(pool.carrier_rate(hw.f_clk))}: CRA is a "
                    f"reservation, so it may not oversubscribe the carrier")
        if v.terminal < 0:
            return f"terminal: {v.explain()}"
        if v.field == "level":
            return f"terminal: a demand trace's level {v.terminal} lasts no superframe"
        t = self.terminals[v.terminal]
        at = f"terminal.{t.name}"
        if v.field == "key" and v.lo == v.hi:
            return (f"{at}.{self.match}: {self._key(t.key)} is terminal "
                    f"{self.terminals[v.lo].name}'s too; each terminal has its own")
        if v.field == "key":
            return (f"{at}.{self.match}: {self._key(t.key)} is not a "
                    f"{'unicast MAC address' if self.match == 'mac' else 'VLAN ID (1 .. 4094)'}")
        if v.field == "queue_frames":
            return (f"{at}.queue: {v.value} packets is outside 1 .. {v.hi} (each of "
                    f"{len(self.framed)} terminals has its part of the BoD queue's "
                    f"{p.bod_depth})")
        if v.field == "budget":
            return (f"{at}: its frames can need {v.value} delay-line words at worst, its share "
                    f"of the delay line (1/{len(self.framed)}) holds {v.hi}; lower the delay, "
                    f"the carrier or its queue")
        if v.field == "capacity":
            return (f"{at}: RBDC alone can leave frames queued for good: a request asks for "
                    f"the rate that arrived, never for the backlog left when traffic stops; "
                    f"give it vbdc_max, cra or fca = true")
        if v.field in ("cra", "rbdc_max"):
            return (f"{at}.{v.field}: {format_rate(ret.bod.register_rate(v.value, hw.f_clk))} "
                    f"is more than the carrier's "
                    f"{format_rate(ret.bod.carrier_rate(hw.f_clk))}")
        if v.field == "demand_count":
            return f"{at}.demand: its trace has no level"
        return f"{at}: {v.explain()}"

    def _key(self, key: int) -> str:
        if self.match == "mac":
            return ":".join(f"{b:02x}" for b in key.to_bytes(6, "big"))
        return str(key)

    def describe(self, ret: ChannelProfile, hw: Hardware | None = None) -> list[str]:
        """A line for the table and one a terminal (a group of synthetic ones on one line),
        with what the pool can grant it: its CRA always, up to its RBDC maximum, its VBDC, free
        capacity."""
        drop = ("dropped" if self.unclassified is None
                else f"given to {self.unclassified}")
        lines = [f"terminals: {len(self.framed)} with frames by {self.match.upper()}, "
                 f"{len(self.terminals) - len(self.framed)} synthetic; frames of no terminal "
                 f"are {drop}"]
        pool = ret.bod
        for t in self.terminals:
            b = t.bod(pool) if pool is not None else None
            what = [self._key(t.key) if not t.synthetic else t.demand.describe()]
            if not t.synthetic:
                q = ret.queue_frames if t.queue_frames is None else t.queue_frames
                what.append(f"queue {q} packets" if q else "queue as the channel's")
            if b is not None:
                grants = [f"CRA {format_rate(b.cra)}"]
                if b.rbdc_max:
                    grants.append(f"RBDC up to {format_rate(b.rbdc_max)}")
                if b.vbdc_max:
                    grants.append(f"VBDC up to {format_size(b.vbdc_max)}")
                if b.fca:
                    grants.append("FCA")
                what.append(", ".join(grants))
            lines.append(f"  {t.name}: " + "; ".join(what))
        if pool is not None and hw is not None:
            cra = sum((t.bod(pool).cra for t in self.terminals), Fraction(0))
            lines.append(f"  the pool: {format_rate(pool.carrier_rate(hw.f_clk))}, of which "
                         f"CRA reserves {format_rate(cra)}; RBDC and VBDC share the rest in "
                         f"proportion when oversubscribed (docs/bod.md)")
        return lines


def _rate_per_superframe(rate: Fraction, pool: BodProfile, f_clk: int) -> int:
    """bit/s as bytes a superframe x DEMAND_ONE, at ``f_clk``."""
    return round(rate * pool.superframe_at(f_clk) / 8 * DEMAND_ONE)


def _chance(superframe: Fraction, mean: Fraction) -> int:
    """The chance per superframe, x 2^32, of leaving a state whose mean stay is ``mean``."""
    return probability_register(min(superframe / mean, Fraction(1)))


def _terminal_registers(t: TerminalProfile, ret: ChannelProfile, pool: BodProfile, f_clk: int,
                        levels: list[tuple[int, int]], params: ChannelParams,
                        framed: int) -> TerminalRegs:
    """One terminal's registers at ``f_clk``; a trace's levels are added to ``levels``."""
    b = t.bod(pool)
    frames, nbytes = t.queue_frames, t.queue_bytes
    if frames is None and nbytes is None:          # no queue of its own: the channel's
        frames, nbytes = ret.queue_frames, ret.queue_bytes
    cap = params.terminal_cap(True, framed)
    loss, ge = ((t.loss, t.gilbert_elliott) if (t.loss is not None or t.gilbert_elliott)
                else (ret.loss, ret.gilbert_elliott))
    mode, p, ge_regs = LOSS_NONE, 0, (0, 0, 0, 0)
    if ge:
        mode, ge_regs = LOSS_GILBERT_ELLIOTT, tuple(probability_register(x) for x in ge)
    elif loss:
        mode, p = LOSS_BERNOULLI, probability_register(loss)
    regs = b.registers(f_clk)
    values = dict(
        key=t.key or 0, flags=(TERM_SYNTHETIC if t.synthetic else 0) | (TERM_FCA if b.fca else 0),
        queue_frames=cap if frames is None else frames,
        queue_bytes=0xFFFF_FFFF if nbytes is None else nbytes,
        loss_mode=mode, loss_p=p, ge_p=ge_regs[0], ge_r=ge_regs[1], ge_loss_good=ge_regs[2],
        ge_loss_bad=ge_regs[3], cra=regs["bod_cra"], rbdc_max=regs["bod_rbdc_max"],
        rbdc_timeout=regs["bod_rbdc_timeout"], vbdc_max=regs["bod_vbdc_max"],
        req_period=regs["bod_req_period"])
    d = t.demand
    if d is not None:
        frame = pool.superframe_at(f_clk)
        if d.kind == "trace":
            values.update(demand_kind=DEMAND_LEVELS, demand_first=len(levels),
                          demand_count=len(d.levels))
            levels.extend((_rate_per_superframe(rate, pool, f_clk), max(round(dur / frame), 1))
                          for dur, rate in d.levels)
        else:
            values.update(demand_kind=DEMAND_KINDS[d.kind],
                          demand_rate=_rate_per_superframe(d.rate, pool, f_clk))
            if d.kind == "onoff":
                values.update(demand_on=_chance(frame, d.off), demand_off=_chance(frame, d.on))
    return TerminalRegs(**values)


def _mac(path: str, value) -> int:
    if not isinstance(value, str) or not _MAC.match(value.strip()):
        raise ProfileError(f"{path}: {shown(value)} is not a MAC address (six bytes in hex, "
                           f"such as \"02:00:00:00:00:02\")")
    key = int(re.sub(r"[:-]", "", value.strip()), 16)
    if key >> 40 & 1:
        raise ProfileError(f"{path}: {value} is a group (multicast) address; a terminal sends "
                           f"from its own unicast address")
    return key


def _read_trace(path: str, file: str, base_dir: Path | None) -> tuple[tuple[Fraction, Fraction],
                                                                        ...]:
    """A demand trace: ``duration, rate`` a line (units as the profile's, or bare seconds and
    bit/s), ``#`` comments; read only up to MAX_TRACE_BYTES."""
    if not isinstance(file, str) or not file or "\0" in file:
        raise ProfileError(f"{path}.file: expected a file name, got {shown(file)}")
    where = Path(file) if base_dir is None else base_dir / file
    try:
        with open(where, "rb") as f:
            data = f.read(MAX_TRACE_BYTES + 1)
    except OSError as e:
        raise ProfileError(f"{path}.file: cannot read {file}: {e.strerror or e}") from None
    if len(data) > MAX_TRACE_BYTES:
        raise ProfileError(f"{path}.file: {file} is longer than {MAX_TRACE_BYTES:,} bytes; a "
                           f"demand trace is a few hundred levels at most")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(f"{path}.file: {file} is not UTF-8 text") from None
    levels = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(",")]
        try:
            if len(parts) != 2:
                raise UnitError(f"expected 'duration, rate', got {shown(line)}")
            dur = parse_time(parts[0] if not _bare(parts[0]) else f"{parts[0]} s")
            rate = parse_rate(parts[1] if not _bare(parts[1]) else f"{parts[1]} bit/s")
        except UnitError as e:
            raise ProfileError(f"{path}.file: {file} line {n}: {e}") from None
        if dur <= 0:
            raise ProfileError(f"{path}.file: {file} line {n}: a level lasts longer than 0 s")
        levels.append((dur, rate))
    if not levels:
        raise ProfileError(f"{path}.file: {file} holds no level ('duration, rate' lines)")
    return tuple(levels)


def _bare(text: str) -> bool:
    return re.fullmatch(r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", text) is not None


def _demand(path: str, table, base_dir: Path | None) -> Demand:
    t = Table(path, table, DEMAND_KEYS, "a demand process")
    kind = table.get("kind")
    if kind not in DEMAND_KINDS:
        raise ProfileError(f"{path}.kind: expected one of {', '.join(DEMAND_KINDS)}, got "
                           f"{shown(kind)}")
    need = {"constant": {"kind", "rate"}, "onoff": {"kind", "rate", "on", "off"},
            "trace": {"kind", "file"}}[kind]
    if set(table) != need:
        raise ProfileError(f"{path}: a {kind} demand has exactly {', '.join(sorted(need))}")
    if kind == "trace":
        return Demand(kind, levels=_read_trace(path, table["file"], base_dir), file=table["file"])
    rate = t.get("rate", parse_rate, None)
    if rate < 0:
        raise ProfileError(f"{path}.rate: {format_rate(rate)} is not a rate")
    if kind == "constant":
        return Demand(kind, rate)
    on, off = t.get("on", parse_time, None), t.get("off", parse_time, None)
    for key, value in (("on", on), ("off", off)):
        if value <= 0:
            raise ProfileError(f"{path}.{key}: a mean period longer than 0 s")
    return Demand(kind, rate, on, off)


def parse_terminals(doc: dict, base_dir: Path | None = None) -> Terminals | None:
    """The profile's ``[terminals]`` and ``[[terminal]]`` tables, or None where it has none."""
    if "terminal" not in doc:
        if "terminals" in doc:
            raise ProfileError("terminals: given without a [[terminal]] table")
        return None
    head = doc.get("terminals", {})
    Table("terminals", head, TERMINALS_KEYS, "how terminals are told apart")
    match = head.get("match", "mac")
    if match not in MATCHES:
        raise ProfileError(f"terminals.match: expected \"mac\" or \"vlan\", got {shown(match)}")
    entries = doc["terminal"]
    if not isinstance(entries, list):
        raise ProfileError("terminal: expected [[terminal]] tables")
    out: list[TerminalProfile] = []
    for i, entry in enumerate(entries):
        path = f"terminal[{i}]"
        t = Table(path, entry, TERMINAL_KEYS, "a terminal's settings")
        name = entry.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", name or ""):
            raise ProfileError(f"{path}.name: expected a name of 1 to 32 letters, digits, "
                               f"'_', '.' or '-', got {shown(name)}")
        path = f"terminal.{name}"
        count = t.whole("count", 1)
        if not 1 <= count <= MAX_COUNT:
            raise ProfileError(f"{path}.count: {count} is outside 1 .. {MAX_COUNT}")
        demand = _demand(f"{path}.demand", entry["demand"], base_dir) \
            if "demand" in entry else None
        key = None
        if demand is None:
            other = "vlan" if match == "mac" else "mac"
            if other in entry:
                raise ProfileError(f"{path}.{other}: terminals are told apart by "
                                   f"{match.upper()} (terminals.match)")
            if match not in entry:
                raise ProfileError(f"{path}.{match}: missing; a terminal with frames needs "
                                   f"its {match.upper()} (or a demand, to be synthetic)")
            if count != 1:
                raise ProfileError(f"{path}.count: only synthetic terminals come in groups; "
                                   f"each terminal with frames has its own {match.upper()}")
            if match == "mac":
                key = _mac(f"{path}.mac", entry["mac"])
            else:
                key = t.whole("vlan", None)
                if not 1 <= key <= 4094:
                    raise ProfileError(f"{path}.vlan: {key} is outside 1 .. 4094")
        else:
            for k in ("mac", "vlan", "queue", "loss", "gilbert_elliott"):
                if k in entry:
                    raise ProfileError(f"{path}.{k}: a synthetic terminal carries no frames, "
                                       f"so it has no {k}")
        frames = nbytes = None
        if "queue" in entry:
            frames, nbytes = parse_queues(path, entry["queue"])
        ge = parse_gilbert_elliott(path, entry["gilbert_elliott"], "loss" in entry) \
            if "gilbert_elliott" in entry else None
        loss = t.get("loss", parse_probability, None)
        if loss is not None and not 0 <= loss <= 1:
            raise ProfileError(f"{path}.loss: {float(loss)} is outside the allowed range 0 .. 1")
        common = dict(
            queue_frames=frames, queue_bytes=nbytes, loss=loss, gilbert_elliott=ge,
            cra=t.get("cra", parse_rate, None), rbdc_max=t.get("rbdc_max", parse_rate, None),
            rbdc_timeout=t.whole("rbdc_timeout", 0) if "rbdc_timeout" in entry else None,
            vbdc_max=t.bytes("vbdc_max", None),
            fca=t.flag("fca", False) if "fca" in entry else None,
            request_period=t.whole("request_period", 1) if "request_period" in entry else None,
            demand=demand)
        names = [name] if count == 1 else [f"{name}-{j}" for j in range(1, count + 1)]
        out += [TerminalProfile(name=n, key=key, **common) for n in names]
    seen = set()
    for t in out:
        if t.name in seen:
            raise ProfileError(f"terminal.{t.name}: two terminals of that name")
        seen.add(t.name)
    framed = [t for t in out if not t.synthetic]
    if not framed:
        raise ProfileError("terminal: no terminal with frames; port A's frames need one (a "
                           f"{match.upper()} to be told by)")
    unclassified = head.get("unclassified", "drop")
    if unclassified == "drop":
        unclassified = None
    elif unclassified not in [t.name for t in framed]:
        raise ProfileError(f"terminals.unclassified: expected \"drop\" or the name of a "
                           f"terminal with frames, got {shown(unclassified)}")
    return Terminals(match, tuple(framed + [t for t in out if t.synthetic]), unclassified)
