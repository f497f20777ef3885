# SPDX-License-Identifier: BSD-2-Clause
"""The satemu SoC on the Colorlight 5A-75B, board revision 8.0: the simulated board's SoC on a
LFE5U-25F with SDR SDRAM, built like ``hw.versa_ecp5``.

SERV (a bit-serial RISC-V) with the firmware in ROM, the UART on header J19 (3.3 V, see below),
LiteDRAM on the board's SDR SDRAM (GENSDRPHY, one M12L64322A: 32 bits, 8 MiB), two RGMII PHYs
(Realtek RTL8211FD on this revision) each under a LiteEth MAC used raw at L2 (``hw.ethport``),
and the two channels with their register bridge (``hw.soc_common``), wired as on the simulated board:

* port A, the terminal side, is the board's PHY U11 (LiteX's ``eth`` 0, its first RJ45);
* port B, the gateway side, is the board's PHY U13 (``eth`` 1, its second RJ45).

Pins and their sources: ``constraints/colorlight_5a_75b.py``. This is for revision 8.0 only
(6.1 and 7.0 are wired differently).

Clocks: the 25 MHz input (made by PHY U13) feeds a PLL that makes ``sys`` (40 MHz by default) and
``sys_ps``, the same frequency shifted by 180 degrees, which clocks the SDRAM chip through a DDR
output (LiteX's GENSDRPHY registers commands and data on ``sys``, so the chip's clock edge must
come half a cycle later; LiteX's Colorlight target does the same, noting that the 90 degrees of
the textbook are not enough). Each PHY's 125 MHz receive clock drives its port's wire side (and
its transmit clock), crossing into ``sys`` through the MACs' FIFOs.

The board's clock, memory, CPU, channels (no BoD block: the FPGA is too small for it, so its
firmware refuses BoD profiles) and bitstream flow are its record in ``satemu.base.boards``; its
builds, their timing and utilisation are in docs/hardware.md, "Colorlight 5A-75B", and the last
build's report in ``bench/results/bitstream-colorlight-5a-75b.json``.

The PHYs are never reset: their shared reset line also stops the FPGA's own clock (see the
constraints). Their shared MDIO bus is one LiteEth MDIO master (``ethphy_mdio``) for bring-up.

There is no user LED and no reset button: the board has one of each and both carry the UART
(the only header pins at 3.3 V; the HUB75 pins are 5 V outputs behind buffers). The LED flickers
while the firmware sends; the RJ45 jacks' LEDs, driven by the PHYs, show link and traffic.

Delay-line memory: the CPU runs from its integrated ROM and SRAM and never uses the SDRAM, so
its upper half (4 MiB) is the channels': 2 MiB each (docs/hardware.md gives the longest delay
each rate allows).

``python -m hw.colorlight_5a_75b --output-dir D --channel-verilog F ...`` writes the headers and
libraries the firmware builds against; with ``--firmware`` it builds the bitstream (yosys,
nextpnr-ecp5 and ecppack on PATH; ``hw.bitstream`` runs the whole flow).
"""

from __future__ import annotations

from pathlib import Path

from migen import ClockDomain, ClockSignal, If, Signal

from litex.build.io import DDROutput
from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex.soc.integration.soc_core import SoCCore

from litedram.phy import GENSDRPHY

from liteeth.phy.common import LiteEthPHYMDIO

from hw.ethport import ecp5_rgmii_port
from hw.soc_common import (add_channels, board_main, board_platform, dram_module,
                            soc_core_kwargs)
from satemu.base.boards import BOARDS

BOARD = BOARDS["colorlight-5a-75b"]   # its clock, memory, CPU, channels and build: satemu.base.boards
# The MACs' clock-crossing FIFOs, in 64-bit beats each way (LiteEth's default is 32): 16 keep a
# port at line rate with one level of distributed RAM and shorter pointers, on paths of the
# 125 MHz wire clocks; paced on the wire side (hw.cdc.PacedAsyncFIFO: registered flags, the
# memory read at a registered pointer), whose paths this speed grade needs shorter than
# LiteEth's crossing has them.
CDC_DEPTH = 16
PACED_CDC = True
# The RGMII clock skews the FPGA adds, in seconds. The PHYs' delay straps (RXD1 = TXDLY,
# RXD0 = RXDLY) are undocumented for this board, so these are the values LiteX's Colorlight
# target uses on it, with which LiteEth works on 8.0 boards (LiteX issue 1164, LiteEth issue
# 176): no transmit skew (the PHY delays GTX_CLK itself), and LiteEth's default 2 ns on the
# received data (DELAYG taps, which together with the receive clock's insertion delay centre
# the sampling). If received frames show FCS errors, try rx_delay=0, or set the RTL8211F's
# delays through MDIO (``ethphy_mdio``).
TX_DELAY = 0.0
RX_DELAY = 2e-9


