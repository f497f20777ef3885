# SPDX-License-Identifier: BSD-2-Clause
"""Link profiles: TOML with units, validated against the hardware, turned into channel registers.

A profile has a ``[forward]`` (gateway → terminal, port B → A) and a ``[return]`` (A → B) table::

    name = "geo-testbed"
    [forward]
    rate = "8.5 Mbit/s"        # what the shaper counts: frame bytes (no FCS) + overhead
    delay = "300 ms"           # one way, departure from the queue to egress
    queue = "640 KB"           # or "50 packets", or both: ["50 packets", "640 KB"]
    loss = "1%"                # Bernoulli; or gilbert_elliott = {p, r, loss_good, loss_bad}
    [return]
    rate = "1.5 Mbit/s"
    delay = "300 ms"
    queue = "50 packets"

Optional per channel: ``overhead`` (bytes added per frame for serialisation, default "0 B"),
``seed``, ``min_len`` and ``max_len`` (bytes). A channel without ``rate`` is not shaped. A
channel without ``queue`` gets one bandwidth-delay product, rate × (forward + return delay).

A channel with a Bandwidth-on-Demand block (the return channel) may instead be served in the
timeslots a DVB-RCS2-style allocator grants it (satemu.bod_model, docs/bod.md)::

    [return.bod]
    superframe = "26.5 ms"     # made whole cycles: slots x round(superframe x f_clk / slots)
    slots = 140                # timeslots per superframe on the shared return carrier
    slot_bytes = 188           # payload bytes per timeslot (a number or a size)
    cra = "100 kbit/s"         # constant rate assignment (default 0)
    rbdc_max = "1.5 Mbit/s"    # rate-based dynamic capacity, at most (default: none)
    rbdc_timeout = 8           # superframes an RBDC request holds (default 0: until replaced)
    vbdc_max = "64 KB"         # volume-based dynamic capacity outstanding, at most (default: none)
    fca = false                # free capacity assignment of the slots left over
    request_period = 1         # superframes between capacity requests
    latency = 26               # superframes from a request to its grant
    background = 0.5           # share of the slots other terminals take, or a schedule:
                               # [{level = 0.2, duration = "10 s"}, ...] (at most 8 levels)
    background_repeat = false  # the schedule repeats; otherwise its last level holds

Rates become slots per superframe x 256. Such a channel has no ``rate`` (its grants pace it);
without ``queue`` it gets one bandwidth-delay product at ``rbdc_max``, or at the carrier's rate.
Every error names the field and the range it must lie in, in one line (ProfileError). A
profile file is UTF-8 TOML; every number in it is finite and 0 or ``1e-30 .. 1e30`` in
magnitude as written (``satemu.units.MAGNITUDE``: nan, inf, 1e400 and "1e9999999 s" are refused
before anything is computed of them). Its text is at most ``MAX_BYTES`` (16 MiB) and its
``[[timeline]]`` tables at most ``satemu.timeline.MAX_STEPS``, both refused before the TOML is
read.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .channel_model import channel_registers, delay_line_budget, delay_line_traffic
from .depdelta_model import FRAME_SPAN
from .params import ChannelRegs
from .protocol import Status
from .regmap import BOD_BG_LEVELS, BOD_BG_REPEAT, BOD_ENABLE, BOD_FCA, BOD_RATE_ONE, REGMAP
from .units import (UnitError, check_magnitude, format_rate, format_size, format_time,
                    parse_probability, parse_queue, parse_rate, parse_size, parse_time, shown)
from .validate import U64_MAX, Hardware, Verdict, profile_fields, validate
from .traces import MAX_STEPS
# A module, not its names: satemu.timeline reads this module's names when called, so either
# may be imported first.
from . import timeline as _timeline

if TYPE_CHECKING:
    from .timeline import Timeline

__all__ = ["ProfileError", "BodProfile", "ChannelProfile", "Profile", "load_profile",
           "builtin_profiles", "parse_profile", "override_profile", "override_value",
           "read_profile_text"]

CHANNEL_KEYS = {"rate", "delay", "queue", "loss", "gilbert_elliott", "overhead", "seed",
                "min_len", "max_len", "bod", "trace", "trace_resolution"}
GE_KEYS = {"p", "r", "loss_good", "loss_bad"}
BOD_REQUIRED = ("superframe", "slots", "slot_bytes", "latency")
BOD_KEYS = set(BOD_REQUIRED) | {"cra", "rbdc_max", "rbdc_timeout", "vbdc_max", "fca",
                                "request_period", "background", "background_repeat"}


class ProfileError(ValueError):
    """A profile that cannot be loaded: the message starts with the field's path."""


