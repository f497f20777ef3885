# SPDX-License-Identifier: BSD-2-Clause
"""A box's hardware as its firmware knows itself and HELLO reports it (``Hardware``): what the
validator checks a profile against, and what ``satemu.base.boards`` gives each board."""

from __future__ import annotations

from dataclasses import dataclass, replace

from satemu.base.params import ChannelParams
from satemu.base.protocol import CHANNEL_NAMES, LIMIT_FIELDS, Impairment
from satemu.base.regmap import JITTER_TABLE

__all__ = ["Hardware", "channel_index", "channel_pace"]


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
        bod = name in self.bod_channels
        params = replace(self.params, bod=bod,
                         mem_pace=channel_pace(self.params, self.mem_paces, name))
        if not bod:         # synthetic terminals need the BoD block; the table only counts
            params = replace(params, synthetic=0, demand_levels=0)
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
                  "log_records": self.log_records, "timeline_entries": self.timeline_entries,
                  "terminals": p.terminals, "synthetic": p.synthetic,
                  "demand_levels": p.demand_levels,
                  "jitter_table": JITTER_TABLE if p.jitter else 0,
                  "impairments": ((Impairment.CORRUPT if p.corrupt else 0)
                                  | (Impairment.DUPLICATE if p.duplicate else 0)
                                  | (Impairment.ECN if p.ecn else 0))}
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
                               frame_log=limits.get("log_records", 0) > 0,
                               terminals=limits.get("terminals", 0),
                               synthetic=limits.get("synthetic", 0),
                               demand_levels=limits.get("demand_levels", 0),
                               jitter=limits.get("jitter_table", 0) > 0,
                               corrupt=bool(limits.get("impairments", 0)
                                            & Impairment.CORRUPT),
                               duplicate=bool(limits.get("impairments", 0)
                                              & Impairment.DUPLICATE),
                               ecn=bool(limits.get("impairments", 0) & Impairment.ECN))
        spill = tuple(name for i, name in enumerate(CHANNEL_NAMES)
                      if limits["spill_mask"] >> i & 1)
        return cls(f_clk=limits["f_clk"], mem_words=limits["mem_words"],
                   port_bps=limits["port_bps"], params=params, bod_channels=bod_channels,
                   spill_channels=spill,
                   mem_wpc=(limits["mem_wpc_forward"], limits["mem_wpc_return"]),
                   log_records=limits.get("log_records", 0),
                   timeline_entries=limits.get("timeline_entries", 0))
