# SPDX-License-Identifier: BSD-2-Clause
"""The channel's parameter types, shared by the gateware (``satemu_gw``) and the reference models.

* :class:`ChannelParams` fixes the gateware at elaboration; the models read the same values.
* :class:`ChannelRegs` holds a profile as register values (``satemu.base.regmap``), the numbers the
  gateware sees; its defaults are the gateware's reset values.
* :class:`Fate` is what became of a frame: delivered, or dropped with its cause.
* ``BEAT`` is the layout of one 64-bit beat of a frame on the channels' streams, least
  significant field first: the gateware's ``layouts.Beat`` and the LiteX ports' bit positions
  (``beat_field``) are made from it.

Nothing here imports Amaranth or LiteX, so the host tool carries it without them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from satemu.base.queues import length_bits
from satemu.base.regmap import BOD_ENABLE, LOSS_NONE

__all__ = ["ChannelParams", "ChannelRegs", "Fate", "FATE_COUNTER", "TERMINAL_COUNTERS",
           "ConfigError", "BEAT", "BEAT_BITS", "beat_field", "frame_beats", "frame_words",
           "MAX_TERMINALS", "MAX_FRAMED"]

# Terminals a channel can tell apart, with frames and synthetic (a record's terminal field, the
# firmware's tables; docs/bod.md, "Terminals").
MAX_TERMINALS = 64
# Terminals with frames a channel can tell apart: a frame's terminal travels in 4 bits with it
# through the channel (15: no one's; satemu.base.terminals.TERMINAL_BITS).
MAX_FRAMED = 15

# One beat: ``data`` carries byte 0 in bits 7..0; ``nbytes`` (1..8) and ``err`` (a bad FCS
# reported by the MAC) mean something on the last beat only, where other beats carry 8 bytes.
BEAT = (("data", 64), ("last", 1), ("nbytes", 4), ("err", 1))
BEAT_BITS = sum(width for _, width in BEAT)


def beat_field(name: str) -> slice:
    """The bits of field ``name`` within a beat, as a slice of its flattened payload."""
    start = 0
    for field_name, width in BEAT:
        if field_name == name:
            return slice(start, start + width)
        start += width
    raise KeyError(name)


def frame_beats(length: int) -> int:
    """64-bit beats a frame of ``length`` bytes occupies."""
    return (length + 7) // 8


def frame_words(length: int) -> int:
    """Memory words a stored frame occupies: one header word, then its beats."""
    return 1 + frame_beats(length)


class ConfigError(ValueError):
    """A physical setting that the channel registers cannot hold; the message names the field."""


@dataclass(frozen=True)
class ChannelParams:
    """Elaboration-time parameters of the channel gateware, shared by the model and the RTL."""

    max_frame: int = 2048        # bytes stored per frame; the longest max_len can be
    ingress_beats: int = 512     # on-chip ingress FIFO, 64-bit beats (holds frames until decided)
    queue_depth: int = 1024      # the hard cap on the bottleneck queue, in frames
    # Departure times the channel holds on chip (0: all ``queue_depth``). Where it holds fewer,
    # the rest wait in a ring of ``spill_words`` words just past the delay-line region
    # (satemu_gw.depqueue, docs/architecture.md "Queues deeper than the chip").
    queue_fifo: int = 0
    # Frames the BoD block's queue holds (0: ``queue_onchip``): the cap of a queue BoD serves.
    # It is on chip, a block-RAM FIFO of the frames' lengths only (satemu_gw.bod_slots).
    bod_queue: int = 0
    # Frames a channel without that ring holds on chip, each departure coded as its distance from
    # the one before (0: it holds ``queue_onchip`` whole departure times). ``Hardware`` gives such
    # a channel this queue depth (``delta_coded``; satemu_gw.depdelta, satemu.model.depdelta).
    delta_queue: int = 0
    playout_beats: int = 512     # on-chip playout FIFO between memory and egress
    latency_floor: int = 2048    # L: departure-to-egress latency never falls below this (cycles)
    addr_width: int = 28         # memory word address width (64-bit words)
    queue_limit_bits: int = 16   # width of the queue_frames register
    # The egress port's cost per frame, so back-to-back frames never wait for it: a frame of L
    # bytes occupies ceil((max(L, port_pad) + port_fcs) / 8) + port_gap cycles of the source
    # (0, 0, 0: one cycle per beat; a LiteEth MAC adds padding to 60 bytes, the FCS, a
    # preamble beat and the inter-frame gap, see docs/architecture.md, "Ports").
    port_pad: int = 0
    port_fcs: int = 0
    port_gap: int = 0
    # The delay line's pace, in cycles per memory word (0: none). On a board whose memory
    # guarantees each channel fewer words than the port can send (``boards.Board.mem_wpc``, at
    # most 65536 / mem_pace words per 65536 cycles), frame i leaves no earlier than
    # ``mem_pace`` x its words after frame i-1's paced release, so that frames falling due
    # together (after a delay cut) leave at the rate the memory can read them, as the model
    # says, rather than late (docs/architecture.md, "The memory's pace").
    mem_pace: int = 0
    bod: bool = False            # Bandwidth-on-Demand block (the return channel's)
    bod_ring: int = 1024         # superframe records the BoD statistics ring holds
    # Width of the statistics counters' registers: they read the count modulo 2**bits (the
    # firmware folds narrower ones into 64-bit counts, satemu_fold_counters); the model counts
    # in full.
    counter_bits: int = 64
    # The frame log (satemu_gw.framelog, satemu.model.framelog): a record of every frame decided
    # and every frame sent, in a ring in memory; ``log_fifo`` records wait on chip for the
    # writer. A board leaves it out (False) where its FPGA has no room for it.
    frame_log: bool = False
    log_fifo: int = 16
    # Test only (0 on every board): the reset values of the delay line's 32-bit word counts
    # (words admitted, written, read and freed, each mod 2**32) and of every statistics counter,
    # so that a short run crosses their wrap (tests/gateware/test_channel.py,
    # test_soak_prefix_crosses_the_wraps). The model starts its counters at ``counter_init``
    # too; STATS.CLEAR still zeroes them. ``now_init`` is where the simulation top's timebase
    # starts (sim/channel/top.py; a board's timebase is its SoC's, from 0); the model needs no
    # preset for it, since it takes the arrival cycles as they come.
    word_init: int = 0
    counter_init: int = 0
    now_init: int = 0
    # Terminals (satemu.base.terminals, docs/bod.md "Terminals"): the most with frames a
    # channel tells apart (0: none, the channel is one terminal), the most synthetic ones its
    # BoD block serves besides, and the entries of the level table their schedules index.
    terminals: int = 0
    synthetic: int = 0
    demand_levels: int = 0
    # Per-frame jitter (satemu_gw.jitter, satemu.model.jitter): its two table banks, a PRNG of
    # its own and a multiplier. A board leaves it out (False) where its FPGA has no room.
    jitter: bool = False
    # Corruption (satemu_gw.corrupt, satemu.model.corrupt): three PRNGs, a multiply and a bit
    # flip in the delay line's writer. A board leaves it out (False) where it has no room.
    corrupt: bool = False
    # Duplication (satemu_gw.duplicate, satemu.model.duplicate): two PRNGs and a frame's worth
    # of beats in the writer for the copy. A board leaves it out (False) where it has no room.
    duplicate: bool = False
    # ECN marking (satemu_gw.ecnparse, ecnmark; satemu.model.ecn): which frames are ECN-capable
    # IP packets, and their CE mark as the writer stores them. A board leaves it out (False)
    # where it has no room.
    ecn: bool = False

    def __post_init__(self):
        if self.max_frame % 8 or self.ingress_beats < 2 * self.max_frame // 8:
            raise ValueError("ingress FIFO must hold two longest frames")
        if self.playout_beats < self.max_frame // 8:
            raise ValueError("playout FIFO must hold the longest frame")
        if not 32 <= self.counter_bits <= 64:
            raise ValueError("statistics counters must be 32 to 64 bits wide")
        if not 0 <= self.word_init < 1 << 32 or not 0 <= self.counter_init < 1 << self.counter_bits:
            raise ValueError("word_init and counter_init must fit their counters")
        if not 0 <= self.now_init < 1 << 63:
            raise ValueError("now_init must leave the 64-bit timebase room")
        if not 0 <= self.queue_fifo <= self.queue_depth or self.queue_depth >= 1 << 16:
            raise ValueError("queue_fifo must be at most queue_depth, which is below 2^16")
        if not 0 <= self.mem_pace < 1 << 8:
            raise ValueError("mem_pace must be 0 to 255 cycles per word")
        if self.queue_depth > self.queue_onchip and self.queue_onchip < 16:
            raise ValueError("a queue that spills to memory needs 16 entries on chip or more")
        if not 0 <= self.bod_queue < 1 << self.queue_limit_bits:
            raise ValueError("bod_queue must fit the queue_frames register")
        if not 0 <= self.delta_queue < 1 << self.queue_limit_bits:
            raise ValueError("delta_queue must fit the queue_frames register")
        if self.delta_queue and not length_bits(self.max_frame):
            raise ValueError("a delta-coded queue holds lengths up to 2048 bytes")
        if self.delta_coded and self.queue_depth != self.delta_queue:
            raise ValueError("a delta-coded channel's queue_depth must be its delta_queue")
        if not 0 <= self.terminals <= MAX_FRAMED or not 0 <= self.synthetic <= MAX_TERMINALS \
                or self.terminals + self.synthetic > MAX_TERMINALS:
            raise ValueError(f"at most {MAX_FRAMED} terminals with frames and {MAX_TERMINALS} "
                             f"terminals in all")
        if self.max_frame >= 1 << 12:
            raise ValueError("frames of up to 4095 bytes (a header's 12-bit length)")
        if (self.synthetic or self.demand_levels) and not self.terminals:
            raise ValueError("synthetic terminals and their levels need a terminal table")

    @property
    def queue_onchip(self) -> int:
        """Departure times held on chip: the queue before it spills."""
        return self.queue_fifo or self.queue_depth

    @property
    def bod_depth(self) -> int:
        """Frames the BoD block's queue holds."""
        return self.bod_queue or self.queue_onchip

    @property
    def delta_coded(self) -> bool:
        """Whether the chip holds the queue's departure times as distances (``delta_queue``):
        a channel of ``delta_queue`` frames without the ring."""
        return bool(self.delta_queue) and not self.spill_words

    def queue_cap(self, bod: bool) -> int:
        """The hard cap on the queue, in frames, with BoD on or off."""
        return self.bod_depth if bod else self.queue_depth

    def terminal_cap(self, bod: bool, framed: int) -> int:
        """The hard cap on each queue of ``framed`` terminals with frames, each of its own: the
        queue's cap split into the fewest equal parts, a power of two, that give each one."""
        return self.queue_cap(bod) >> (max(framed, 1) - 1).bit_length()   # terminals.share_bits

    @property
    def queue_most(self) -> int:
        """The most frames the queue can hold, BoD on or off where the channel has the block."""
        return max(self.queue_cap(False), self.queue_cap(True) if self.bod else 0)

    def slot_frames_max(self) -> int:
        """With BoD on and a queue deeper than the chip's departure times, the most frames one
        slot may carry: the frames it releases wait among those departure times until they
        leave, two slots' worth at most (docs/bod.md, "The queue"); a quarter of them, for margin."""
        return max(self.queue_onchip // 4, 1)

    @property
    def spill_words(self) -> int:
        """The departure-time ring past the delay-line region, in 64-bit words (one a frame, a
        power of two; 0: the chip holds every departure time)."""
        return 1 << 16 if self.queue_depth > self.queue_onchip else 0

    def spills(self, regs: ChannelRegs) -> bool:
        """Whether a queue of these register values can outgrow the chip, so that frames cost
        one more word of delay-line traffic each (a departure time written out and read back).
        A queue BoD serves never does: it waits in the BoD block, and the chip holds its
        departures (a channel without the block ignores the BoD flag)."""
        return bool(self.spill_words) and not (regs.bod and self.bod) and min(
            regs.queue_frames, regs.queue_bytes // max(regs.min_len, 1),
            self.queue_depth) > self.queue_onchip

    @property
    def max_beats(self) -> int:
        return self.max_frame // 8

    def port_cycles(self, length: int) -> int:
        """Cycles a frame of ``length`` bytes keeps the egress port busy."""
        return (max(length, self.port_pad) + self.port_fcs + 7) // 8 + self.port_gap

    def paced(self, release: int, pace_free: int, length: int) -> int:
        """A frame's release cycle after the memory's pace: ``mem_pace`` cycles for each of its
        words in the delay line (``frame_words``) after the previous frame's paced release
        ``pace_free``; the release itself where the board has no pace."""
        if not self.mem_pace:
            return release
        return max(release, pace_free + self.mem_pace * frame_words(length))


@dataclass(frozen=True)
class ChannelRegs:
    """Register values of one channel profile; defaults are the gateware's reset values."""

    loss_mode: int = LOSS_NONE
    loss_p: int = 0
    ge_p: int = 0
    ge_r: int = 0
    ge_loss_good: int = 0
    ge_loss_bad: int = 0
    seed: int = 1
    rate_q: int = 0
    rate_num: int = 0
    rate_den: int = 1
    overhead: int = 0
    delay: int = 0
    queue_frames: int = 1024
    queue_bytes: int = 0xFFFF_FFFF
    min_len: int = 60
    max_len: int = 1518
    mem_base: int = 0
    mem_size: int = 0
    # Bandwidth-on-Demand (satemu.model.bod); off by default.
    bod_flags: int = 0
    bod_slot_cycles: int = 1024
    bod_slots: int = 1
    bod_slot_bytes: int = 1
    bod_cra: int = 0
    bod_rbdc_max: int = 0
    bod_rbdc_timeout: int = 0
    bod_vbdc_max: int = 0
    bod_req_period: int = 1
    bod_latency: int = 1
    bod_bg_count: int = 1
    bod_bg0: int = 1 << 16
    bod_bg1: int = 0
    bod_bg2: int = 0
    bod_bg3: int = 0
    bod_bg4: int = 0
    bod_bg5: int = 0
    bod_bg6: int = 0
    bod_bg7: int = 0
    # The terminal table (satemu.base.terminals.TerminalTable.registers): none by default.
    term_match: int = 0
    term_framed: int = 0
    term_synthetic: int = 0
    term_unclassified: int = 0xFF
    # Jitter (satemu.model.jitter): none by default.
    jit_sigma: int = 0
    jit_corr: int = 0
    jit_bank: int = 0
    # Corruption (satemu.model.corrupt): none by default.
    cor_p: int = 0
    cor_corr: int = 0
    # Duplication (satemu.model.duplicate): none by default.
    dup_p: int = 0
    dup_corr: int = 0
    # ECN marking (satemu.model.ecn): none by default.
    ecn_sojourn: int = 0
    ecn_queue: int = 0

    @property
    def bod(self) -> bool:
        return bool(self.bod_flags & BOD_ENABLE)


class Fate(enum.IntEnum):
    DELIVERED = 0
    RUNT = 1
    OVERSIZE = 2
    ERROR = 3
    LOSS = 4
    QUEUE = 5
    MEM = 6
    UNCLASSIFIED = 7        # of no declared terminal, on a channel that drops those


# A fate report (the simulated board's, the board model's traffic.fates) of a copy has this bit
# set besides its Fate: duplication's copy, decided right after its original.
FATE_COPY = 8

FATE_COUNTER = {Fate.RUNT: "drop_runt", Fate.OVERSIZE: "drop_oversize", Fate.ERROR: "drop_error",
                Fate.LOSS: "drop_loss", Fate.QUEUE: "drop_queue", Fate.MEM: "drop_mem",
                Fate.UNCLASSIFIED: "drop_unclassified"}
# Each terminal's counters (a channel with a terminal table; docs/bod.md, "Terminals"): the
# channel's own but for ``drop_overrun``, which the ingress counts before a frame is anyone's.
TERMINAL_COUNTERS = ["rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "drop_runt",
                     "drop_oversize", "drop_error", "drop_unclassified", "drop_loss",
                     "drop_queue", "drop_mem", "late"]
