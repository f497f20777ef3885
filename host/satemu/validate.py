# SPDX-License-Identifier: BSD-2-Clause
"""The one register-level validator of a channel profile, and the hardware it is checked against.

The firmware (``firmware/app/validate.c``) gives the same verdict on every profile;
``tests/vectors/profiles.json`` pins both to this module. Every other check of a profile calls it:
``Profile.check`` (which only translates a verdict into physical units), ``ChannelRegs.check``
(the models' entry) and ``Device.load`` through ``Profile.check``.

Checks run in a fixed order and the first failure is the verdict, with the field's index in
``protocol.PROFILE_FIELDS``, its value and the range it must lie in: each field's register
width, the loss mode, the rate fraction and its speed, the frame lengths, the queue, the BoD
fields when BoD is on; after the fields, the delay line's size (BUDGET), then its throughput
(THROUGHPUT).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .channel_model import delay_line_budget, delay_line_traffic
from .depdelta_model import FRAME_SPAN, SLOT_SPAN
from .params import ChannelParams, ChannelRegs
from .protocol import CHANNEL_NAMES, LIMIT_FIELDS, PROFILE_FIELDS, Status
from .regmap import BOD_BG_LEVELS, BOD_ENABLE, BOD_LATENCY_MAX, BOD_RATE_ONE, REGMAP

__all__ = ["Hardware", "Verdict", "validate", "field_verdict", "check_registers",
           "check_throughput", "profile_fields", "INDEX"]

INDEX = {f.name: i for i, f in enumerate(PROFILE_FIELDS)}
U64_MAX = (1 << 64) - 1


def profile_fields(regs: ChannelRegs) -> dict[str, int]:
    """The register values of ``regs``' profile fields, in ``PROFILE_FIELDS`` order: what the
    validator checks and SET_PROFILE carries (the firmware owns the memory region)."""
    return {f.name: getattr(regs, f.name) for f in PROFILE_FIELDS}


def channel_index(channel: int | str) -> int:
    """A channel given by index or name (``protocol.CHANNEL_NAMES``), as its index."""
    return channel if isinstance(channel, int) else CHANNEL_NAMES.index(channel)


def channel_pace(params: ChannelParams, mem_paces: tuple[int, ...], channel: int | str) -> int:
    """Channel ``channel``'s memory pace (index or name): its own in ``mem_paces`` where the
    channels' differ, else ``params.mem_pace``."""
    if not mem_paces:
        return params.mem_pace
    return mem_paces[channel_index(channel)]


