# SPDX-License-Identifier: BSD-2-Clause
"""One channel of a link profile (``[forward]``, ``[return]``, ``[return.bod]``): its settings in
physical units, read from TOML, turned into register values at a board's clock, and its
registers' verdicts said back in the profile's keys and units. ``satemu.link.profile`` has the whole
format."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from fractions import Fraction

from satemu.base import distributions
from satemu.link.tables import ProfileError, Table
from satemu.base.protocol import Status
from satemu.base.queues import FRAME_SPAN
from satemu.base.regmap import (BOD_BG_LEVELS, BOD_BG_REPEAT, BOD_ENABLE, BOD_FCA, BOD_RATE_ONE,
    REGMAP)
from satemu.link.registers import channel_registers
from satemu.base.params import ChannelRegs
from satemu.base.units import (UnitError, format_rate, format_size, format_time, parse_probability,
    parse_queue, parse_rate, parse_time, shown)
from satemu.base.validate import U64_MAX, Verdict, delay_line_budget, delay_line_traffic
from satemu.base.hardware import Hardware

__all__ = ["BodProfile", "ChannelProfile", "check_meaning", "explain", "parse_bod",
           "parse_channel", "parse_queues", "parse_gilbert_elliott"]

CHANNEL_KEYS = {"rate", "delay", "queue", "loss", "gilbert_elliott", "overhead", "seed",
                "min_len", "max_len", "bod", "trace", "trace_resolution", "jitter",
                "jitter_distribution", "jitter_correlation", "order", "corrupt",
                "corrupt_correlation", "corrupt_fcs", "duplicate", "duplicate_correlation",
                "ecn_step"}
CORRUPT_FCS = ("recomputed", "bad")
ORDERS = ("keep", "free")
# The impairments' quantities, as a channel and a timeline step read them: key, parser.
IMPAIRMENT_KEYS = (("jitter", parse_time), ("jitter_correlation", parse_probability),
                   ("corrupt", parse_probability), ("corrupt_correlation", parse_probability),
                   ("duplicate", parse_probability),
                   ("duplicate_correlation", parse_probability))
MAX_TABLE_BYTES = 1_000_000     # a jitter table file (distributions.MAX_TEXT characters)
GE_KEYS = ("p", "r", "loss_good", "loss_bad")     # in the order the registers take them
BOD_REQUIRED = ("superframe", "slots", "slot_bytes", "latency")
BOD_KEYS = set(BOD_REQUIRED) | {"cra", "rbdc_max", "rbdc_timeout", "vbdc_max", "fca",
                                "request_period", "background", "background_repeat"}


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
        any profile has a value; ``satemu.base.validate`` judges it)."""
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
            if level:
                lines.append(f"terminals not modelled take {float(level) * 100:g}% of the slots "
                             "(the background)")
        else:
            steps = ", ".join(f"{float(level) * 100:g}% for {format_time(duration)}"
                              for level, duration in self.background)
            lines.append(f"terminals not modelled take {steps}"
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
    # Jitter (satemu.model.jitter): its scale in seconds (a normal's sd, a uniform's half
    # width, netem's "jitter"), its distribution (a name of distributions.NAMES, or a table
    # file's path as written), the correlation of successive frames' jitter and the order.
    jitter: Fraction = Fraction(0)
    jitter_distribution: str = "uniform"
    jitter_correlation: Fraction = Fraction(0)
    order: str = "keep"
    # Corruption (satemu.model.corrupt): the share of admitted frames with a bit flipped, the
    # correlation of successive frames' decisions; the FCS is computed again as they leave.
    corrupt: Fraction = Fraction(0)
    corrupt_correlation: Fraction = Fraction(0)
    # Duplication (satemu.model.duplicate): the share of frames copied (the copy a frame of its
    # own behind the original), the correlation of successive frames' decisions.
    duplicate: Fraction = Fraction(0)
    duplicate_correlation: Fraction = Fraction(0)
    # ECN marking (satemu.model.ecn): an ECN-capable IP packet is marked CE once its time in the
    # bottleneck reaches ecn_sojourn, or it finds ecn_queue packets queued ahead (None: off).
    ecn_sojourn: Fraction | None = None
    ecn_queue: int | None = None
    jitter_entries: tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    def jitter_table(self) -> tuple[int, ...]:
        """The JITTER_TABLE entries of the jitter's distribution, as the box's table bank
        holds them (``satemu.base.distributions``)."""
        if self.jitter_entries is not None:
            return self.jitter_entries
        return distributions.table(self.jitter_distribution)

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
        ``satemu.base.validate.check_throughput`` does)."""
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
        if self.jitter:
            regs = replace(regs, jit_sigma=round(self.jitter * hw.f_clk),
                           jit_corr=min(round(self.jitter_correlation * 65536), 65535))
        if self.corrupt:
            regs = replace(regs, cor_p=min(round(self.corrupt * 2**32), 2**32 - 1),
                           cor_corr=min(round(self.corrupt_correlation * 65536), 65535))
        if self.duplicate:
            regs = replace(regs, dup_p=min(round(self.duplicate * 2**32), 2**32 - 1),
                           dup_corr=min(round(self.duplicate_correlation * 65536), 65535))
        if self.ecn_sojourn:
            regs = replace(regs, ecn_sojourn=max(1, round(self.ecn_sojourn * hw.f_clk)))
        if self.ecn_queue:
            regs = replace(regs, ecn_queue=self.ecn_queue)
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
        if self.jitter:
            corr = (f", {float(self.jitter_correlation) * 100:g}% correlated"
                    if self.jitter_correlation else "")
            shape = self.jitter_distribution
            if self.jitter_entries is not None:
                shape = f"table {Path(shape).name}"
            parts.append(f"jitter {format_time(self.jitter)} {shape}{corr}, in order")
        if self.corrupt:
            corr = (f", {float(self.corrupt_correlation) * 100:g}% correlated"
                    if self.corrupt_correlation else "")
            parts.append(f"{float(self.corrupt) * 100:g}% corrupted{corr} (one bit, FCS "
                         f"recomputed)")
        if self.duplicate:
            corr = (f", {float(self.duplicate_correlation) * 100:g}% correlated"
                    if self.duplicate_correlation else "")
            parts.append(f"{float(self.duplicate) * 100:g}% duplicated{corr}")
        if self.ecn_sojourn or self.ecn_queue:
            steps = ([f"{format_time(self.ecn_sojourn)} in the queue"] if self.ecn_sojourn
                     else []) + ([_packets(self.ecn_queue) + " ahead"] if self.ecn_queue else [])
            parts.append(f"ECN-capable packets marked CE from {' or '.join(steps)}")
        lines = [] if self.bod is None else self.bod.describe(hw.f_clk if hw else None)
        return "\n".join([", ".join(parts)] + [indent + line for line in lines])


def check_meaning(name: str, ch: ChannelProfile, terminals: bool = False):
    """What registers cannot say: a shaped rate above zero, probabilities and shares within
    0 .. 1, and a BoD channel that can be granted capacity at all (with ``terminals``, the
    terminals' own settings say that; ``satemu.link.terminals``)."""
    def bad(key, value, lo, hi):
        raise ProfileError(f"{name}.{key}: {value} is outside the allowed range {lo} .. {hi}")
    if ch.rate is not None and ch.rate <= 0:
        raise ProfileError(f"{name}.rate: {format_rate(ch.rate)} is not a rate; leave rate out "
                           f"for a channel that is not shaped")
    if not 0 <= ch.loss <= 1:
        bad("loss", float(ch.loss), 0, 1)
    if ch.jitter < 0:
        raise ProfileError(f"{name}.jitter: {format_time(ch.jitter)} is negative; jitter is a "
                           f"scale (a normal's sd, a uniform's half width)")
    # A share of 0 .. 1; a correlation below 1, which would repeat the first draw for ever.
    for key, repeats in (("corrupt", None), ("corrupt_correlation", "decision"),
                         ("duplicate", None), ("duplicate_correlation", "decision"),
                         ("jitter_correlation", "draw")):
        v = getattr(ch, key)
        if not 0 <= v <= 1 or (repeats and v == 1):
            raise ProfileError(f"{name}.{key}: {float(v):g} is outside 0 .. 1"
                               + (f", 1 excluded (at 1 the first {repeats} would repeat for "
                                  f"ever)" if repeats else ""))
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
    if terminals:
        return
    if not (b.cra or b.rbdc_max or b.vbdc_max or b.fca):
        raise ProfileError(f"{name}.bod: no capacity could ever be granted; give cra, rbdc_max, "
                           f"vbdc_max or fca = true")
    if not (b.cra or b.vbdc_max or b.fca):
        # RBDC alone: each request asks for the rate that arrived since the last one, so the
        # bytes still queued when arrivals stop are never asked for, and stay (the model and
        # the RTL agree on that; docs/bod.md, "A backlog").
        raise ProfileError(f"{name}.bod: RBDC alone can leave frames queued for good: a request "
                           f"asks for the rate that arrived, never for the backlog left when "
                           f"traffic stops (DVB-RCS2 asks for it as VBDC); give vbdc_max, cra "
                           f"or fca = true too")


def _packets(n: int) -> str:
    return "1 packet" if n == 1 else f"{n} packets"


def explain(name: str, ch: ChannelProfile, hw: Hardware, v: Verdict) -> str:
    """A verdict of ``satemu.base.validate`` on channel ``name``'s registers, said of the profile's
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
            # A queue of departure distances bounds a frame's serialisation (satemu.base.validate).
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
    if field in ("ecn_sojourn", "ecn_queue"):
        if v.hi == 0 and ch.bod is not None:
            return (f"{name}.ecn_step: a channel BoD serves has no ECN marking yet; leave "
                    f"ecn_step out of a channel with a bod table")
        if v.hi == 0:
            return (f"{name}.ecn_step: this box's channels have no ECN marking (see 'satemu "
                    f"show --board')")
        if field == "ecn_sojourn":
            return out("ecn_step", format_time(ch.ecn_sojourn), format_time(Fraction(1, f)),
                       format_time(Fraction(v.hi, f)))
        return out("ecn_step", _packets(v.value), _packets(1), _packets(v.hi))
    if field == "dup_p" and v.hi == 0:
        return (f"{name}.duplicate: this box's channels have no duplication block (see 'satemu "
                f"show --board')")
    if field == "cor_p" and v.hi == 0:
        return (f"{name}.corrupt: this box's channels have no corruption block (see 'satemu "
                f"show --board')")
    if field == "jit_sigma":
        if v.hi == 0 and ch.bod is not None:
            return (f"{name}.jitter: a channel BoD serves has no jitter yet (its frames leave "
                    f"in their slots); leave jitter out of a channel with a bod table")
        if v.hi == 0:
            return (f"{name}.jitter: this box's channels have no jitter block (see 'satemu "
                    f"show --board')")
        return out("jitter", format_time(ch.jitter), "0 s",
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


def parse_bod(path: str, table) -> BodProfile:
    t = Table(path, table, BOD_KEYS, "Bandwidth-on-Demand settings")
    for key in BOD_REQUIRED:
        if key not in table:
            raise ProfileError(f"{path}.{key}: missing; a BoD table needs "
                               f"{', '.join(BOD_REQUIRED)}")
    background = table.get("background", 0)
    if isinstance(background, list):
        levels = []
        for i, entry in enumerate(background):
            e = Table(f"{path}.background[{i}]", entry, {"level", "duration"},
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


def parse_jitter(name: str, t: Table, base_dir: Path | None) -> dict:
    """A channel's (``t``'s) jitter, corruption and duplication keys, as ChannelProfile's
    fields: the scale, the distribution (a table file read and checked, relative to
    ``base_dir``), the correlation and the order; the corruption's share and correlation (its
    FCS recomputed, the one way built); the duplication's share and correlation."""
    table = t.table
    out = {key: t.get(key, parse, None) for key, parse in IMPAIRMENT_KEYS if key in table}
    order = table.get("order", "keep")
    if order not in ORDERS:
        raise ProfileError(f"{name}.order: expected \"keep\" or \"free\", got {shown(order)}")
    if order == "free":
        raise ProfileError(f"{name}.order: \"free\" (frames overtaking one another) is not "
                           f"built yet; the box keeps every frame in order (\"keep\")")
    dist = table.get("jitter_distribution", "uniform")
    if not isinstance(dist, str) or not dist:
        raise ProfileError(f"{name}.jitter_distribution: expected a name "
                           f"({', '.join(distributions.NAMES)}) or a table file's path, got "
                           f"{shown(dist)}")
    out["jitter_distribution"] = dist
    if dist not in distributions.NAMES:
        path = Path(dist)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        where = f"{name}.jitter_distribution"
        if "\0" in dist or not path.is_file():
            raise ProfileError(f"{where}: {shown(dist)} is neither a distribution "
                               f"({', '.join(distributions.NAMES)}) nor a table file")
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_TABLE_BYTES + 1)
            text = data.decode("utf-8")
        except OSError as e:
            raise ProfileError(f"{where}: cannot read {dist}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise ProfileError(f"{where}: {dist} is not text; a jitter table is netem's .dist "
                               f"format, whitespace-separated integers") from None
        try:
            out["jitter_entries"] = distributions.read_table(text, f"{where} {dist}")
        except distributions.DistributionError as e:
            raise ProfileError(str(e)) from None
    if "order" in table:
        out["order"] = order
    for key, what in (("corrupt", "corruption"), ("duplicate", "duplication")):
        if f"{key}_correlation" in table and key not in table:
            raise ProfileError(f"{name}.{key}: missing; {key}_correlation describes a "
                               f"{what}, which needs its share")
    fcs = table.get("corrupt_fcs", "recomputed")
    if fcs not in CORRUPT_FCS:
        raise ProfileError(f"{name}.corrupt_fcs: expected \"recomputed\" or \"bad\", got "
                           f"{shown(fcs)}")
    if fcs == "bad":
        raise ProfileError(f"{name}.corrupt_fcs: \"bad\" (a corrupted frame leaving with its "
                           f"FCS bad, for the next hop to drop) is not built yet; the box's MACs "
                           f"compute the FCS as a frame leaves (\"recomputed\")")
    if "jitter" not in out and set(table) & {"jitter_distribution", "jitter_correlation"}:
        raise ProfileError(f"{name}.jitter: missing; jitter_distribution and "
                           f"jitter_correlation describe a jitter, which needs its scale")
    return out


