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

``SYS_CLK_FREQ`` is 40 MHz: the stock LiteX Colorlight SoC (VexRiscv, SDRAM, no channels) misses
timing at its default 60 MHz on this speed grade (55 MHz fmax measured here), and satemu's SoC,
which adds two channels, placed at 46.4 MHz (nextpnr's estimate before routing, at the 50 MHz
this board had first; 46.3 MHz with SERV). The channels' 64-bit datapath still carries
2.56 Gbit/s at 40 MHz, more than a port's line rate.

Its builds, their timing and utilisation: docs/hardware.md, "Colorlight 5A-75B", and the last
build's report, ``bench/results/bitstream-colorlight-5a-75b.json``. The design fills most of the
LUT4s, where routing is marginal: every LUT saved matters (see ``channel_params``).

The FPGA is too small for the Bandwidth-on-Demand block: both channels are built without it
(``channel_params``), so this board has no BoD, and its firmware refuses BoD profiles (HELLO
reports no BoD channel; ``satemu show --board colorlight-5a-75b`` says so before a load). The
CPU is SERV, a bit-serial RISC-V much smaller than any VexRiscv (``CPU_TYPE``).

The PHYs are never reset: their shared reset line also stops the FPGA's own clock (see the
constraints). Their shared MDIO bus is one LiteEth MDIO master (``ethphy_mdio``) for bring-up.

There is no user LED and no reset button: the board has one of each and both carry the UART
(the only header pins at 3.3 V; the HUB75 pins are 5 V outputs behind buffers). The LED flickers
while the firmware sends; the RJ45 jacks' LEDs, driven by the PHYs, show link and traffic.

Delay-line memory: the CPU runs from its integrated ROM and SRAM and never uses the SDRAM, so
its upper half (4 MiB) is the channels': 2 MiB each, ``MEM_WORDS`` = 2^18 64-bit words (forward
at word 2^19, return at 3 x 2^18; the lower half is LiteX's ``main_ram`` and holds nothing).
A stored frame of L bytes costs ceil(L / 8) + 1 words (its beats and an 8-byte header), so
1500-byte frames take 189 words: 1387 of them fit, 2 080 500 bytes of frames. The longest delay
a channel can hold at a steady rate R of such frames (frame bytes only, no preamble or gap):

    rate            longest delay (1500-byte frames)
    10 Mbit/s       1.66 s
    50 Mbit/s       333 ms
    100 Mbit/s      166 ms
    1 Gbit/s        16.6 ms (line rate: more than the SDRAM can carry, see below)

(minimum-size frames store less: 60 bytes in 9 words, 1.40 s at 10 Mbit/s; the firmware checks
each profile against its own worst case, satemu.channel_model.delay_line_budget). The SDRAM moves
32 bits per 40 MHz cycle, 1.28 Gbit/s before refresh and row changes, and every byte is written
once and read once: the two channels together can carry a few hundred Mbit/s, not 2 x 1 Gbit/s.

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

from litedram.modules import M12L64322A
from litedram.phy import GENSDRPHY

from liteeth.phy.common import LiteEthPHYMDIO

from hw.ethport import ecp5_rgmii_port
from hw.soc_common import (add_channels, board_main, ecp5_platform, load_constraints,
                            soc_core_kwargs)

SYS_CLK_FREQ = 40e6           # the system clock (see the module's docstring); registers count it
PORT_BPS = 1_000_000_000      # RGMII at 1 Gbit/s (LiteEth's ECP5 RGMII PHY runs at 1 Gbit/s only)
MEM_WORDS = 1 << 18           # delay-line words per channel: 2 MiB each, the SDRAM's upper half
# Delay-line throughput each channel is guaranteed with both busy, in 64-bit words per 65536
# cycles, which the firmware's profile checks enforce: about 90% of the lowest maximum that
# bench/bench_datapath.py --board colorlight-5a-75b measured (64-byte frames on both channels at
# once, 246.88 Mbit/s of line rate each: 350,682 frames/s of 9 words, 5,171 words per 65536
# cycles); docs/hardware.md.
MEM_WPC = 4600
BUILD_NAME = "satemu_colorlight_5a_75b"
# nextpnr's options: the design fills most of the LUTs, where router2 converges and router1 did
# not on the Versa-5G (docs/hardware.md, "Timing closure").
NEXTPNR_ARGS = "--router router2"
# The CPU: SERV, a bit-serial RV32I (``pythondata-cpu-serv``), about 360 LUTs and one block RAM
# against VexRiscv minimal's 1,690 LUTs (yosys synth_ecp5 of each alone). With VexRiscv
# minimal the design packed into 94% of the LUTs and router2 did not converge (5,300 wires
# still overused after 12 iterations, then more). SERV takes about 32 cycles an instruction:
# some 1.2 million instructions a second at 40 MHz, for a firmware that only answers the UART
# (a byte every 3,470 cycles at 115200 baud) and checks profiles.
CPU_TYPE = "serv"
CPU_VARIANT = "standard"
# The MACs' clock-crossing FIFOs, in 64-bit beats each way (LiteEth's default is 32): 16 keep a
# port at line rate (a beat crosses each way in a few cycles) with one level of distributed
# RAM (16 x 4 bits a cell) and shorter pointers, on paths of the 125 MHz wire clocks; paced on
# the wire side (hw.cdc.PacedAsyncFIFO: registered flags, the memory read at a registered
# pointer), whose paths this speed grade needs shorter than LiteEth's crossing has them.
CDC_DEPTH = 16
PACED_CDC = True
SDRAM_MODULE = M12L64322A     # the board's SDRAM chip (LiteDRAM's module class)
# The CPU's memories, smaller than hw.soc_common's (64 KiB ROM, 16 KiB SRAM, which alone would
# take 40 of the LFE5U-25F's 56 block RAMs). The firmware built for this board is 14 KB of code
# and constants and 2.4 KB of data (17 KB of code on the Versa): 32 KiB of ROM (16 block RAMs)
# and 8 KiB of SRAM (4, also the stack's) hold it with room to grow.
ROM_BYTES = 0x8000
SRAM_BYTES = 0x2000
# The RGMII clock skews the FPGA adds, in seconds. The PHYs' delay straps (RXD1 = TXDLY,
# RXD0 = RXDLY) are undocumented for this board, so these are the values LiteX's Colorlight
# target uses on it, with which LiteEth works on 8.0 boards (LiteX issue 1164, LiteEth issue
# 176): no transmit skew (the PHY delays GTX_CLK itself), and LiteEth's default 2 ns on the
# received data (DELAYG taps, which together with the receive clock's insertion delay centre
# the sampling). If received frames show FCS errors, try rx_delay=0, or set the RTL8211F's
# delays through MDIO (``ethphy_mdio``).
TX_DELAY = 0.0
RX_DELAY = 2e-9


