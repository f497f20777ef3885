# SPDX-License-Identifier: BSD-2-Clause
"""Every board satemu runs on, one record each: the single source of its facts.

A record holds the board's system clock, its ports' line rate, its delay-line memory (the DRAM
chip, the words per channel, the throughput each channel is guaranteed), its CPU and memories,
its channels' gateware parameters (port framing, queue depth, the BoD block, counter width), its
programmer and its bitstream flow. Everything else derives from it:

* ``satemu show --board`` and the host's profile checks (``Board.hardware``);
* ``satemu flash`` (``Board.programmer``);
* the LiteX targets ``hw/<board>.py``, which add only pins and clocks (``constraints/``);
* the simulated board and its board variants (``hw.satemu_soc``, ``sim.board``);
* the bitstream flow (``hw.bitstream``, ``Board.bitstream``);
* the firmware's board header (``satemu.base.gen_c.board_header``): its limits, delay-line layout and
  channel parameters, so that each firmware reports and enforces what its gateware has.

Adding a board is a record here, a target file of pins and clocks in ``hw/`` and a constraints
file. Nothing here imports LiteX, so the host tool carries the table without the toolchain.
"""

from __future__ import annotations

from dataclasses import dataclass

from satemu.base.params import ChannelParams
from satemu.base.protocol import CHANNEL_NAMES
from satemu.base.hardware import Hardware, channel_pace

__all__ = ["Board", "BOARDS", "DEFAULT_BOARD", "Cpu", "Bitstream", "Programmer", "MAC_PORT"]


@dataclass(frozen=True)
class Programmer:
    """How openFPGALoader reaches a board (satemu.box.flash, which checks these names against the
    installed tool)."""

    loader_board: str | None    # openFPGALoader's name for the board (-b), where it has one
    cable: str                  # the default programmer, as an openFPGALoader cable name (-c)
    programmer: str             # the same in words, for messages


@dataclass(frozen=True)
class Cpu:
    """The soft CPU that runs the firmware, and its memories (the firmware in ROM, its data and
    stack in SRAM)."""

    type: str                   # LiteX's cpu_type
    variant: str                # LiteX's cpu_variant
    rom_bytes: int = 0x10000
    sram_bytes: int = 0x4000


@dataclass(frozen=True)
class Bitstream:
    """How a board's bitstream is built (``hw.bitstream``): its LiteX target module (a SoC class,
    ``main()``, and ``dram_phy_settings()`` for its variant of the simulated board), its pin
    and clock data (``constraints/<constraints>.py``), the build's name, nextpnr's extra
    options and its seed."""

    target: str
    constraints: str
    build_name: str
    nextpnr_args: str = ""
    seed: int = 1               # nextpnr's placement seed: the one whose build is reported


# The egress cost of a LiteEth MAC port, as the channels schedule it: padding to 60 bytes,
# 4 bytes of FCS, then a preamble beat and two cycles of gap before the next frame may start
# (ChannelParams.port_pad/port_fcs/port_gap; hw.ethport, docs/architecture.md "Ports").
MAC_PORT = {"port_pad": 60, "port_fcs": 4, "port_gap": 3}
# Queues of up to 65,535 frames: 1,024 departure times on chip, the rest in a ring of 2^16 words
# past each delay line (ChannelParams.queue_fifo). One bandwidth-delay product of geo-large's
# forward link is 12,500 frames of 1500 bytes. The simulated board has it in both channels, the
# Versa-5G in its forward channel (``Board.spill_channels``); its return channel holds 16,384
# departure times on chip as distances (``ChannelParams.delta_queue``). A queue BoD serves
# waits in the BoD block's own FIFO instead (``ChannelParams.bod_queue``). geo-medium's return
# queue, 750 KB, is 12,500 frames of ACKs (60 bytes).
DEEP_QUEUE = {"queue_depth": 65535, "queue_fifo": 1024}


