# SPDX-License-Identifier: BSD-2-Clause
"""The satemu SoC on the Lattice ECP5 Versa-5G: the simulated board's SoC on real pins.

SERV with the firmware in ROM, the UART on the FTDI chip, LiteDRAM on the board's DDR3L
(ECP5DDRPHY, one x16 MT41K64M16, 128 MiB), two RGMII PHYs each under a LiteEth MAC used raw at
L2 (``hw.ethport``), and the two channels with their register bridge (``hw.soc_common``), wired
as on the simulated board:

* port A, the terminal side, is the board's PHY1 (LiteX's ``eth`` 0);
* port B, the gateway side, is the board's PHY2 (``eth`` 1).

Clocks: the 100 MHz oscillator feeds a PLL that makes twice the system clock for the DDR3 PHY's
edge clock, divided by two into ``sys`` (55 MHz by default, where placement meets timing; the DDR3
then runs at 110 MHz); a 25 MHz ``init`` clock for the
DDR3 PHY's start-up; each PHY's 125 MHz receive clock drives its port's wire side (and its
transmit clock), crossing into ``sys`` through the MACs' FIFOs.

The user LEDs (``Leds``): 0 heartbeat; 1 and 2 port A received and sent a frame; 3 and 4 the same
for port B; 5 a frame was lost to a full ingress FIFO (overrun, either port); 6 and 7 port A's
and port B's PHY receive clock, divided (about one blink a second at 1 Gbit/s, five times slower
at 100 Mbit/s, none without a clock).

``python -m hw.versa_ecp5 --output-dir D --channel-verilog F ...`` writes the headers and
libraries the firmware builds against; with ``--firmware`` it builds the bitstream (yosys,
nextpnr-ecp5 and ecppack on PATH; ``hw.bitstream`` runs the whole flow).
"""

from __future__ import annotations

from pathlib import Path

from migen import ClockDomain, If, Instance, Signal
from migen.genlib.cdc import MultiReg
from migen.genlib.resetsync import AsyncResetSynchronizer

from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex.soc.integration.soc_core import SoCCore

from litedram.phy import ECP5DDRPHY

from hw.ethport import ecp5_rgmii_port
from hw.soc_common import (add_channels, board_main, board_platform, dram_module,
                            soc_core_kwargs)
from satemu.base.boards import BOARDS

BOARD = BOARDS["versa-ecp5"]      # its clock, memory, CPU, channels and build: satemu.base.boards


def dram_phy_settings(sys_clk_freq: float = float(BOARD.f_clk)):
    """The ``PhySettings`` of the board's DDR3 PHY (``ECP5DDRPHY`` on its pins at the system
    clock), which the Versa variant of the simulated board models."""
    return ECP5DDRPHY(board_platform(BOARD).request("ddram"), sys_clk_freq=sys_clk_freq).settings


class VersaCRG(LiteXModule):
    """``sys`` and ``sys2x`` for the DDR3 PHY (its edge clock through ECLKSYNCB, divided by two
    by CLKDIVF so both stay phase-aligned), ``init`` at 25 MHz. The PLL waits for a power-on
    delay of 2^16 oscillator cycles and for the reset button; the DDR3 PHY's start-up sequence
    stops and resets the edge clock through ``stop`` and ``reset``."""

    def __init__(self, platform, sys_clk_freq: float):
        self.rst = Signal()                       # the SoC's reset register
        self.stop, self.reset = Signal(), Signal()
        self.cd_por = ClockDomain(reset_less=True)
        self.cd_init = ClockDomain()
        self.cd_sys = ClockDomain()
        self.cd_sys2x = ClockDomain(reset_less=True)    # the DDR3 PHY's edge clock only
        self.cd_sys2x_i = ClockDomain(reset_less=True)

        clk100 = platform.request("clk100")
        rst_n = platform.request("rst_n")
        por_wait = Signal(16, reset=2**16 - 1)
        self.comb += self.cd_por.clk.eq(clk100)
        self.sync.por += If(por_wait != 0, por_wait.eq(por_wait - 1))

        self.pll = pll = ECP5PLL()
        self.comb += pll.reset.eq((por_wait != 0) | ~rst_n | self.rst)
        pll.register_clkin(clk100, 100e6)
        pll.create_clkout(self.cd_sys2x_i, 2 * sys_clk_freq, with_reset=False)
        pll.create_clkout(self.cd_init, 25e6)
        self.specials += [
            Instance("ECLKSYNCB", i_ECLKI=self.cd_sys2x_i.clk, i_STOP=self.stop,
                     o_ECLKO=self.cd_sys2x.clk),
            Instance("CLKDIVF", p_DIV="2.0", i_ALIGNWD=0, i_CLKI=self.cd_sys2x.clk,
                     i_RST=self.reset, o_CDIVX=self.cd_sys.clk),
            AsyncResetSynchronizer(self.cd_sys, ~pll.locked | self.reset),
        ]


