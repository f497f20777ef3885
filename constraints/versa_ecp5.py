# SPDX-License-Identifier: BSD-2-Clause
"""Pins and clocks of the Lattice ECP5 Versa-5G (LFE5UM5G-45F-8BG381C) that satemu uses.

Data for LiteX's platform (``hw.versa_ecp5`` loads this file): the IO list names each resource
as LiteX's targets do (``clk100``, ``serial``, ``ddram``, ``eth_clocks``/``eth``, ``user_led``),
so LiteX's cores take them as they are. Pin numbers are the board's (its schematic and user
guide); nothing here is used that the box does not need (no SPI flash, PCIe, DIP switches,
14-segment display or expansion headers).
"""

from litex.build.generic_platform import IOStandard, Misc, Pins, Subsignal

DEVICE = "LFE5UM5G-45F-8BG381C"

# Input clocks and their periods in ns (nextpnr's FREQUENCY constraints). The RGMII receive
# clocks come from the PHYs: 125 MHz at 1 Gbit/s (and the transmit clocks are made from them).
CLOCK_PERIODS = {
    ("clk100", 0): 1e3 / 100,
    ("eth_clocks:rx", 0): 1e3 / 125,
    ("eth_clocks:rx", 1): 1e3 / 125,
}

# Whether a user LED lights when its pin is driven low. Not yet checked on a board: LiteX's and
# Amaranth's Versa platforms both drive the LEDs uninverted, and so does hw.versa_ecp5.
LEDS_ACTIVE_LOW = False


def _rgmii(index, tx_clk, rx_clk, rst_n, mdio, mdc, rx_ctl, rx_data, tx_ctl, tx_data):
    """One RGMII PHY (a Marvell 88E1512 on the board) as two LiteX resources."""
    return [
        ("eth_clocks", index,
            Subsignal("tx", Pins(tx_clk)), Subsignal("rx", Pins(rx_clk)),
            IOStandard("LVCMOS25")),
        ("eth", index,
            Subsignal("rst_n", Pins(rst_n)), Subsignal("mdio", Pins(mdio)),
            Subsignal("mdc", Pins(mdc)),
            Subsignal("rx_ctl", Pins(rx_ctl)), Subsignal("rx_data", Pins(rx_data)),
            Subsignal("tx_ctl", Pins(tx_ctl)), Subsignal("tx_data", Pins(tx_data)),
            IOStandard("LVCMOS25")),
    ]


_SSTL = IOStandard("SSTL135_I")       # the DDR3L chip's 1.35 V signalling

IO = [
    # The board's 100 MHz oscillator (a differential LVDS input) and its reset push-button.
    ("clk100", 0, Pins("P3"), IOStandard("LVDS")),
    ("rst_n", 0, Pins("T1"), IOStandard("LVCMOS33")),

    # The eight user LEDs, LED0 (E16) to LED7 (F16): two yellow, two green, four red.
    *[("user_led", i, Pins(pin), IOStandard("LVCMOS25"))
      for i, pin in enumerate("E16 D17 D18 E18 F17 F18 E17 F16".split())],

    # The UART on the FTDI FT2232H's second channel (the first is the JTAG programmer).
    ("serial", 0,
        Subsignal("rx", Pins("C11"), IOStandard("LVCMOS33")),
        Subsignal("tx", Pins("A11"), IOStandard("LVCMOS33"))),

    # DDR3L: one x16 chip of 1 Gbit (Micron MT41K64M16: 8 banks, 8192 rows, 1024 columns).
    ("ddram", 0,
        Subsignal("a", Pins("P2 C4 E5 F5 B3 F4 B5 E4 C5 E3 D5 B4 C3"), _SSTL),
        Subsignal("ba", Pins("P5 N3 M3"), _SSTL),
        Subsignal("ras_n", Pins("P1"), _SSTL),
        Subsignal("cas_n", Pins("L1"), _SSTL),
        Subsignal("we_n", Pins("M1"), _SSTL),
        Subsignal("cs_n", Pins("K1"), _SSTL),
        Subsignal("dm", Pins("J4 H5"), _SSTL),
        Subsignal("dq", Pins("L5 F1 K4 G1 L4 H1 G2 J3 D1 C1 E2 C2 F3 A2 E1 B1"), _SSTL,
                  Misc("TERMINATION=75")),
        Subsignal("dqs_p", Pins("K2 H4"), IOStandard("SSTL135D_I"),
                  Misc("TERMINATION=OFF"), Misc("DIFFRESISTOR=100")),
        Subsignal("clk_p", Pins("M4"), IOStandard("SSTL135D_I")),
        Subsignal("cke", Pins("N2"), _SSTL),
        Subsignal("odt", Pins("L2"), _SSTL),
        Subsignal("reset_n", Pins("N4"), _SSTL),
        Misc("SLEWRATE=FAST")),

    # The two Gigabit Ethernet PHYs: eth 0 is the board's PHY1, eth 1 its PHY2.
    *_rgmii(0, tx_clk="P19", rx_clk="L20", rst_n="U17", mdio="U18", mdc="T18",
            rx_ctl="U19", rx_data="T20 U20 T19 R18", tx_ctl="R20", tx_data="N19 N20 P18 P20"),
    *_rgmii(1, tx_clk="C20", rx_clk="J19", rst_n="F20", mdio="H20", mdc="G19",
            rx_ctl="F19", rx_data="G18 G16 H18 H17", tx_ctl="E19", tx_data="J17 J16 D19 D20"),
]