def parse_channel(name: str, table: dict, rtt: Fraction, default_seed: int,
                  base_dir: Path | None = None) -> ChannelProfile:
    t = Table(name, table, CHANNEL_KEYS, "channel settings")
    get, whole = t.get, t.whole
    rate = get("rate", parse_rate, None)
    delay = get("delay", parse_time, Fraction(0))
    queues = table.get("queue")
    frames, nbytes = (None, None) if queues is None else parse_queues(name, queues)
    bod = parse_bod(f"{name}.bod", table["bod"]) if "bod" in table else None
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
        ge = parse_gilbert_elliott(name, table["gilbert_elliott"], "loss" in table)
    return ChannelProfile(rate=rate, delay=delay, queue_frames=frames, queue_bytes=nbytes,
                          loss=get("loss", parse_probability, Fraction(0)), gilbert_elliott=ge,
                          overhead=t.bytes("overhead", 0), seed=whole("seed", default_seed),
                          min_len=whole("min_len", 60), max_len=whole("max_len", 1518), bod=bod,
                          **parse_jitter(name, t, base_dir),
                          **(parse_ecn_step(name, table["ecn_step"]) if "ecn_step" in table
                             else {}))


def parse_queues(path: str, queues) -> tuple[int | None, int | None]:
    """A channel's ``queue``: a limit in packets or in bytes, or a list of both; (frames,
    bytes), None for the one not given."""
    frames = nbytes = None
    for q in queues if isinstance(queues, list) else [queues]:
        try:
            kind, value = parse_queue(q)
        except UnitError as e:
            raise ProfileError(f"{path}.queue: {e}") from None
        if kind == "frames":
            frames = value
        else:
            nbytes = value
    return frames, nbytes


