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
Every error names the field and the range it must lie in.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from importlib import resources
from pathlib import Path

from .channel_model import (ChannelParams, ChannelRegs, channel_registers, delay_line_budget,
                            delay_line_traffic)
from .regmap import (BOD_BG_LEVELS, BOD_BG_REPEAT, BOD_ENABLE, BOD_FCA, BOD_LATENCY_MAX,
                     BOD_RATE_ONE)
from .units import (UnitError, format_rate, format_size, format_time, parse_probability,
                    parse_queue, parse_rate, parse_size, parse_time)

__all__ = ["ProfileError", "Hardware", "BodProfile", "ChannelProfile", "Profile", "load_profile",
           "builtin_profiles", "parse_profile"]

CHANNEL_KEYS = {"rate", "delay", "queue", "loss", "gilbert_elliott", "overhead", "seed",
                "min_len", "max_len", "bod"}
GE_KEYS = {"p", "r", "loss_good", "loss_bad"}
BOD_REQUIRED = ("superframe", "slots", "slot_bytes", "latency")
BOD_KEYS = set(BOD_REQUIRED) | {"cra", "rbdc_max", "rbdc_timeout", "vbdc_max", "fca",
                                "request_period", "background", "background_repeat"}
U16 = 0xFFFF                           # the BoD count registers are 16 bits wide


class ProfileError(ValueError):
    """A profile that cannot be loaded: the message starts with the field's path."""