@dataclass(frozen=True)
class Hardware:
    """A box as its firmware knows itself, which HELLO reports: its clock, the delay-line words
    of each channel, its ports' line rate, the channels' gateware parameters, the channels that
    have the Bandwidth-on-Demand block and the delay-line throughput each channel is guaranteed
    while the other takes its own (``wpc``: 64-bit words per 65536 cycles; 0: not limited).
    ``params`` are a channel's without the BoD block (``channel_params`` adds it where the board
    has it, and each channel's memory pace from ``mem_paces`` where given); where they hold
    fewer departure times on chip than the queue's cap, only the channels of ``spill_channels``
    have the ring in memory beyond the chip (``channel_params`` caps the others' queues at the
    chip's depth: ``delta_queue`` where the chip holds their departure times as distances)."""

    f_clk: int
    mem_words: int
    port_bps: int = 1_000_000_000
    params: ChannelParams = ChannelParams()
    bod_channels: tuple[str, ...] = ("return",)
    spill_channels: tuple[str, ...] = CHANNEL_NAMES
    # Each channel's guarantee (forward, return); one int gives both channels that one, and
    # the field holds the pair.
    mem_wpc: int | tuple[int, int] = 0
    mem_paces: tuple[int, ...] = ()        # each channel's memory pace, where not params'
    log_records: int = 0        # each channel's frame-log ring, records (0: no frame log)
    timeline_entries: int = 0   # entries the timeline store holds (0: no timelines)

    def __post_init__(self):
        if isinstance(self.mem_wpc, int):
            object.__setattr__(self, "mem_wpc", (self.mem_wpc,) * len(CHANNEL_NAMES))

    @property
    def bod_mask(self) -> int:
        """A bit per channel with the BoD block (``protocol.CHANNEL_*``), as the firmware has it."""
        return sum(1 << CHANNEL_NAMES.index(name) for name in self.bod_channels)

    @property
    def spill_mask(self) -> int:
        """A bit per channel whose queue may outgrow the chip (0 where no queue can)."""
        if not self.params.spill_words:
            return 0
        return sum(1 << CHANNEL_NAMES.index(name) for name in self.spill_channels)

    def wpc(self, channel: int | str) -> int:
        """The delay-line throughput channel ``channel`` (index or name) is guaranteed, in words
        per 65536 cycles (0: not limited)."""
        return self.mem_wpc[channel_index(channel)]

    def channel_params(self, channel: int | str) -> ChannelParams:
        """The gateware parameters of channel ``channel`` (index or name)."""
        name = CHANNEL_NAMES[channel_index(channel)]
        params = replace(self.params, bod=name in self.bod_channels,
                         mem_pace=channel_pace(self.params, self.mem_paces, name))
        if name in self.spill_channels and params.spill_words:
            return params
        return replace(params, queue_depth=params.delta_queue or params.queue_onchip,
                       queue_fifo=0)

    def limits(self) -> dict[str, int]:
        """The values of ``protocol.LIMIT_FIELDS``: what HELLO reports and the firmware holds."""
        p = self.params
        values = {"f_clk": self.f_clk, "queue_depth": p.queue_depth,
                  "queue_fifo": p.queue_onchip, "spill_mask": self.spill_mask,
                  "bod_queue": p.bod_depth, "delta_queue": p.delta_queue,
                  "max_frame": p.max_frame,
                  "latency_floor": p.latency_floor, "mem_words": self.mem_words,
                  "port_bps": self.port_bps,
                  "mem_wpc_forward": self.wpc(0), "mem_wpc_return": self.wpc(1),
                  "log_records": self.log_records, "timeline_entries": self.timeline_entries}
        return {name: values[name] for name, _ in LIMIT_FIELDS}

    @classmethod
    def from_limits(cls, limits: dict[str, int], bod_channels: tuple[str, ...]) -> Hardware:
        """The hardware a box reports: ``limits`` holds the values of ``protocol.LIMIT_FIELDS``
        (HELLO's answer)."""
        fifo, bod = limits["queue_fifo"], limits["bod_queue"]
        params = ChannelParams(queue_depth=limits["queue_depth"],
                               queue_fifo=0 if fifo == limits["queue_depth"] else fifo,
                               bod_queue=0 if bod == fifo else bod,
                               delta_queue=limits["delta_queue"],
                               max_frame=limits["max_frame"],
                               latency_floor=limits["latency_floor"],
                               frame_log=limits.get("log_records", 0) > 0)
        spill = tuple(name for i, name in enumerate(CHANNEL_NAMES)
                      if limits["spill_mask"] >> i & 1)
        return cls(f_clk=limits["f_clk"], mem_words=limits["mem_words"],
                   port_bps=limits["port_bps"], params=params, bod_channels=bod_channels,
                   spill_channels=spill,
                   mem_wpc=(limits["mem_wpc_forward"], limits["mem_wpc_return"]),
                   log_records=limits.get("log_records", 0),
                   timeline_entries=limits.get("timeline_entries", 0))