@dataclass(frozen=True)
class Board:
    """One board. ``channel`` are its channels' gateware parameters without the BoD block;
    ``bod_channels`` names the channels built with it (``channel_params`` gives each one's).
    Each channel's delay line is ``mem_words`` 64-bit words in the DRAM's upper half (forward
    first, ``delay_line_base``); ``mem_wpc`` is the throughput the board guarantees each of them
    (forward, return) while the other takes its own, in words per 65536 cycles (0: not
    limited), which its firmware enforces: the words each channel's pace allows
    (``ChannelParams.mem_pace``, or ``mem_paces`` where the channels' differ).
    ``dram`` names the DRAM chip (a ``litedram.modules`` class) and ``dram_rate`` LiteDRAM's
    clock ratio for it. A board whose channels have the frame log (``channel.frame_log``) keeps
    each channel's ring of ``log_words`` words (``log_words // 2`` records, a power of two) in
    the DRAM's lower half, which the CPU does not use otherwise (forward first, ``log_base``);
    the firmware reads the rings there for READ_LOG."""

    name: str
    title: str
    f_clk: int                  # Hz: the system clock, which every register counts
    port_bps: int               # the ports' line rate: bounds an unshaped channel
    mem_words: int
    channel: ChannelParams
    bod_channels: tuple[str, ...]
    cpu: Cpu
    dram: str
    dram_rate: str
    programmer: Programmer | None = None     # None: nothing to flash (the simulated board)
    bitstream: Bitstream | None = None       # None: no bitstream (the simulated board)
    log_words: int = 0                       # each channel's frame-log ring (0: no log)
    timeline_entries: int = 0                # the timeline store's entries (0: no timelines)
    # The channels built with the departure-time ring, where ``channel`` holds fewer departure
    # times on chip than its queue's cap (the others hold their queues on chip: as distances,
    # ``channel.delta_queue`` frames, where that is not 0).
    spill_channels: tuple[str, ...] = CHANNEL_NAMES
    # Each channel's memory pace (forward, return), where the channels' differ (() : the pace
    # of ``channel``, ``ChannelParams.mem_pace``, on both).
    mem_paces: tuple[int, ...] = ()

    @property
    def mem_wpc(self) -> tuple[int, int]:
        """The delay-line throughput the board guarantees each channel (forward, return), in
        words per 65536 cycles (0: not limited): as many as the channel's pace lets leave,
        65536 / mem_pace, so that traffic within the guarantee never waits for the pace
        (docs/architecture.md, "The memory's pace")."""
        paces = (channel_pace(self.channel, self.mem_paces, name) for name in CHANNEL_NAMES)
        return tuple(65536 // pace if pace else 0 for pace in paces)

    def channel_params(self, channel: int | str) -> ChannelParams:
        """The gateware parameters of channel ``channel`` (its number or its name)."""
        return self.hardware.channel_params(channel)

    @property
    def delay_line_words(self) -> int:
        """Each channel's delay line: its ``mem_words`` less the departure-time ring after it
        (``ChannelParams.spill_words``), which ends where the next region starts."""
        return self.mem_words - self.channel.spill_words

    def delay_line_base(self, channel: int) -> int:
        """The first word of channel ``channel``'s delay line: the DRAM's upper half, forward
        first (the lower half is the CPU's main RAM, which the firmware does not use)."""
        return (2 + channel) * self.mem_words

    @property
    def timeline_base(self) -> int:
        """The timeline store's first word: the DRAM's lower half, after the frame-log rings;
        only the CPU reads and writes it."""
        return 2 * self.log_words

    def log_base(self, channel: int) -> int:
        """The first word of channel ``channel``'s frame-log ring: the DRAM's lower half,
        forward first."""
        return channel * self.log_words

    @property
    def log_bits(self) -> int:
        """The ring's records as a power of two (LOG_CTL's bits; 0: no log)."""
        return (self.log_words // 2).bit_length() - 1 if self.log_words else 0

    @property
    def hardware(self) -> Hardware:
        """The board as its firmware reports itself (HELLO): what ``load`` checks profiles
        against on it."""
        return Hardware(f_clk=self.f_clk, mem_words=self.delay_line_words,
                        port_bps=self.port_bps,
                        params=self.channel, bod_channels=self.bod_channels,
                        spill_channels=self.spill_channels, mem_paces=self.mem_paces,
                        mem_wpc=self.mem_wpc, log_records=self.log_words // 2,
                        timeline_entries=self.timeline_entries)


def _board(board: Board) -> tuple[str, Board]:
    for name in board.bod_channels + board.spill_channels:
        if name not in CHANNEL_NAMES:
            raise ValueError(f"{board.name}: no channel {name!r}")
    if board.mem_paces and len(board.mem_paces) != len(CHANNEL_NAMES):
        raise ValueError(f"{board.name}: mem_paces gives a pace for each channel (forward, "
                         f"return)")
    records = board.log_words // 2
    if board.channel.frame_log != (records > 0) or records & (records - 1) \
            or board.log_words % 2 or board.log_words > board.mem_words:
        raise ValueError(f"{board.name}: the frame log needs channel.frame_log and a ring of a "
                         f"power of two records, two words each, in the DRAM's lower half")
    if board.timeline_base + 2 * board.timeline_entries > 2 * board.mem_words:
        raise ValueError(f"{board.name}: the timeline store does not fit the DRAM's lower half")
    return board.name, board


SIM_F_CLK = 6_250_000
# The timeline store's entries (2^18: 4 MiB of the DRAM's lower half): an entry sets one field,
# so even steps of three fields each (a rate: rate_q, rate_num, rate_den) number 87,381, a
# 10-minute trace at 7 ms resolution (docs/architecture.md, "Timelines").
TIMELINE_ENTRIES = 1 << 18

BOARDS: dict[str, Board] = dict(map(_board, [
    # What `make demo` and the system tests run: the SoC in Verilator, at a nominal clock low
    # enough that a second of link time is few cycles, with 64-bit PHYs whose wire carries a
    # beat per cycle (400 Mbit/s, above every built-in profile's rate), a behavioural memory
    # (hw.simmem) holding the upper half of a 128 MiB word space, where the delay lines are,
    # on a 64-bit native port per channel that keeps up with whatever the channels carry (no
    # DRAM controller: ``dram`` is not built here), and a 4096-beat ingress FIFO that absorbs
    # line-rate bursts of that wire (docs/architecture.md, "The simulated board").
    Board("sim", "the simulated board, in Verilator", f_clk=SIM_F_CLK, port_bps=64 * SIM_F_CLK,
          mem_words=1 << 22,
          channel=ChannelParams(ingress_beats=4096, frame_log=True, bod_queue=65535,
                                terminals=8, synthetic=32, demand_levels=256, jitter=True,
                                corrupt=True, duplicate=True, ecn=True, **DEEP_QUEUE,
                                **MAC_PORT),
          bod_channels=("return",),
          # 64 KiB of SRAM: the firmware stages a load's terminal tables there (some 24 KiB
          # for 8 terminals with frames, 32 synthetic and 256 levels a channel).
          cpu=Cpu("vexriscv", "standard", sram_bytes=0x10000), dram="MT48LC16M16",
          dram_rate="1:1",
          # Frame-log rings of 2^10 records: its simulated CPU sends about 2 kB a second over
          # the UART, so a ring takes some 8 s to read (docs/architecture.md, "The frame log").
          log_words=1 << 11, timeline_entries=TIMELINE_ENTRIES),
    # The Lattice ECP5 Versa-5G (LFE5UM5G-45F): DDR3L MT41K64M16 (128 MiB), two RGMII PHYs,
    # VexRiscv minimal and 32-bit counters (which the firmware folds into 64-bit counts) to
    # leave the LUTs to the channels and room to route, a BoD ring of 512 superframes to save
    # block RAM. The departure-time ring in its forward channel only, so that geo-large's 1-BDP
    # forward queue fits (the ring in both did not route); its return channel holds 16,384
    # frames on chip: their departure times as distances (34 block RAMs), and while BoD serves
    # it, the BoD block's FIFO of lengths (12 block RAMs). Its CPU is SERV, as the
    # Colorlight's, about 1,330 LUTs fewer than VexRiscv's minimal variant, and its firmware
    # (about 27 KB) has a ROM of 32 KiB, 14 block RAMs fewer than 64 KiB: with the distances
    # the design did not route with either (docs/hardware.md). Its DDR3 split as its links
    # are: paces of 9 cycles per delay-line word forward and 19 return
    # (mem_wpc 7281 and 3449), which bench/bench_datapath.py --split measured to hold with the
    # forward queue in the ring, together 82% of the lowest total it measured (docs/hardware.md,
    # "The split, measured").
    Board("versa-ecp5", "the Lattice ECP5 Versa-5G", f_clk=55_000_000, port_bps=1_000_000_000,
          mem_words=1 << 22,
          channel=ChannelParams(bod_ring=512, counter_bits=32, bod_queue=16384,
                                delta_queue=16384, **DEEP_QUEUE, **MAC_PORT),
          bod_channels=("return",), spill_channels=("forward",), mem_paces=(9, 19),
          cpu=Cpu("serv", "standard", rom_bytes=0x8000), dram="MT41K64M16", dram_rate="1:2",
          # openFPGALoader 0.10.0 has no entry for the Versa-5G (its "ecp5_evn" is another
          # board); the board's own FT2232H (USB 0403:6010) has JTAG on channel A.
          programmer=Programmer(None, "ft2232", "the board's own FT2232H (USB; JTAG on "
                                                "channel A)"),
          # nextpnr's static placer at seed 3, router2 with timing-driven ripup: with the
          # forward ring, the HeAP placer's placements diverged in router2 at seeds 1 to 8, and
          # without the ripup port A's receive clock missed; protocol 16's netlist diverged at
          # seed 2 and missed port A's receive clock at seed 1 (docs/hardware.md).
          bitstream=Bitstream("hw.versa_ecp5", "versa_ecp5", "satemu_versa_ecp5",
                              "--router router2 --placer static --tmg-ripup", seed=3),
          timeline_entries=TIMELINE_ENTRIES),
    # The Colorlight 5A-75B, revision 8.0 (LFE5U-25F): SDR SDRAM M12L64322A (8 MiB, so 2 MiB
    # delay lines), SERV and small CPU memories, no BoD block, 512-frame queues and 32-bit
    # counters that the firmware folds into 64-bit counts, to fit its LUTs (docs/hardware.md).
    Board("colorlight-5a-75b", "the Colorlight 5A-75B", f_clk=40_000_000,
          port_bps=1_000_000_000, mem_words=1 << 18,
          # A pace of 15 cycles per word: the fewest within 90% of its lowest measured
          # throughput (5171 words per 65536 cycles), so mem_wpc is 4369 (docs/hardware.md).
          channel=ChannelParams(queue_depth=512, bod_ring=512, counter_bits=32, mem_pace=15,
                                **MAC_PORT),
          bod_channels=(), cpu=Cpu("serv", "standard", rom_bytes=0x8000, sram_bytes=0x2000),
          dram="M12L64322A", dram_rate="1:1",
          # No programmer of its own: a JTAG adapter on the J27 pads. openFPGALoader's
          # "colorlight" entry names no cable, so one is named: a single-channel FT232H.
          programmer=Programmer("colorlight", "ft232", "a JTAG adapter wired to the J27 pads"),
          # Seed 4: with protocol 16's netlist seed 2 missed port B's receive clock, seed 1
          # diverged in router2 and seed 3 missed the system clock; protocol 14's met at seed 2,
          # protocol 13's at seed 1 (docs/hardware.md).
          bitstream=Bitstream("hw.colorlight_5a_75b", "colorlight_5a_75b",
                              "satemu_colorlight_5a_75b", "--router router2", seed=4),
          # The timeline store fills the DRAM's lower half (4 MiB).
          timeline_entries=TIMELINE_ENTRIES),
]))

DEFAULT_BOARD = "sim"           # the one `make demo` runs