@dataclass(frozen=True)
class Hardware:
    """What a profile is checked against. Defaults describe the reference build; a connected box
    reports its own values (HELLO)."""

    f_clk: int = 75_000_000            # Hz: the cycle every register counts
    mem_words: int = 6 << 20           # delay-line words per channel (48 MiB of 64-bit words)
    port_bps: int = 1_000_000_000      # line rate of the ports: bounds an unshaped channel
    params: ChannelParams = ChannelParams()
    bod_channels: tuple[str, ...] = ("return",)   # the channels with a BoD block
    # delay-line throughput per channel with both busy, 64-bit words per 65536 cycles (HELLO);
    # 0: not limited
    mem_wpc: int = 0

    @property
    def max_rate(self) -> Fraction:
        return Fraction(64 * self.f_clk)          # 8 bytes per cycle: the datapath width

    @property
    def max_delay(self) -> Fraction:
        return Fraction((1 << 40) - 1, self.f_clk)


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
        return round(self.superframe * f_clk / self.slots)

    def superframe_at(self, f_clk: int) -> Fraction:
        """The superframe the hardware runs: whole cycles per slot."""
        return Fraction(self.slots * self.slot_cycles(f_clk), f_clk)

    def carrier_rate(self, f_clk: int | None = None) -> Fraction:
        """bit/s of the whole carrier, every slot of every superframe."""
        frame = self.superframe if f_clk is None else self.superframe_at(f_clk)
        return 8 * self.slots * self.slot_bytes / frame

    def rate_register(self, rate: Fraction | None, f_clk: int) -> int:
        """A rate as slots per superframe x BOD_RATE_ONE."""
        return round((rate or 0) * self.superframe_at(f_clk) / (8 * self.slot_bytes)
                     * BOD_RATE_ONE)

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
                "bod_vbdc_max": -(-(self.vbdc_max or 0) // self.slot_bytes),
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

    def budget_words(self, hw: Hardware) -> int:
        """Delay-line words this channel can need at worst (``delay_line_budget``), the bound
        the firmware applies too."""
        return delay_line_budget(self.registers(hw), hw.params, hw.f_clk, hw.port_bps)

    def traffic_wpc(self, hw: Hardware) -> int:
        """Delay-line words per 65536 cycles this channel can demand at worst, rounded up
        (``delay_line_traffic``): the firmware rejects more than ``hw.mem_wpc``."""
        num, den = delay_line_traffic(self.registers(hw), hw.f_clk, hw.port_bps)
        return -(-num // den)

    def registers(self, hw: Hardware, mem_base: int = 0) -> ChannelRegs:
        regs = channel_registers(
            f_clk=hw.f_clk, rate_bps=self.rate, overhead=self.overhead, delay_s=self.delay,
            queue_frames=self.queue_frames, queue_bytes=self.queue_bytes, loss=self.loss,
            gilbert_elliott=self.gilbert_elliott, seed=self.seed, min_len=self.min_len,
            max_len=self.max_len, mem_base=mem_base, mem_size=hw.mem_words, params=hw.params)
        if self.bod is not None:
            regs = replace(regs, **self.bod.registers(hw.f_clk))
            regs.check(replace(hw.params, bod=True))
        return regs

    def describe(self, hw: Hardware | None = None, indent: str = " " * 11) -> str:
        """One line; a BoD channel adds its settings on lines that start with ``indent``."""
        pace = "unshaped" if self.bod is None else "paced by BoD grants"
        parts = [format_rate(self.rate) if self.rate else pace,
                 f"{format_time(self.delay)} one way"]
        queue = [f"{self.queue_frames} packets"] if self.queue_frames else []
        queue += [format_size(self.queue_bytes)] if self.queue_bytes else []
        if hw is not None and not self.queue_frames:
            queue.append(f"{hw.params.queue_depth} packets (hardware cap)")
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

    def channels(self):
        return (("forward", self.forward), ("return", self.ret))

    def check(self, hw: Hardware = Hardware()) -> dict[str, ChannelRegs]:
        """Validate against ``hw``; returns the registers of both channels."""
        from .validate import check_throughput
        regs = {}
        for name, ch in self.channels():
            _check_channel(name, ch, hw)
            try:
                regs[name] = ch.registers(hw)
            except ValueError as e:            # ConfigError: a bound the registers enforce
                raise ProfileError(f"{name}: {e}") from None
            need = delay_line_budget(regs[name], hw.params, hw.f_clk, hw.port_bps)
            if need > hw.mem_words:
                raise ProfileError(
                    f"{name}: delay x rate needs {need} delay-line words "
                    f"({format_size(need * 8)}) at worst, the channel has {hw.mem_words} "
                    f"({format_size(hw.mem_words * 8)}); lower the delay, the rate or the queue")
            slow = check_throughput(regs[name], hw.f_clk, hw.port_bps, hw.mem_wpc)
            if slow:
                raise ProfileError(f"{name}: {slow.explain()}")
        return regs


def _check_channel(name: str, ch: ChannelProfile, hw: Hardware):
    def bad(key, value, lo, hi):
        raise ProfileError(f"{name}.{key}: {value} is outside the allowed range {lo} .. {hi}")
    if ch.rate is not None and not (Fraction(8 * hw.f_clk, 1 << 32) < ch.rate <= hw.max_rate):
        bad("rate", format_rate(ch.rate), format_rate(Fraction(8 * hw.f_clk, 1 << 32)),
            f"{format_rate(hw.max_rate)} (8 bytes per cycle at {hw.f_clk / 1e6:g} MHz)")
    if ch.bod is not None:             # what paces the channel first: a default queue follows it
        _check_bod(name, ch.bod, hw, bad)
    if not 0 <= ch.delay <= hw.max_delay:
        bad("delay", format_time(ch.delay), "0 s", format_time(hw.max_delay))
    if ch.queue_frames is not None and not 1 <= ch.queue_frames <= hw.params.queue_depth:
        bad("queue", f"{ch.queue_frames} packets", "1 packet", f"{hw.params.queue_depth} packets")
    if ch.queue_bytes is not None and not ch.min_len <= ch.queue_bytes < 1 << 32:
        bad("queue", format_size(ch.queue_bytes), format_size(ch.min_len), format_size((1 << 32) - 1))
    if not 0 <= ch.loss <= 1:
        bad("loss", float(ch.loss), 0, 1)
    if ch.gilbert_elliott:
        for key, v in zip(("p", "r", "loss_good", "loss_bad"), ch.gilbert_elliott):
            if not 0 <= v <= 1:
                bad(f"gilbert_elliott.{key}", float(v), 0, 1)
    if not 0 <= ch.overhead <= 255:
        bad("overhead", f"{ch.overhead} B", "0 B", "255 B")
    if not 0 <= ch.seed < 1 << 64:
        bad("seed", ch.seed, 0, (1 << 64) - 1)
    if not 1 <= ch.min_len <= ch.max_len:
        bad("min_len", ch.min_len, 1, ch.max_len)
    if not ch.max_len <= hw.params.max_frame:
        bad("max_len", ch.max_len, ch.min_len, hw.params.max_frame)


def _check_bod(name: str, b: BodProfile, hw: Hardware, bad):
    if name not in hw.bod_channels:
        have = " and ".join(hw.bod_channels) or "no"
        raise ProfileError(f"{name}.bod: the {name} channel has no Bandwidth-on-Demand block "
                           f"on this hardware ({have} channel has one)")
    if not 1 <= b.slots <= U16:
        bad("bod.slots", b.slots, 1, U16)
    if not 1 <= b.slot_bytes <= U16:
        bad("bod.slot_bytes", f"{b.slot_bytes} B", "1 B", f"{U16} B")
    if not 32 <= b.slot_cycles(hw.f_clk) < 1 << 32:
        bad("bod.superframe", format_time(b.superframe),
            format_time(Fraction(32 * b.slots, hw.f_clk)),
            f"{format_time(Fraction(((1 << 32) - 1) * b.slots, hw.f_clk))} (32 .. 2^32 - 1 cycles "
            f"a slot at {hw.f_clk / 1e6:g} MHz)")
    frame = b.superframe_at(hw.f_clk)
    carrier = b.carrier_rate(hw.f_clk)
    for key, rate in (("cra", b.cra), ("rbdc_max", b.rbdc_max or 0)):
        if not 0 <= rate <= carrier:
            bad(f"bod.{key}", format_rate(rate), "0 bit/s",
                f"{format_rate(carrier)} (the carrier: {b.slots} slots of {b.slot_bytes} B per "
                f"{format_time(frame)})")
    if not 0 <= b.rbdc_timeout <= U16:
        bad("bod.rbdc_timeout", b.rbdc_timeout, 0, U16)
    if b.vbdc_max is not None and not 0 <= b.vbdc_max <= U16 * b.slot_bytes:
        bad("bod.vbdc_max", format_size(b.vbdc_max), "0 B",
            f"{format_size(U16 * b.slot_bytes)} ({U16} slots)")
    if not 1 <= b.request_period <= U16:
        bad("bod.request_period", b.request_period, 1, U16)
    if not 1 <= b.latency <= BOD_LATENCY_MAX:
        bad("bod.latency", b.latency, 1, BOD_LATENCY_MAX)
    if not 1 <= len(b.background) <= BOD_BG_LEVELS:
        bad("bod.background", f"{len(b.background)} levels", 1, BOD_BG_LEVELS)
    constant = len(b.background) == 1 and b.background[0][1] is None
    for i, ((level, duration), (_, superframes)) in enumerate(
            zip(b.background, b.background_levels(hw.f_clk))):
        key = "bod.background" if constant else f"bod.background[{i}]"
        if not 0 <= level <= 1:
            bad(key if constant else f"{key}.level", float(level), 0, 1)
        if duration is not None and not 1 <= superframes <= U16:
            raise ProfileError(f"{name}.{key}.duration: {format_time(duration)} is "
                               f"{superframes} superframes of {format_time(frame)}, outside "
                               f"the allowed range 1 .. {U16}")
    if not (b.cra or b.rbdc_max or b.vbdc_max or b.fca):
        raise ProfileError(f"{name}.bod: no capacity could ever be granted; give cra, rbdc_max, "
                           f"vbdc_max or fca = true")


class _Table:
    """One TOML table of a profile, read with errors that name the key's path."""

    def __init__(self, path: str, table, known: set[str], what: str):
        if not isinstance(table, dict):
            raise ProfileError(f"{path}: expected a table of {what}")
        unknown = set(table) - known
        if unknown:
            raise ProfileError(f"{path}.{sorted(unknown)[0]}: unknown setting; "
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
            raise ProfileError(f"{self.path}.{key}: expected a whole number, got {value!r}")
        return value

    def flag(self, key, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise ProfileError(f"{self.path}.{key}: expected true or false, got {value!r}")
        return value

    def bytes(self, key, default, bare: bool = False):
        """A size in whole bytes; with ``bare``, a plain whole number is bytes too."""
        if bare and isinstance(self.table.get(key), int) and not isinstance(self.table[key], bool):
            return self.table[key]
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
        nbytes = max(int(pace * rtt / 8), 1518)     # one bandwidth-delay product
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


def parse_profile(text: str, name: str = "", path: Path | None = None) -> Profile:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path or name}: not valid TOML: {e}") from None
    unknown = set(doc) - {"name", "description", "source", "forward", "return"}
    if unknown:
        raise ProfileError(f"{sorted(unknown)[0]}: unknown top-level setting")
    for side in ("forward", "return"):
        if side not in doc:
            raise ProfileError(f"{side}: missing; a profile needs [forward] and [return]")
    try:
        rtt = sum((parse_time(doc[s].get("delay", "0 s")) for s in ("forward", "return")),
                  Fraction(0))
    except (UnitError, AttributeError):
        rtt = Fraction(0)        # the channel parser reports the bad delay with its path
    return Profile(name=doc.get("name", name), description=doc.get("description", ""),
                   source=doc.get("source", ""),
                   forward=_channel("forward", doc["forward"], rtt, 1),
                   ret=_channel("return", doc["return"], rtt, 2), path=path)


def builtin_profiles() -> dict[str, Profile]:
    """The profiles shipped in ``satemu/profiles/``, by name."""
    out = {}
    for entry in resources.files("satemu").joinpath("profiles").iterdir():
        if entry.name.endswith(".toml"):
            p = parse_profile(entry.read_text(), entry.name[:-5])
            out[p.name] = p
    return dict(sorted(out.items()))


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a TOML file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ProfileError(f"{name_or_path}: no such profile file")
        return parse_profile(path.read_text(), path.stem, path)
    builtins = builtin_profiles()
    if name_or_path not in builtins:
        raise ProfileError(f"{name_or_path}: no built-in profile of that name "
                           f"(see 'satemu profiles'), and no such file")
    return builtins[name_or_path]