def channel_params(bod: bool = False):
    """The channels' parameters on this board: the Versa's (the default 512-beat ingress FIFO,
    port costs of a LiteEth MAC; see ``hw.versa_ecp5.channel_params`` for the egress pacing
    against the wire), but without the BoD block, whatever ``bod`` asks, and with the
    departure queues halved, to fit the LFE5U-25F's 24,288 LUTs and 56 block RAMs (DP16KD,
    18 Kbit each).

    The BoD block: the return channel with it synthesised to 6,524 LUT4 and 2,490 carry cells
    (CCU2C, two LUTs each), against 3,826 and 1,697 without (yosys, synth_ecp5), about 4,300
    LUTs more. Without it on either channel the design packs into 22,995 of the 24,288 LUTs
    (94%) with VexRiscv minimal, 20,931 (86%) with SERV; with it, it would need about 27,000.

    Block RAM: each channel without the BoD block takes 8 (ingress FIFO 2, departure queue 2,
    playout data 2 and descriptors 2) and the whole design 37 of 56 (measured). The departure
    queues are halved (``queue_depth`` 1024 -> 512 frames: 4 -> 2 block RAMs each) from when the
    return channel still had the BoD block (its queue and statistics ring took 9 more), and
    stay so: the LUTs, not the block RAMs, bound this board. ``bod_ring`` is the Versa's, and
    unused. The ingress and playout FIFOs stay as they are: 512 beats is the least that holds
    two (ingress) or one (playout) 2048-byte frames.

    The statistics counters are 32 bits wide (``counter_bits``), not 64: that takes 740 LUTs
    off each channel (yosys, synth_ecp5: 3,470 LUT4 and 1,505 carry cells against 3,826 and
    1,697), in their adders and in the snapshot's read multiplexer. The firmware folds them
    into 64-bit counts at each GET_STATS and once a second (``firmware/app/fw.c``,
    ``satemu_fold_counters``; the fastest, a byte count at 1 Gbit/s, wraps after 34 s), so the
    host sees the same 64-bit counts as on the Versa.

    What the smaller values cost: a channel queues at most 512 frames (768 KB of 1500-byte
    frames: 61 ms at 100 Mbit/s, 614 ms at 10 Mbit/s; more frames are dropped as a full queue,
    which the gateware enforces whatever the queue_frames register says).

    The firmware's header follows these values (``hw.bitstream`` generates it from the board's
    ``channel_params``), so the firmware reports and enforces 512 frames and no BoD channel."""
    from satemu.channel_model import ChannelParams
    return ChannelParams(bod=False, port_pad=60, port_fcs=4, port_gap=3, queue_depth=512,
                         bod_ring=512, counter_bits=32)


def board_constraints():
    """The board's pin and clock data (``constraints/colorlight_5a_75b.py``)."""
    return load_constraints("colorlight_5a_75b")


def ColorlightPlatform():
    """The 5A-75B 8.0 for LiteX with the open toolchain (yosys, nextpnr-ecp5, ecppack)."""
    return ecp5_platform(board_constraints())

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
    def __init__(self, channel_verilog: list[Path], sys_clk_freq: float = SYS_CLK_FREQ,
                 firmware: list[int] | None = None):
        platform = ColorlightPlatform()
        self.crg = ColorlightCRG(platform, sys_clk_freq)
        SoCCore.__init__(self, platform, clk_freq=sys_clk_freq, uart_name="serial",
                         **soc_core_kwargs("satemu on the Colorlight 5A-75B", firmware,
                                           ROM_BYTES, SRAM_BYTES, cpu_variant=CPU_VARIANT,
                                           cpu_type=CPU_TYPE))

        # SDR SDRAM: 8 MiB on a 32-bit native port (one phase, single data rate). The CPU sees
        # it as main RAM only so that the firmware's sdram_init() initialises it. The chip has
        # no byte masks (DQM tied low): only whole-word writes are stored as meant, which is all
        # the channels make (a full write mask, converted by LiteDRAM into two 32-bit words).
        self.sdrphy = GENSDRPHY(platform.request("sdram"), sys_clk_freq)
        self.add_sdram("sdram", phy=self.sdrphy, module=SDRAM_MODULE(sys_clk_freq, "1:1"),
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
        add_channels(self, channel_verilog, ports, MEM_WORDS, int(sys_clk_freq), PORT_BPS,
                     MEM_WPC)


def main():
    board_main(__doc__, SatemuColorlightSoC, BUILD_NAME, SYS_CLK_FREQ, NEXTPNR_ARGS)


if __name__ == "__main__":
    main()