@dataclass(frozen=True)
class BodProfile:
    """A channel's Bandwidth-on-Demand settings (``[return.bod]``), in physical units."""

    superframe: Fraction               # seconds, as asked; whole cycles per slot at a clock
    slots: int                         # timeslots per superframe: the shared carrier
    slot_bytes: int                    # payload bytes per timeslot
    latency: int                       # superframes from a request to its grant
    cra: Fraction = Fraction(0)        # bit/s
    rbdc_max: Fraction | None = None   # bit/s; None: no RBDC
    rbdc_timeout: int = 0              # superframes; 0: until the next request
    vbdc_max: int | None = None        # bytes; None: no VBDC
    fca: bool = False
    request_period: int = 1            # superframes
    # (share of the slots, duration in seconds) per level; one level of duration None: constant
    background: tuple[tuple[Fraction, Fraction | None], ...] = ((Fraction(0), None),)
    background_repeat: bool = False

    def slot_cycles(self, f_clk: int) -> int:
        """Whole cycles a slot (of a superframe of at least one slot, so that the conversion of
        any profile has a value; ``satemu.validate`` judges it)."""
        return max(1, round(self.superframe * f_clk / max(self.slots, 1)))

    def superframe_at(self, f_clk: int) -> Fraction:
        """The superframe the hardware runs: whole cycles per slot (of at least one slot, as
        ``slot_cycles``, so that it is never 0 to divide by)."""
        return Fraction(max(self.slots, 1) * self.slot_cycles(f_clk), f_clk)

    def carrier_rate(self, f_clk: int | None = None) -> Fraction:
        """bit/s of the whole carrier, every slot of every superframe."""
        frame = self.superframe if f_clk is None else self.superframe_at(f_clk)
        return 8 * self.slots * self.slot_bytes / frame

    def rate_register(self, rate: Fraction | None, f_clk: int) -> int:
        """A rate as slots per superframe x BOD_RATE_ONE."""
        return round((rate or 0) * self.superframe_at(f_clk) / (8 * max(self.slot_bytes, 1))
                     * BOD_RATE_ONE)

    def register_rate(self, register: int, f_clk: int) -> Fraction:
        """The rate in bit/s of a register value in slots per superframe x BOD_RATE_ONE."""
        return (Fraction(register, BOD_RATE_ONE) * 8 * self.slot_bytes
                / self.superframe_at(f_clk))

    def background_levels(self, f_clk: int) -> list[tuple[int, int]]:
        """(slots, superframes) per level of the background schedule."""
        frame = self.superframe_at(f_clk)
        return [(round(level * self.slots), 1 if duration is None else round(duration / frame))
                for level, duration in self.background]

    def registers(self, f_clk: int) -> dict[str, int]:
        """The bod_* register values at clock ``f_clk``."""
        levels = self.background_levels(f_clk)
        regs = {"bod_flags": BOD_ENABLE | (BOD_FCA if self.fca else 0)
                             | (BOD_BG_REPEAT if self.background_repeat else 0),
                "bod_slot_cycles": self.slot_cycles(f_clk), "bod_slots": self.slots,
                "bod_slot_bytes": self.slot_bytes, "bod_cra": self.rate_register(self.cra, f_clk),
                "bod_rbdc_max": self.rate_register(self.rbdc_max, f_clk),
                "bod_rbdc_timeout": self.rbdc_timeout,
                "bod_vbdc_max": -(-(self.vbdc_max or 0) // max(self.slot_bytes, 1)),
                "bod_req_period": self.request_period, "bod_latency": self.latency,
                "bod_bg_count": len(levels)}
        for i in range(BOD_BG_LEVELS):
            slots, superframes = levels[i] if i < len(levels) else (0, 0)
            regs[f"bod_bg{i}"] = slots | superframes << 16
        return regs

    def describe(self, f_clk: int | None = None) -> list[str]:
        """The settings in physical units, a line each; at a clock, with the superframe it
        runs."""
        frame = self.superframe if f_clk is None else self.superframe_at(f_clk)
        asked = "" if frame == self.superframe else f", {format_time(self.superframe)} asked"
        lines = [f"BoD: superframe {format_time(frame)} ({self.slots} slots of "
                 f"{self.slot_bytes} B{asked}), carrier {format_rate(self.carrier_rate(f_clk))}"]
        grants = [f"CRA {format_rate(self.cra)}"]
        if self.rbdc_max:
            hold = (f"held {self.rbdc_timeout} superframes" if self.rbdc_timeout
                    else "held until the next request")
            grants.append(f"RBDC up to {format_rate(self.rbdc_max)} ({hold})")
        if self.vbdc_max:
            grants.append(f"VBDC up to {format_size(self.vbdc_max)}")
        grants.append("FCA on" if self.fca else "FCA off")
        lines.append(", ".join(grants))
        every = ("every superframe" if self.request_period == 1
                 else f"every {self.request_period} superframes")
        lines.append(f"requests {every}, granted {self.latency} superframes later "
                     f"({format_time(self.latency * frame)})")
        if len(self.background) == 1 and self.background[0][1] is None:
            level = self.background[0][0]
            lines.append(f"other terminals take {float(level) * 100:g}% of the slots")
        else:
            steps = ", ".join(f"{float(level) * 100:g}% for {format_time(duration)}"
                              for level, duration in self.background)
            lines.append(f"other terminals take {steps}"
                         + (", repeating" if self.background_repeat else ", then the last holds"))
        return lines


@dataclass(frozen=True)
class ChannelProfile:
    rate: Fraction | None = None       # bit/s; None: not shaped
    delay: Fraction = Fraction(0)      # seconds
    queue_frames: int | None = None
    queue_bytes: int | None = None
    loss: Fraction = Fraction(0)
    gilbert_elliott: tuple[Fraction, Fraction, Fraction, Fraction] | None = None
    overhead: int = 0
    seed: int = 1
    min_len: int = 60
    max_len: int = 1518
    bod: BodProfile | None = None      # Bandwidth-on-Demand instead of the rate shaper

    def budget_words(self, hw: Hardware, channel: str) -> int:
        """Delay-line words this channel (``channel`` of ``hw``) can need at worst
        (``delay_line_budget``), the bound the firmware applies too."""
        return delay_line_budget(self.registers(hw, channel), hw.channel_params(channel),
                                 hw.f_clk, hw.port_bps)

    def traffic_wpc(self, hw: Hardware, channel: str, queue_frames: int | None = None) -> int:
        """Delay-line words per 65536 cycles this channel (``channel`` of ``hw``) can demand at
        worst, rounded up (``delay_line_traffic``): the firmware rejects more than
        ``hw.wpc(channel)``. Frames of no bytes or fewer (``min_len`` + ``overhead`` not above
        0: a profile ``check`` refuses) could arrive without end: their demand has no bound,
        which this says as 2^64 - 1, the most the firmware's count holds (as
        ``satemu.validate.check_throughput`` does)."""
        num, den = delay_line_traffic(self.registers(hw, channel, queue_frames=queue_frames),
                                      hw.f_clk, hw.port_bps, hw.channel_params(channel))
        return -(-num // den) if den > 0 else U64_MAX

    def frame_cap(self, hw: Hardware, channel: str) -> tuple[int, str]:
        """The queue's limit in frames on ``channel`` of ``hw`` where the profile gives none,
        and why: the hardware's (``queue_depth``, or ``bod_depth`` for a queue BoD serves);
        the departure times the chip holds (``queue_onchip``) on a channel built without the
        ring in memory; the same where a deeper queue would need more delay-line throughput
        than the board guarantees (each frame past the chip's depth costs a word more,
        ``ChannelParams.spills``)."""
        p = hw.channel_params(channel)
        if self.bod is not None:
            return p.bod_depth, "the BoD block's cap"
        if p.queue_onchip < hw.params.queue_depth and not p.spill_words:
            return p.queue_onchip, f"the {channel} channel holds its queue on chip"
        if p.queue_onchip < p.queue_depth and hw.wpc(channel):
            deep = self.traffic_wpc(hw, channel, queue_frames=p.queue_depth)
            if deep > hw.wpc(channel):
                return p.queue_onchip, (f"deeper would need {deep} delay-line words per 65536 "
                                        f"cycles, the board guarantees {hw.wpc(channel)}")
        return p.queue_depth, "hardware cap"

    def registers(self, hw: Hardware, channel: str, mem_base: int = 0, *,
                  queue_frames: int | None = None) -> ChannelRegs:
        """The register values for ``channel`` of ``hw``, at its clock: only the conversion
        (``Profile.check`` validates them). ``queue_frames`` stands for the profile's frame
        limit, if given."""
        frames = queue_frames or self.queue_frames
        if frames is None:
            frames = self.frame_cap(hw, channel)[0]
        regs = channel_registers(
            f_clk=hw.f_clk, rate_bps=self.rate, overhead=self.overhead, delay_s=self.delay,
            queue_frames=frames, queue_bytes=self.queue_bytes, loss=self.loss,
            gilbert_elliott=self.gilbert_elliott, seed=self.seed, min_len=self.min_len,
            max_len=self.max_len, mem_base=mem_base, mem_size=hw.mem_words,
            params=hw.channel_params(channel))
        if self.bod is not None:
            regs = replace(regs, **self.bod.registers(hw.f_clk))
        return regs

    def describe(self, hw: Hardware | None = None, channel: str = "",
                 indent: str = " " * 11) -> str:
        """One line; a BoD channel adds its settings on lines that start with ``indent``. With
        ``hw``, a queue without a frame limit says its cap on ``channel`` of ``hw``."""
        pace = "unshaped" if self.bod is None else "paced by BoD grants"
        parts = [format_rate(self.rate) if self.rate else pace,
                 f"{format_time(self.delay)} one way"]
        queue = [f"{self.queue_frames} packets"] if self.queue_frames else []
        queue += [format_size(self.queue_bytes)] if self.queue_bytes else []
        if hw is not None and not self.queue_frames:
            frames, why = self.frame_cap(hw, channel)
            queue.append(f"{frames} packets ({why})")
        parts.append("queue " + (" or ".join(queue) if queue else "hardware depth")
                     + (", whichever fills first" if len(queue) > 1 else ""))
        if self.gilbert_elliott:
            p, r, kg, kb = self.gilbert_elliott
            parts.append(f"Gilbert-Elliott p={float(p):g} r={float(r):g} "
                         f"loss {float(kg):.3g}/{float(kb):.3g}")
        elif self.loss:
            parts.append(f"{float(self.loss) * 100:g}% loss")
        lines = [] if self.bod is None else self.bod.describe(hw.f_clk if hw else None)
        return "\n".join([", ".join(parts)] + [indent + line for line in lines])


@dataclass(frozen=True)
class Profile:
    name: str
    forward: ChannelProfile
    ret: ChannelProfile
    description: str = ""
    source: str = ""
    path: Path | None = field(default=None, compare=False)
    timeline: "Timeline | None" = None     # the link's changes over time (satemu.timeline)

    def channels(self):
        return (("forward", self.forward), ("return", self.ret))

    def check(self, hw: Hardware) -> dict[str, ChannelRegs]:
        """Validate against ``hw`` as the box's firmware will (``satemu.validate``); returns the
        registers of both channels. An error names the profile's key, in its units."""
        regs = {}
        for index, (name, ch) in enumerate(self.channels()):
            _check_meaning(name, ch)
            regs[name] = r = ch.registers(hw, name)
            verdict = validate(profile_fields(r), hw, index)
            if verdict.status != Status.OK:
                raise ProfileError(_explain(name, ch, hw, verdict))
        return regs


def _check_meaning(name: str, ch: ChannelProfile):
    """What registers cannot say: a shaped rate above zero, probabilities and shares within
    0 .. 1, and a BoD channel that can be granted capacity at all."""
    def bad(key, value, lo, hi):
        raise ProfileError(f"{name}.{key}: {value} is outside the allowed range {lo} .. {hi}")
    if ch.rate is not None and ch.rate <= 0:
        raise ProfileError(f"{name}.rate: {format_rate(ch.rate)} is not a rate; leave rate out "
                           f"for a channel that is not shaped")
    if not 0 <= ch.loss <= 1:
        bad("loss", float(ch.loss), 0, 1)
    for key, v in zip(("p", "r", "loss_good", "loss_bad"), ch.gilbert_elliott or ()):
        if not 0 <= v <= 1:
            bad(f"gilbert_elliott.{key}", float(v), 0, 1)
    b = ch.bod
    if b is None:
        return
    constant = len(b.background) == 1 and b.background[0][1] is None
    for i, (level, _) in enumerate(b.background):
        if not 0 <= level <= 1:
            bad("bod.background" if constant else f"bod.background[{i}].level", float(level), 0, 1)
    if not (b.cra or b.rbdc_max or b.vbdc_max or b.fca):
        raise ProfileError(f"{name}.bod: no capacity could ever be granted; give cra, rbdc_max, "
                           f"vbdc_max or fca = true")


def _packets(n: int) -> str:
    return "1 packet" if n == 1 else f"{n} packets"


def _explain(name: str, ch: ChannelProfile, hw: Hardware, v: Verdict) -> str:
    """A verdict of ``satemu.validate`` on channel ``name``'s registers, said of the profile's
    key in its units: the register's bounds translated, nothing checked anew."""
    if v.status == Status.BUDGET:
        return (f"{name}: delay x rate needs {v.value} delay-line words "
                f"({format_size(v.value * 8)}) at worst, the channel has {v.hi} "
                f"({format_size(v.hi * 8)}); lower the delay, the rate or the queue")
    if v.status != Status.BAD_FIELD:
        return f"{name}: {v.explain()}"
    field, f, b = v.name, hw.f_clk, ch.bod
    width = REGMAP[field].width
    wide = not 0 <= v.value < 1 << width          # the register cannot hold it at all
    mhz = f"{f / 1e6:g} MHz"

    def out(key, value, lo, hi, note=""):
        note = f" ({width}-bit register)" if wide and not note else note
        return f"{name}.{key}: {value} is outside the allowed range {lo} .. {hi}{note}"

    if field in ("rate_q", "rate_num", "rate_den"):
        if field != "rate_q" and wide:
            return (f"{name}.rate: {format_rate(ch.rate)} is not representable at {mhz}: its "
                    f"serialisation time, 8 x f_clk / rate cycles a byte, needs a denominator "
                    f"below 2^{REGMAP['rate_den'].width}")
        if field == "rate_q" and not wide and v.hi < (1 << width) - 1:
            # A queue of departure distances bounds a frame's serialisation (satemu.validate).
            return out("rate", format_rate(ch.rate), format_rate(Fraction(8 * f, v.hi)),
                       format_rate(Fraction(64 * f)),
                       f" (the {name} channel holds its queue's departure times as distances: "
                       f"a frame of max_len + overhead, {ch.max_len + ch.overhead} B, must "
                       f"serialise in under {format_time(Fraction(FRAME_SPAN, f))}, "
                       f"{FRAME_SPAN} cycles at {mhz})")
        # rate_q's width bounds the slowest rate, the datapath's 8 bytes a cycle the fastest.
        return out("rate", format_rate(ch.rate),
                   format_rate(Fraction(8 * f, 1 << REGMAP["rate_q"].width)),
                   format_rate(Fraction(64 * f)), f" (8 bytes per cycle at {mhz})")
    if field == "delay":
        return out("delay", format_time(ch.delay),
                   format_time(Fraction(v.lo, f)) if v.lo else "0 s",
                   format_time(Fraction(v.hi, f)))
    if field == "queue_frames":
        return out("queue", _packets(v.value), _packets(v.lo), _packets(v.hi))
    if field == "queue_bytes":
        return out("queue", format_size(v.value), format_size(v.lo), format_size(v.hi))
    if field == "overhead":
        return out("overhead", f"{v.value} B", f"{v.lo} B", f"{v.hi} B")
    if field in ("seed", "min_len", "max_len"):
        return out(field, v.value, v.lo, v.hi)
    if field == "bod_flags" and v.hi == 0:
        have = " and ".join(hw.bod_channels) or "no"
        return (f"{name}.bod: the {name} channel has no Bandwidth-on-Demand block on this "
                f"hardware ({have} channel has one)")
    if b is None or not field.startswith("bod_"):
        return f"{name}: {v.explain()}"
    frame = b.superframe_at(f)
    if field == "bod_slot_cycles":
        top = "2^32 - 1" if v.hi == (1 << 32) - 1 else v.hi
        return out("bod.superframe", format_time(b.superframe),
                   format_time(Fraction(v.lo * max(b.slots, 1), f)),
                   format_time(Fraction(v.hi * max(b.slots, 1), f)),
                   f" ({v.lo} .. {top} cycles a slot at {mhz})")
    if field == "bod_slots":
        return out("bod.slots", v.value, v.lo, v.hi)
    if field == "bod_slot_bytes":
        return out("bod.slot_bytes", f"{v.value} B", f"{v.lo} B", f"{v.hi} B")
    if field in ("bod_cra", "bod_rbdc_max"):
        rate = b.cra if field == "bod_cra" else b.rbdc_max
        carrier = (f" (the carrier: {b.slots} slots of {b.slot_bytes} B per "
                   f"{format_time(frame)})")
        return out(f"bod.{field[4:]}", format_rate(rate), format_rate(b.register_rate(v.lo, f)),
                   format_rate(b.register_rate(v.hi, f)), "" if wide else carrier)
    if field == "bod_vbdc_max":
        return out("bod.vbdc_max", format_size(b.vbdc_max), format_size(v.lo * b.slot_bytes),
                   format_size(v.hi * b.slot_bytes), f" ({v.hi} slots)")
    if field in ("bod_rbdc_timeout", "bod_latency"):
        return out(f"bod.{field[4:]}", v.value, v.lo, v.hi)
    if field == "bod_req_period":
        return out("bod.request_period", v.value, v.lo, v.hi)
    if field == "bod_bg_count":
        return out("bod.background", f"{v.value} levels", v.lo, v.hi)
    i = int(field[len("bod_bg"):])                # a background level: its duration is off
    superframes = b.background_levels(f)[i][1]
    return (f"{name}.bod.background[{i}].duration: {format_time(b.background[i][1])} is "
            f"{superframes} superframes of {format_time(frame)}, outside the allowed range "
            f"{v.lo >> 16} .. {v.hi >> 16}")


def _key(key: str) -> str:
    """A TOML key for a message's path: as written if a bare key, else quoted (one line)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", key) else shown(key)


class _Table:
    """One TOML table of a profile, read with errors that name the key's path."""

    def __init__(self, path: str, table, known: set[str], what: str):
        if not isinstance(table, dict):
            raise ProfileError(f"{path}: expected a table of {what}")
        unknown = set(table) - known
        if unknown:
            raise ProfileError(f"{path}.{_key(sorted(unknown)[0])}: unknown setting; "
                               f"known ones are {', '.join(sorted(known))}")
        self.path, self.table = path, table

    def get(self, key, parse, default):
        if key not in self.table:
            return default
        try:
            return parse(self.table[key])
        except UnitError as e:
            raise ProfileError(f"{self.path}.{key}: {e}") from None

    def whole(self, key, default):
        value = self.table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProfileError(f"{self.path}.{key}: expected a whole number, got "
                               f"{shown(value)}")
        return self.number(key, value)

    def number(self, key, value):
        """``value`` of ``key`` if ``satemu.units.check_magnitude`` takes it."""
        try:
            return check_magnitude(value)
        except UnitError as e:
            raise ProfileError(f"{self.path}.{key}: {e}") from None

    def flag(self, key, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise ProfileError(f"{self.path}.{key}: expected true or false, got {shown(value)}")
        return value

    def bytes(self, key, default, bare: bool = False):
        """A size in whole bytes; with ``bare``, a plain whole number is bytes too."""
        if bare and isinstance(self.table.get(key), int) and not isinstance(self.table[key], bool):
            return self.number(key, self.table[key])
        value = self.get(key, parse_size, default)
        if value is not None and Fraction(value).denominator != 1:
            raise ProfileError(f"{self.path}.{key}: must be a whole number of bytes")
        return value if value is None else int(value)


def _bod(path: str, table) -> BodProfile:
    t = _Table(path, table, BOD_KEYS, "Bandwidth-on-Demand settings")
    for key in BOD_REQUIRED:
        if key not in table:
            raise ProfileError(f"{path}.{key}: missing; a BoD table needs "
                               f"{', '.join(BOD_REQUIRED)}")
    background = table.get("background", 0)
    if isinstance(background, list):
        levels = []
        for i, entry in enumerate(background):
            e = _Table(f"{path}.background[{i}]", entry, {"level", "duration"},
                       "a level and its duration")
            if set(entry) != {"level", "duration"}:
                raise ProfileError(f"{e.path}: expected a table with exactly level, duration")
            levels.append((e.get("level", parse_probability, None),
                           e.get("duration", parse_time, None)))
        background = tuple(levels)
    else:
        background = ((t.get("background", parse_probability, Fraction(0)), None),)
    return BodProfile(
        superframe=t.get("superframe", parse_time, None), slots=t.whole("slots", None),
        slot_bytes=t.bytes("slot_bytes", None, bare=True), latency=t.whole("latency", None),
        cra=t.get("cra", parse_rate, Fraction(0)), rbdc_max=t.get("rbdc_max", parse_rate, None),
        rbdc_timeout=t.whole("rbdc_timeout", 0), vbdc_max=t.bytes("vbdc_max", None),
        fca=t.flag("fca", False), request_period=t.whole("request_period", 1),
        background=background, background_repeat=t.flag("background_repeat", False))


def _channel(name: str, table: dict, rtt: Fraction, default_seed: int) -> ChannelProfile:
    t = _Table(name, table, CHANNEL_KEYS, "channel settings")
    get, whole = t.get, t.whole
    rate = get("rate", parse_rate, None)
    delay = get("delay", parse_time, Fraction(0))
    queues = table.get("queue")
    frames = nbytes = None
    for q in ([] if queues is None else queues if isinstance(queues, list) else [queues]):
        try:
            kind, value = parse_queue(q)
        except UnitError as e:
            raise ProfileError(f"{name}.queue: {e}") from None
        if kind == "frames":
            frames = value
        else:
            nbytes = value
    bod = _bod(f"{name}.bod", table["bod"]) if "bod" in table else None
    if bod is not None and rate is not None:
        raise ProfileError(f"{name}.rate: a BoD channel is paced by its grants; give rate or "
                           f"bod, not both")
    pace = rate
    if bod is not None and bod.slots > 0 and bod.superframe > 0:   # else check() says why
        pace = bod.rbdc_max or bod.carrier_rate()
    if queues is None and pace is not None:
        # One bandwidth-delay product, as much of it as the queue_bytes register holds.
        nbytes = min(max(int(pace * rtt / 8), 1518), (1 << REGMAP["queue_bytes"].width) - 1)
    ge = None
    if "gilbert_elliott" in table:
        g = table["gilbert_elliott"]
        if not isinstance(g, dict) or set(g) != GE_KEYS:
            raise ProfileError(f"{name}.gilbert_elliott: expected a table with exactly "
                               f"{', '.join(sorted(GE_KEYS))}")
        if "loss" in table:
            raise ProfileError(f"{name}.loss: give either loss or gilbert_elliott, not both")
        try:
            ge = tuple(parse_probability(g[k]) for k in ("p", "r", "loss_good", "loss_bad"))
        except UnitError as e:
            raise ProfileError(f"{name}.gilbert_elliott: {e}") from None
    return ChannelProfile(rate=rate, delay=delay, queue_frames=frames, queue_bytes=nbytes,
                          loss=get("loss", parse_probability, Fraction(0)), gilbert_elliott=ge,
                          overhead=t.bytes("overhead", 0), seed=whole("seed", default_seed),
                          min_len=whole("min_len", 60), max_len=whole("max_len", 1518), bod=bod)


def _toml(text: str, where) -> dict:
    """``text`` read as TOML; ProfileError (one line, starting with ``where``) if it is not, or
    if it nests too deeply or holds an integer too long for Python to read."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{where}: not valid TOML: {e}") from None
    except ValueError:                 # int() of more digits than Python reads
        raise ProfileError(f"{where}: not valid TOML: an integer too long to read (over 4300 "
                           "digits)") from None
    except RecursionError:
        raise ProfileError(f"{where}: not valid TOML: arrays or tables nested too deeply") from None


TOP_KEYS = {"name", "description", "source", "forward", "return", "timeline", "timeline_repeat"}
# A profile's text, at most: 64 bytes for each step of the longest timeline (MAX_STEPS), 16 MiB.
# A longer one is refused before it is read as TOML (about a second a megabyte here); a long
# timeline is better given as a trace file, which is read faster.
MAX_BYTES = 64 * MAX_STEPS
# A [[timeline]] table's header: a line of its own, so counted before the TOML is read.
_STEP_HEADER = re.compile(r"""^[ \t]*\[\[[ \t]*(?:timeline|"timeline"|'timeline')[ \t]*\]\]""",
                          re.MULTILINE)


def _too_long(where) -> ProfileError:
    return ProfileError(f"{where}: more than {MAX_BYTES:,} bytes; a profile has at most "
                        f"{MAX_BYTES:,} (64 for each of a timeline's {MAX_STEPS:,} steps at "
                        f"most; a longer timeline belongs in a trace file)")


def _check_text(text: str, where) -> None:
    """ProfileError (one line, starting with ``where``) if ``text`` is longer than a profile
    may be, or lists more [[timeline]] steps than a timeline may have: counted up to the first
    past the limit, before the TOML is read."""
    if len(text) > MAX_BYTES or (4 * len(text) > MAX_BYTES
                                 and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES):
        raise _too_long(where)
    for count, _ in enumerate(_STEP_HEADER.finditer(text), start=1):
        if count > MAX_STEPS:
            raise ProfileError(f"timeline: more than {MAX_STEPS:,} steps ([[timeline]] tables); "
                               f"a timeline has at most {MAX_STEPS:,} (the entries of a box's "
                               f"timeline store, one or more a step)")


def parse_profile(text: str, name: str = "", path: Path | None = None,
                  base_dir: Path | None = None) -> Profile:
    """The profile in TOML ``text``, named ``name`` unless it names itself; ProfileError, a line
    that starts with the field's path, for anything it cannot be. Trace files are found
    relative to ``base_dir`` (default: the file's folder)."""
    _check_text(text, path or name)
    doc = _toml(text, path or name)
    unknown = set(doc) - TOP_KEYS
    if unknown:
        raise ProfileError(f"{_key(sorted(unknown)[0])}: unknown top-level setting; "
                           f"known ones are {', '.join(sorted(TOP_KEYS))}")
    for key in ("name", "description", "source"):
        if not isinstance(doc.get(key, ""), str):
            raise ProfileError(f"{key}: expected a string, got {shown(doc[key])}")
    for side in ("forward", "return"):
        if side not in doc:
            raise ProfileError(f"{side}: missing; a profile needs [forward] and [return]")
    try:
        rtt = sum((parse_time(doc[s].get("delay", "0 s")) for s in ("forward", "return")),
                  Fraction(0))
    except (UnitError, AttributeError):
        rtt = Fraction(0)        # the channel parser reports the bad delay with its path
    forward = _channel("forward", doc["forward"], rtt, 1)
    ret = _channel("return", doc["return"], rtt, 2)
    if base_dir is None and path is not None:
        base_dir = path.parent
    return Profile(name=doc.get("name", name), description=doc.get("description", ""),
                   source=doc.get("source", ""), forward=forward, ret=ret, path=path,
                   timeline=_timeline.parse_timeline(doc, base_dir))


def override_value(raw: str):
    """An override's value as ``override_profile`` sets it: ``raw`` read as TOML (``3``,
    ``true``, ``["50 packets", "640 KB"]``), or else taken as a string, stripped."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (ValueError, RecursionError):         # not TOML (or not readable as it): a string
        return raw.strip()


def override_profile(text: str, overrides, name: str) -> str:
    """The profile TOML ``text`` with each ``(field, value)`` of ``overrides`` set and its name
    made ``name``, as TOML text. A field is a channel's key by its path (``return.rate``,
    ``forward.loss``, ``return.bod.cra``); a value is read as TOML (``3``, ``true``,
    ``["50 packets", "640 KB"]``) or else taken as a string (``100 kbit/s``). The result is
    parsed here, so a bad field or value raises the parser's ProfileError, which names it."""
    import json
    import re

    def toml(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)            # a TOML basic string: JSON's escapes are TOML's
        if isinstance(v, list):
            return "[" + ", ".join(toml(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{key(k)} = {toml(x)}" for k, x in v.items()) + "}"
        raise ProfileError(f"{v!r}: a value a profile cannot hold")

    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)

    _check_text(text, name)
    doc = _toml(text, name)
    for path, raw in overrides:
        parts = path.split(".")
        if len(parts) < 2 or parts[0] not in ("forward", "return") or not all(parts):
            raise ProfileError(f"{path}: not a channel's field; give forward.KEY, return.KEY "
                               f"or return.bod.KEY (KEY one of {', '.join(sorted(CHANNEL_KEYS))})")
        table = doc
        for i, part in enumerate(parts[:-1]):
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise ProfileError(f"{'.'.join(parts[:i + 1])}: not a table, so it has no "
                                   f"{parts[i + 1]}")
        table[parts[-1]] = override_value(raw)
    doc["name"] = name
    lines = [f"{key(k)} = {toml(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for side, table in doc.items():
        if isinstance(table, dict):
            lines += ["", f"[{key(side)}]"] + [f"{key(k)} = {toml(v)}" for k, v in table.items()]
    out = "\n".join(lines) + "\n"
    parse_profile(out, name)
    return out


def builtin_profiles() -> dict[str, Profile]:
    """The profiles shipped in ``satemu/profiles/``, by name."""
    out = {}
    folder = resources.files("satemu").joinpath("profiles")
    for entry in folder.iterdir():
        if entry.name.endswith(".toml"):
            p = parse_profile(entry.read_text(encoding="utf-8"), entry.name[:-5],
                              base_dir=Path(str(folder)))
            out[p.name] = p
    return dict(sorted(out.items()))


def read_profile_text(path: Path) -> str:
    """The text of profile file ``path``, which must be UTF-8; ProfileError (one line, naming
    the file) if it cannot be read, is not UTF-8 or is longer than ``MAX_BYTES`` (read no
    further than that)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ProfileError(f"{path}: cannot read it: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise _too_long(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not UTF-8 text (byte {data[e.start]:#04x} at offset "
                           f"{e.start}); a profile is a UTF-8 TOML file") from None


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a TOML file by path."""
    path = Path(name_or_path)
    label = name_or_path if name_or_path.isprintable() else repr(name_or_path)
    if "\0" in name_or_path:                    # no file's name holds one: open() refuses it
        raise ProfileError(f"{label}: a file name cannot hold a NUL byte")
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ProfileError(f"{label}: no such profile file")
        return parse_profile(read_profile_text(path), path.stem, path)
    builtins = builtin_profiles()
    if name_or_path not in builtins:
        raise ProfileError(f"{label}: no built-in profile of that name "
                           f"(see 'satemu profiles'), and no such file")
    return builtins[name_or_path]
