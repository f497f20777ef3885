# SPDX-License-Identifier: BSD-2-Clause
"""The boards satemu knows: what a profile is checked against without one (``satemu show
--board``), and how a real one is programmed (``satemu flash --board``)."""

from __future__ import annotations

from dataclasses import dataclass

from .channel_model import ChannelParams
from .profile import Hardware

__all__ = ["Board", "BOARDS", "DEFAULT_BOARD", "Programmer"]


@dataclass(frozen=True)
class Programmer:
    """How openFPGALoader reaches a board (satemu.flash, which checks these names against the
    installed tool)."""

    loader_board: str | None    # openFPGALoader's name for the board (-b), where it has one
    cable: str                  # the default programmer, as an openFPGALoader cable name (-c)
    programmer: str             # the same in words, for messages


@dataclass(frozen=True)
class Board:
    """A board as its firmware reports itself (HELLO): ``hardware`` is what ``load`` would check
    a profile against on it. The numbers are copies, so that the host tool needs neither
    ``hw`` nor LiteX; tests/host/test_boards.py holds them equal to the board targets'.
    ``programmer`` is None for the simulated board, which has nothing to flash."""

    title: str
    hardware: Hardware
    programmer: Programmer | None = None


# Every board's channels have a LiteEth MAC's port costs (padding to 60 bytes, 4 bytes of FCS,
# a preamble beat and the gap); the BoD block is in the return channel (Hardware.bod_channels),
# except on the Colorlight, whose FPGA is too small for it. ``params`` are the forward
# channel's, without it, as ``Profile.check`` expects.
BOARDS: dict[str, Board] = {
    # hw.satemu_soc (sim_clock("sim"), MEM_WORDS; no mem_wpc given to add_channels) and
    # sim.board.sim_channel_params: what `make demo` and the system tests run.
    "sim": Board("the simulated board, in Verilator", Hardware(
        f_clk=6_250_000,                    # SIM_F_CLK
        mem_words=1 << 22,                  # 32 MiB per channel
        port_bps=400_000_000,               # SIM_PORT_BPS: a 64-bit beat per cycle
        params=ChannelParams(ingress_beats=4096, port_pad=60, port_fcs=4, port_gap=3),
        mem_wpc=0)),                        # its 64-bit memory keeps up: not limited
    # hw.versa_ecp5: SYS_CLK_FREQ, MEM_WORDS, PORT_BPS, MEM_WPC, channel_params().
    "versa-ecp5": Board("the Lattice ECP5 Versa-5G", Hardware(
        f_clk=55_000_000,
        mem_words=1 << 22,                  # 32 MiB per channel, the DDR3's upper half
        port_bps=1_000_000_000,             # RGMII at 1 Gbit/s
        params=ChannelParams(port_pad=60, port_fcs=4, port_gap=3, bod_ring=512),
        mem_wpc=6000),                      # measured by bench/bench_datapath.py, less 10%
        # openFPGALoader 0.10.0 has no entry for the Versa-5G (its "ecp5_evn" is the ECP5-5G
        # Evaluation Board, another board). The Versa's own FT2232H (USB 0403:6010) has JTAG on
        # channel A, which is what the "ft2232" cable drives.
        Programmer(None, "ft2232", "the board's own FT2232H (USB; JTAG on channel A)")),
    # hw.colorlight_5a_75b: the same names; it has no BoD.
    "colorlight-5a-75b": Board("the Colorlight 5A-75B", Hardware(
        f_clk=40_000_000,
        mem_words=1 << 18,                  # 2 MiB per channel, the SDRAM's upper half
        port_bps=1_000_000_000,
        params=ChannelParams(port_pad=60, port_fcs=4, port_gap=3, queue_depth=512,
                             bod_ring=512, counter_bits=32),   # the firmware folds the counters
        bod_channels=(),
        mem_wpc=4600),                      # measured by bench/bench_datapath.py, less 10%
        # The 5A-75B has no programmer of its own: a JTAG adapter is wired to the J27 pads.
        # openFPGALoader's "colorlight" entry names no default cable (it would fall back to
        # ft2232), so one is named here: a single-channel FT232H adapter, whose MPSSE pins are
        # AD0 TCK, AD1 TDI, AD2 TDO, AD3 TMS. --cable names any other (ft2232, dirtyJtag, ...).
        Programmer("colorlight", "ft232", "a JTAG adapter wired to the J27 pads")),
}

DEFAULT_BOARD = "sim"           # the one `make demo` runs