def dram_phy_settings(sys_clk_freq: float = float(BOARD.f_clk)):
    """The ``PhySettings`` of the board's SDR PHY (``GENSDRPHY`` on its pins at the system
    clock), which the Colorlight variant of the simulated board models."""
    return GENSDRPHY(board_platform(BOARD).request("sdram"), sys_clk_freq).settings


class ColorlightCRG(LiteXModule):
    """``sys`` and ``sys_ps`` (the SDRAM chip's clock, 180 degrees later) from the 25 MHz input.
    The PLL waits for a power-on delay of 2^16 input cycles (2.6 ms); there is no reset button
    (its pin is the UART's receive line), only the SoC's reset register."""

    def __init__(self, platform, sys_clk_freq: float):
        self.rst = Signal()                       # the SoC's reset register
        self.cd_por = ClockDomain(reset_less=True)
        self.cd_sys = ClockDomain()
        self.cd_sys_ps = ClockDomain(reset_less=True)   # drives the SDRAM clock pin only

        clk25 = platform.request("clk25")
        por_wait = Signal(16, reset=2**16 - 1)
        self.comb += self.cd_por.clk.eq(clk25)
        self.sync.por += If(por_wait != 0, por_wait.eq(por_wait - 1))

        self.pll = pll = ECP5PLL()
        self.comb += pll.reset.eq((por_wait != 0) | self.rst)
        pll.register_clkin(clk25, 25e6)
        pll.create_clkout(self.cd_sys, sys_clk_freq)
        pll.create_clkout(self.cd_sys_ps, sys_clk_freq, phase=180, with_reset=False)
        self.specials += DDROutput(1, 0, platform.request("sdram_clock"), ClockSignal("sys_ps"))


class SatemuColorlightSoC(SoCCore):
    def __init__(self, channel_verilog: list[Path], sys_clk_freq: float = float(BOARD.f_clk),
                 firmware: list[int] | None = None):
        platform = board_platform(BOARD)
        self.crg = ColorlightCRG(platform, sys_clk_freq)
        SoCCore.__init__(self, platform, clk_freq=sys_clk_freq, uart_name="serial",
                         **soc_core_kwargs("satemu on the Colorlight 5A-75B", firmware,
                                           BOARD.cpu))

        # SDR SDRAM: 8 MiB on a 32-bit native port (one phase, single data rate). The CPU sees
        # it as main RAM only so that the firmware's sdram_init() initialises it. The chip has
        # no byte masks (DQM tied low): only whole-word writes are stored as meant, which is all
        # the channels make (a full write mask, converted by LiteDRAM into two 32-bit words).
        self.sdrphy = GENSDRPHY(platform.request("sdram"), sys_clk_freq)
        self.add_sdram("sdram", phy=self.sdrphy, module=dram_module(BOARD, sys_clk_freq),
                       l2_cache_size=0)

        # The PHYs' shared pins: the reset held high (never reset: it would stop clk25), MDC and
        # MDIO under one MDIO master for both PHYs (their strapped addresses tell them apart).
        mgmt = platform.request("eth_mgmt")
        self.comb += mgmt.rst_n.eq(1)
        self.ethphy_mdio = LiteEthPHYMDIO(mgmt)

        # Port A (terminal side) on U11, port B (gateway side) on U13.
        ports = {}
        for name, index in (("a", 0), ("b", 1)):
            phy, port = ecp5_rgmii_port(platform.request("eth_clocks", index),
                                        platform.request("eth", index), f"eth_{name}",
                                        tx_delay=TX_DELAY, rx_delay=RX_DELAY,
                                        cdc_depth=CDC_DEPTH, paced_cdc=PACED_CDC)
            setattr(self, f"ethphy_{name}", phy)
            setattr(self, f"ethmac_{name}", port)
            ports[name] = port

        # The channels, each on a 64-bit crossbar port that LiteDRAM narrows to the native 32.
        add_channels(self, channel_verilog, ports)


def main():
    board_main(__doc__, SatemuColorlightSoC, BOARD)


if __name__ == "__main__":
    main()