class Leds(LiteXModule):
    """The user LEDs (see the module's docstring). ``events`` are ``hw.soc_common``'s per
    channel; ``rx_domains`` the ports' receive clock domains, A then B. A frame's event lights
    its LED for 2^22 system cycles (76 ms at 55 MHz), so single frames show."""

    STRETCH = 22

    def __init__(self, pads, events, rx_domains, active_low: bool):
        leds = Signal(8)
        self.comb += pads.eq(~leds if active_low else leds)

        beat = Signal(27)
        self.sync += beat.eq(beat + 1)
        self.comb += leds[0].eq(beat[-1])

        fwd, ret = events["fwd"], events["ret"]
        shown = [
            ret.arrived | ret.overrun,      # port A received a frame (the return channel's)
            fwd.start,                      # port A sends one (from the forward channel)
            fwd.arrived | fwd.overrun,      # port B received a frame
            ret.start,                      # port B sends one
            fwd.overrun | ret.overrun,      # an ingress FIFO was full
        ]
        for i, event in enumerate(shown, start=1):
            left = Signal(self.STRETCH)
            self.sync += If(event, left.eq(2**self.STRETCH - 1)).Elif(left != 0, left.eq(left - 1))
            self.comb += leds[i].eq(left != 0)

        for i, domain in enumerate(rx_domains, start=6):
            count = Signal(27)
            sync = getattr(self.sync, domain)
            sync += count.eq(count + 1)
            self.specials += MultiReg(count[-1], leds[i])


class SatemuVersaSoC(SoCCore):
    def __init__(self, channel_verilog: list[Path], sys_clk_freq: float = float(BOARD.f_clk),
                 firmware: list[int] | None = None):
        platform = board_platform(BOARD)
        self.crg = VersaCRG(platform, sys_clk_freq)
        SoCCore.__init__(self, platform, clk_freq=sys_clk_freq, uart_name="serial",
                         **soc_core_kwargs("satemu on the ECP5 Versa", firmware, BOARD.cpu))

        # DDR3L: 128 MiB on a 128-bit native port (16 bits, double data rate, two phases, bursts
        # of 8). The CPU sees it as main RAM only so that the firmware's sdram_init() trains it.
        self.ddrphy = ECP5DDRPHY(platform.request("ddram"), sys_clk_freq=sys_clk_freq)
        self.comb += [self.crg.stop.eq(self.ddrphy.init.stop),
                      self.crg.reset.eq(self.ddrphy.init.reset)]
        self.add_sdram("sdram", phy=self.ddrphy, module=dram_module(BOARD, sys_clk_freq),
                       l2_cache_size=0)

        # Port A (terminal side) on PHY1, port B (gateway side) on PHY2. The board's PHYs add
        # the RGMII clock skews themselves, so the FPGA adds none.
        ports = {}
        for name, index in (("a", 0), ("b", 1)):
            phy, port = ecp5_rgmii_port(platform.request("eth_clocks", index),
                                        platform.request("eth", index), f"eth_{name}",
                                        tx_delay=0, rx_delay=0)
            setattr(self, f"ethphy_{name}", phy)
            setattr(self, f"ethmac_{name}", port)
            ports[name] = port

        # The channels, each through a port widener onto a 128-bit native port.
        _, events = add_channels(self, channel_verilog, ports)
        self.leds = Leds(platform.request_all("user_led"), events, ("eth_a_rx", "eth_b_rx"),
                         platform.board.LEDS_ACTIVE_LOW)


def main():
    board_main(__doc__, SatemuVersaSoC, BOARD)


if __name__ == "__main__":
    main()