def parse_ecn_step(path: str, steps) -> dict:
    """A channel's ``ecn_step``: a time in the bottleneck ("1 ms"), a number of packets queued
    ahead ("20 packets"), a list of both, or "off"; as ChannelProfile's ecn_sojourn and
    ecn_queue (None where not given)."""
    out = {"ecn_sojourn": None, "ecn_queue": None}
    if steps == "off":
        return out
    for s in steps if isinstance(steps, list) and steps else [steps]:
        try:
            out["ecn_sojourn"] = parse_time(s)
            key = "ecn_sojourn"
        except UnitError:
            try:
                kind, value = parse_queue(s)
            except UnitError:
                raise ProfileError(f"{path}.ecn_step: expected a time in the queue, such as "
                                   f"\"1 ms\", or a number of packets queued ahead, such as "
                                   f"\"20 packets\", a list of both, or \"off\"; got "
                                   f"{shown(s)}") from None
            if kind != "frames":
                raise ProfileError(f"{path}.ecn_step: {shown(s)} is in bytes; the step counts "
                                   f"packets queued ahead, such as \"20 packets\"")
            out["ecn_queue"] = value
            key = "ecn_queue"
        if not out[key]:
            raise ProfileError(f"{path}.ecn_step: {shown(s)} would mark nothing; give a time "
                               f"or a number of packets above 0, or \"off\"")
    return out


def parse_gilbert_elliott(path: str, g, with_loss: bool) -> tuple[Fraction, ...]:
    """A channel's ``gilbert_elliott`` table, (p, r, loss_good, loss_bad); ``with_loss``: the
    channel gives ``loss`` too, which it may not."""
    if not isinstance(g, dict) or set(g) != set(GE_KEYS):
        raise ProfileError(f"{path}.gilbert_elliott: expected a table with exactly "
                           f"{', '.join(sorted(GE_KEYS))}")
    if with_loss:
        raise ProfileError(f"{path}.loss: give either loss or gilbert_elliott, not both")
    try:
        return tuple(parse_probability(g[k]) for k in GE_KEYS)
    except UnitError as e:
        raise ProfileError(f"{path}.gilbert_elliott: {e}") from None