@dataclass(frozen=True)
class Verdict:
    status: Status
    field: int = 0
    value: int = 0
    lo: int = 0
    hi: int = 0

    @property
    def name(self) -> str:
        """The profile field a BAD_FIELD verdict names."""
        return PROFILE_FIELDS[self.field].name

    def explain(self) -> str:
        if self.status == Status.BAD_FIELD:
            name = self.name
            if name == "bod_flags" and self.hi == 0:
                return (f"bod_flags={self.value}: the channel has no Bandwidth-on-Demand block, "
                        f"so BoD cannot be on (the range is 0 .. 0)")
            if name.startswith("bod_bg") and name != "bod_bg_count":
                return (f"{name}={self.value:#x}: a background level is at most "
                        f"{self.hi & 0xFFFF} slots (bits 15..0) for at least 1 superframe "
                        f"(bits 31..16)")
            return f"{name}={self.value} is outside {self.lo} .. {self.hi}"
        if self.status == Status.BUDGET:
            return f"the delay line needs {self.value} words, the channel has {self.hi}"
        if self.status == Status.THROUGHPUT:
            return (f"the profile's rate needs up to {self.value} words per 65536 cycles of "
                    f"delay-line bandwidth, the board guarantees this channel {self.hi} (with "
                    f"the other channel busy): a lower rate fits (with BoD, a slower carrier; an "
                    f"unshaped channel counts at the port's line rate), and so may a longer "
                    f"minimum frame or a larger overhead")
        return self.status.name


