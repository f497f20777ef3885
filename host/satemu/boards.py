# SPDX-License-Identifier: BSD-2-Clause
"""The boards a profile can be checked against without one (``satemu show --board``)."""

from __future__ import annotations

from dataclasses import dataclass

from .channel_model import ChannelParams
from .profile import Hardware

__all__ = ["Board", "BOARDS", "DEFAULT_BOARD"]


@dataclass(frozen=True)
class Board:
    """A board as its firmware reports itself (HELLO): ``hardware`` is what ``load`` would check
    a profile against on it. The numbers are copies, so that the host tool needs neither
    ``hw`` nor LiteX; tests/host/test_boards.py holds them equal to the board targets'."""

    title: str
    hardware: Hardware


# Every board's channels have a LiteEth MAC's port costs (padding to 60 bytes, 4 bytes of FCS,
# a preamble beat and the gap) and the BoD block in the return channel (Hardware.bod_channels);
# ``params`` are the forward channel's, without it, as ``Profile.check`` expects.
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
        mem_wpc=6000)),                     # measured by bench/bench_datapath.py, less 10%
    # hw.colorlight_5a_75b: the same names; it has no MEM_WPC (0: not limited).
    "colorlight-5a-75b": Board("the Colorlight 5A-75B", Hardware(
        f_clk=50_000_000,
        mem_words=1 << 18,                  # 2 MiB per channel, the SDRAM's upper half
        port_bps=1_000_000_000,
        params=ChannelParams(port_pad=60, port_fcs=4, port_gap=3, queue_depth=512,
                             bod_ring=512),
        mem_wpc=0)),
}

DEFAULT_BOARD = "sim"           # the one `make demo` runs
