# SPDX-License-Identifier: BSD-2-Clause
"""The satemu SoC on the Lattice ECP5 Versa-5G: the simulated board's SoC on real pins.

VexRiscv with the firmware in ROM, the UART on the FTDI chip, LiteDRAM on the board's DDR3L
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

from litedram.modules import MT41K64M16
from litedram.phy import ECP5DDRPHY

from hw.ethport import ecp5_rgmii_port
from hw.soc_common import (add_channels, board_main, ecp5_platform, load_constraints,
                            soc_core_kwargs)

SYS_CLK_FREQ = 55e6           # the system clock; the registers count its cycles
PORT_BPS = 1_000_000_000      # RGMII at 1 Gbit/s
MEM_WORDS = 1 << 22           # delay-line words per channel: 32 MiB each, the DRAM's upper half
# Delay-line throughput each channel is guaranteed with both busy, in 64-bit words per 65536
# cycles, which the firmware's profile checks enforce: about 90% of the lowest maximum that
# bench/bench_datapath.py measured (64-byte frames on both channels at once, 437.5 Mbit/s of
# line rate each: 621,449 frames/s of 9 words, 6,664 words per 65536 cycles); docs/hardware.md.
MEM_WPC = 6000
BUILD_NAME = "satemu_versa_ecp5"
# nextpnr's options. The design fills 80% of the LUTs: router1 had still 16,500 arcs to route
# after 45 minutes at 84%, while router2 converges (docs/hardware.md, "Timing closure").
NEXTPNR_ARGS = "--router router2"
# VexRiscv's smallest variant (RV32I, no caches: about 1,700 LUTs and 2 block RAMs against the
# standard variant's 3,600 and 10), for the same reason. The firmware only answers the UART and
# checks profiles; it runs from the ROM a few times slower, and its multiplications and
# divisions go through compiler-rt. The simulated board keeps the standard variant.
CPU_VARIANT = "minimal"


def channel_params(bod: bool = False):
    """The channels' parameters on this board: the default 512-beat ingress FIFO (a GbE port
    brings at most 0.28 beats per 55 MHz cycle), the BoD block in the return channel, whose
    statistics ring holds 512 superframe records instead of 1024 (BOD_TRACE reaches back 13.6 s
    of 26.5 ms superframes; the 224-bit records take 7 block RAMs instead of 13, whose wiring,
    next to the BoD allocator, was where the router found the device most congested).

    Egress pacing: the channel spaces frames released together by the simulated board's MAC
    cost (``port_pad``/``port_fcs``/``port_gap``: padding to 60 bytes, 4 bytes of FCS, a preamble
    beat), so that both boards schedule alike. Here the MAC takes the 64-bit beats into its
    clock-crossing FIFO (32 beats) and pads, appends the FCS and the preamble a byte at a time on
    the wire's side (``hw.ethport``). The RGMII wire is slower: a byte per 8 ns, 0.44 cycles of
    the 55 MHz clock, so a frame of L bytes holds it for 0.44 * (max(L, 60) + 4 + 8 + 12) cycles
    (37 for the shortest, 677 for the longest), against ceil((max(L, 60) + 4) / 8) + 3 here (11 and 193). The parameters cannot
    express a per-byte cost above one beat per cycle, so the wire is left to pace itself: the
    MAC's FIFO (32 beats) fills and holds the channel's egress back, and a frame that therefore
    starts after its scheduled cycle is counted in ``late``. Traffic that the shaper spaces at
    no more than the wire's rate (counting each frame's padding, FCS, preamble and gap) never
    waits; frames released together (a BoD slot's, or a burst through an unshaped channel)
    leave at the wire's pace."""
    from satemu.channel_model import ChannelParams
    return ChannelParams(bod=bod, port_pad=60, port_fcs=4, port_gap=3, bod_ring=512)


def board_constraints():
    """The board's pin and clock data (``constraints/versa_ecp5.py``)."""
    return load_constraints("versa_ecp5")


def VersaPlatform():
    """The Versa-5G for LiteX with the open toolchain (yosys, nextpnr-ecp5, ecppack)."""
    return ecp5_platform(board_constraints())

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
    def __init__(self, channel_verilog: list[Path], sys_clk_freq: float = SYS_CLK_FREQ,
                 firmware: list[int] | None = None):
        platform = VersaPlatform()
        self.crg = VersaCRG(platform, sys_clk_freq)
        SoCCore.__init__(self, platform, clk_freq=sys_clk_freq, uart_name="serial",
                         **soc_core_kwargs("satemu on the ECP5 Versa", firmware,
                                           cpu_variant=CPU_VARIANT))

        # DDR3L: 128 MiB on a 128-bit native port (16 bits, double data rate, two phases, bursts
        # of 8). The CPU sees it as main RAM only so that the firmware's sdram_init() trains it.
        self.ddrphy = ECP5DDRPHY(platform.request("ddram"), sys_clk_freq=sys_clk_freq)
        self.comb += [self.crg.stop.eq(self.ddrphy.init.stop),
                      self.crg.reset.eq(self.ddrphy.init.reset)]
        self.add_sdram("sdram", phy=self.ddrphy, module=MT41K64M16(sys_clk_freq, "1:2"),
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
        _, events = add_channels(self, channel_verilog, ports, MEM_WORDS, int(sys_clk_freq),
                                 PORT_BPS, MEM_WPC)
        self.leds = Leds(platform.request_all("user_led"), events, ("eth_a_rx", "eth_b_rx"),
                         platform.board.LEDS_ACTIVE_LOW)


def main():
    board_main(__doc__, SatemuVersaSoC, BUILD_NAME, SYS_CLK_FREQ, NEXTPNR_ARGS)


if __name__ == "__main__":
    main()