def field_verdict(fields: dict[str, int], params: ChannelParams,
                  bod_allowed: bool) -> Verdict | None:
    """The first field of ``fields`` (register values, every name of ``PROFILE_FIELDS``) that a
    channel built with ``params`` cannot run, or None. ``bod_allowed``: the channel has the BoD
    block."""
    v = fields

    def bad(name, lo, hi):
        return Verdict(Status.BAD_FIELD, INDEX[name], v[name], lo, hi)

    for f in PROFILE_FIELDS:
        if not 0 <= v[f.name] < 1 << f.width:
            return bad(f.name, 0, (1 << f.width) - 1)
    if v["loss_mode"] > 2:
        return bad("loss_mode", 0, 2)
    if v["rate_den"] < 1:
        return bad("rate_den", 1, (1 << 32) - 1)
    if v["rate_num"] >= v["rate_den"]:
        return bad("rate_num", 0, v["rate_den"] - 1)
    if v["rate_q"] == 0 and v["rate_num"] and 8 * v["rate_num"] < v["rate_den"]:
        return bad("rate_num", (v["rate_den"] + 7) // 8, v["rate_den"] - 1)   # <= 8 bytes/cycle
    if not 1 <= v["min_len"] <= v["max_len"]:
        return bad("min_len", 1, v["max_len"])
    if v["max_len"] > params.max_frame:
        return bad("max_len", v["min_len"], params.max_frame)
    bod = bool(v["bod_flags"] & BOD_ENABLE)
    cap = params.queue_cap(bod and bod_allowed)
    if not 1 <= v["queue_frames"] <= cap:
        return bad("queue_frames", 1, cap)
    if v["queue_bytes"] < v["min_len"]:
        return bad("queue_bytes", v["min_len"], (1 << 32) - 1)
    if params.delta_coded and not bod:
        # A frame's serialisation takes fewer than FRAME_SPAN cycles (satemu.depdelta_model).
        frame, frac = v["max_len"] + v["overhead"], int(v["rate_num"] > 0)
        if frame * (v["rate_q"] + frac) >= FRAME_SPAN:
            return bad("rate_q", 0, (FRAME_SPAN - 1) // frame - frac)
    if bod:
        return _bod_verdict(v, bod_allowed, bad, params)
    return None


def _bod_verdict(v: dict[str, int], bod_allowed: bool, bad,
                 params: ChannelParams) -> Verdict | None:
    """The BoD fields, when BoD is on: what the BoD block (``satemu.bod_model``) can run. Where
    the queue may hold more frames than the chip holds departure times, a slot carries fewer
    than ``slot_frames_max`` frames."""
    if not bod_allowed:
        return bad("bod_flags", 0, 0)
    # A slot takes fewer than SLOT_SPAN cycles where the queue is delta-coded.
    slot_max = SLOT_SPAN - 1 if params.delta_coded else (1 << 32) - 1
    if not 32 <= v["bod_slot_cycles"] <= slot_max:
        return bad("bod_slot_cycles", 32, slot_max)
    if v["bod_slots"] < 1:
        return bad("bod_slots", 1, 0xFFFF)
    if v["bod_slot_bytes"] < 1:
        return bad("bod_slot_bytes", 1, 0xFFFF)
    if v["queue_frames"] > params.queue_onchip:
        most = params.slot_frames_max() * (v["min_len"] + v["overhead"]) - 1
        if v["bod_slot_bytes"] > most:
            return bad("bod_slot_bytes", 1, most)
    carrier = v["bod_slots"] * BOD_RATE_ONE
    for name in ("bod_cra", "bod_rbdc_max"):
        if v[name] > carrier:
            return bad(name, 0, carrier)
    if v["bod_req_period"] < 1:
        return bad("bod_req_period", 1, 0xFFFF)
    if not 1 <= v["bod_latency"] <= BOD_LATENCY_MAX:
        return bad("bod_latency", 1, BOD_LATENCY_MAX)
    if not 1 <= v["bod_bg_count"] <= BOD_BG_LEVELS:
        return bad("bod_bg_count", 1, BOD_BG_LEVELS)
    for i in range(v["bod_bg_count"]):
        level = v[f"bod_bg{i}"]
        # slots (bits 15..0) at most bod_slots, for superframes (bits 31..16) at least 1
        if level & 0xFFFF > v["bod_slots"] or level >> 16 < 1:
            return bad(f"bod_bg{i}", 1 << 16, 0xFFFF_0000 | v["bod_slots"])
    return None


def validate(fields: dict[str, int], hw: Hardware, channel: int) -> Verdict:
    """Verdict on a profile for ``channel`` of the box ``hw``, given as register values (every
    name of PROFILE_FIELDS): the firmware's, exactly."""
    params = hw.channel_params(channel)
    verdict = field_verdict(fields, params, bool(hw.bod_mask >> channel & 1))
    if verdict:
        return verdict
    regs = ChannelRegs(**fields, mem_base=0, mem_size=hw.mem_words)
    need = delay_line_budget(regs, params, hw.f_clk, hw.port_bps)
    if need > hw.mem_words:
        return Verdict(Status.BUDGET, 0, need, 0, hw.mem_words)
    return (check_throughput(regs, hw.f_clk, hw.port_bps, hw.wpc(channel), params)
            or Verdict(Status.OK))


def check_registers(regs: ChannelRegs, params: ChannelParams) -> str | None:
    """Why the channel built with ``params`` cannot run ``regs``, or None: the field rules of
    ``field_verdict`` (BoD only where ``params.bod``), and a memory region that fits its
    registers and the address space (the firmware sets the region itself)."""
    verdict = field_verdict(profile_fields(regs), params, params.bod)
    if verdict:
        return verdict.explain()
    for name in ("mem_base", "mem_size"):
        width = REGMAP[name].width
        if not 0 <= getattr(regs, name) < 1 << width:
            return f"{name}={getattr(regs, name)} does not fit its {width}-bit register"
    if regs.mem_base + regs.mem_size > 1 << params.addr_width:
        return (f"memory region {regs.mem_base} + {regs.mem_size} words exceeds the address "
                f"space of 2^{params.addr_width} words")
    return None


def check_throughput(regs: ChannelRegs, f_clk: int, port_bps: int, mem_wpc: int,
                     params: ChannelParams) -> Verdict | None:
    """THROUGHPUT when the delay-line words per 65536 cycles the channel can demand
    (``delay_line_traffic``, num / den) exceed ``mem_wpc``, exactly: num > mem_wpc x den. The
    verdict's value is the demand rounded up (at most 2^64 - 1), its hi ``mem_wpc``. A
    ``mem_wpc`` of 0 means the board does not limit it."""
    if not mem_wpc:
        return None
    num, den = delay_line_traffic(regs, f_clk, port_bps, params)
    if num <= mem_wpc * den:
        return None
    need = min((num + den - 1) // den, U64_MAX) if den else U64_MAX
    return Verdict(Status.THROUGHPUT, 0, need, 0, mem_wpc)
