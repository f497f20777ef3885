# SPDX-License-Identifier: BSD-2-Clause
"""Pins and clocks of the Colorlight 5A-75B, board revision 8.0 (LFE5U-25F-6BG256C), that satemu
uses.

Data for LiteX's platform (``hw.colorlight_5a_75b`` loads this file), in the shape of
``constraints/versa_ecp5.py``: the IO list names each resource as LiteX's targets do (``clk25``,
``serial``, ``sdram_clock``/``sdram``, ``eth_clocks``/``eth``, ``user_led_n``, ``user_btn_n``),
so LiteX's cores take them as they are.

Colorlight publishes no schematic. The pins come from the reverse-engineering project
"chubby75" (q3k/chubby75, its notes ``5a-75b/hardware_V8.0.md``), cross-checked against the
LiteX-Boards Colorlight platforms (``colorlight_5a_75b.py``, and ``colorlight_5a_75e.py``'s
revision 6.0, the same design with twice the HUB75 ports, whose clock, LED, button, SDRAM and
Ethernet pins are those of the 5A-75B 8.0) and the LiteX-Boards target ``colorlight_5a_75x.py``.
Where the sources differ it is said below. Revisions 6.1 and 7.0 of the board are wired
differently (another package on 6.1; other pins, two x16 SDRAMs and Broadcom PHYs on 7.0):
this file is for 8.0 only, the revision printed on the board's silkscreen.

Things of this revision that shape the design:

* The FPGA's 25 MHz clock (P6) is not an oscillator of its own: the second Ethernet PHY (U13)
  makes it and feeds it to the first PHY and to the FPGA. Resetting the PHYs stops it (chubby75's
  note; LiteX issue 1164: with the PHY reset driven, an 8.0 board never started). The PHYs'
  shared reset is therefore its own resource (``eth_mgmt``), kept out of ``eth`` so that no
  LiteEth core drives it, and the target holds it high.
* Both PHYs share their reset, MDC and MDIO pins, so these cannot sit in both ``eth``
  resources (a pin may be requested once): ``eth_mgmt`` holds them.
* Every HUB75 connector pin goes through a 74HC245 buffer powered from 5 V, wired as an output:
  no HUB75 pin can be an input without reworking the board, and their outputs swing to 5 V.
  The only FPGA pins on a header at 3.3 V, with no buffer, are the user LED's and the button's,
  both on the small header J19; LiteX's Colorlight target puts its UART there, and so does this
  file. The UART therefore takes the board's only user LED and its only button.
"""

from litex.build.generic_platform import IOStandard, Misc, Pins, Subsignal

DEVICE = "LFE5U-25F-6BG256C"
REVISION = "8.0"

# Input clocks and their periods in ns (nextpnr's FREQUENCY constraints). The RGMII receive
# clocks come from the PHYs: 125 MHz at 1 Gbit/s (and the transmit clocks are made from them).
CLOCK_PERIODS = {
    ("clk25", 0): 1e3 / 25,
    ("eth_clocks:rx", 0): 1e3 / 125,
    ("eth_clocks:rx", 1): 1e3 / 125,
}

# The user LED (DATA_LED-) lights when its pin is driven low (chubby75: "active low"). Only
# meaningful to a design that does not put the UART on it (hw.colorlight_5a_75b does).
LEDS_ACTIVE_LOW = True

_IO33 = IOStandard("LVCMOS33")      # every bank of the board's FPGA runs at 3.3 V


def _rgmii(index, tx_clk, rx_clk, rx_ctl, rx_data, tx_ctl, tx_data):
    """One RGMII PHY (a Realtek RTL8211FD on this revision) as two LiteX resources, without
    the reset and management pins the two PHYs share (``eth_mgmt``)."""
    return [
        ("eth_clocks", index,
            Subsignal("tx", Pins(tx_clk)), Subsignal("rx", Pins(rx_clk)),
            _IO33),
        ("eth", index,
            Subsignal("rx_ctl", Pins(rx_ctl)), Subsignal("rx_data", Pins(rx_data)),
            Subsignal("tx_ctl", Pins(tx_ctl)), Subsignal("tx_data", Pins(tx_data)),
            _IO33),
    ]


IO = [
    # The 25 MHz clock from the PHY U13 (chubby75, "Clock"; LiteX-Boards' 5A-75E 6.0: P6).
    ("clk25", 0, Pins("P6"), _IO33),

    # The user LED DATA_LED- (T6, active low) and the button KEY+ (R7, reads low when pressed):
    # chubby75's "LED, Button"; LiteX-Boards has the same pins for the 5A-75E 6.0.
    ("user_led_n", 0, Pins("T6"), _IO33),
    ("user_btn_n", 0, Pins("R7"), _IO33),

    # The UART on header J19, 3.3 V LVCMOS straight from the FPGA (no buffer): the FPGA sends on
    # DATA_LED- (T6, so the LED flickers with the output) and receives on KEY+ (R7, so pressing
    # the button is a break). This is LiteX's choice for the Colorlight boards (the usage notes
    # of LiteX-Boards' colorlight_5a_75x.py: "Connect a USB/UART to J19: TX of the FPGA is
    # DATA_LED-, RX of the FPGA is KEY+"). Connect a 3.3 V USB-UART: its RX to DATA_LED-, its
    # TX to KEY+, and ground. Shares its pins with user_led_n and user_btn_n: request one or
    # the other.
    ("serial", 0,
        Subsignal("tx", Pins("T6")),
        Subsignal("rx", Pins("R7")),
        _IO33),

    # SDRAM U29: one ESMT M12L64322A, 2M x 32 (4 banks of 2048 rows x 256 columns), 8 MiB
    # (chubby75, "SDRAM U29"). CS#, DQM0-3 are tied to ground and CKE to 3.3 V on the board, so
    # there is no byte mask: every write stores whole 32-bit words. DQ numbered as in chubby75's
    # table; LiteX-Boards' 5A-75E 6.0 lists the same 32 pins in another bit order, which is
    # immaterial without byte masks (a permutation of DQ lines is undone when read back).
    ("sdram_clock", 0, Pins("C8"), _IO33),
    ("sdram", 0,
        Subsignal("a", Pins("A9 B9 B10 C10 D9 C9 E9 D8 E8 C7 B8")),
        Subsignal("dq", Pins(
            "B2  A2  C3  A3  B3  A4  B4  A5",
            "E7  C6  D7  D6  E6  D5  C5  E5",
            "A11 B11 B12 A13 B13 A14 B14 D14",
            "D13 E11 C13 D11 C12 E10 C11 D10")),
        Subsignal("ba", Pins("B7 A8")),
        Subsignal("we_n", Pins("B5")),
        Subsignal("cas_n", Pins("A6")),
        Subsignal("ras_n", Pins("B6")),
        _IO33, Misc("SLEWRATE=FAST")),

    # The two Gigabit Ethernet PHYs, Realtek RTL8211FD on this revision (chubby75, "Gigabit
    # PHYs (U11 & U13)"; LiteX-Boards' 5A-75E 6.0 says the same chip and pins). eth 0 is U11
    # (chubby75's phy0), eth 1 is U13 (phy1, which also makes clk25). The straps that set the
    # PHYs' own RGMII clock delays sit on RXD1 (TXDLY) and RXD0 (RXDLY); their resistors are
    # not documented (see hw.colorlight_5a_75b for the delays used).
    *_rgmii(0, tx_clk="L1", rx_clk="J1", rx_ctl="J2", rx_data="K2 J3 K1 K3",
            tx_ctl="L2", tx_data="M2 M1 P1 R1"),
    *_rgmii(1, tx_clk="J16", rx_clk="M16", rx_ctl="P16", rx_data="M15 R16 L15 L16",
            tx_ctl="K14", tx_data="K16 J15 J14 K15"),
    # Shared by both PHYs: PHYRstB (R6, which must stay high, see above), MDC and MDIO.
    ("eth_mgmt", 0,
        Subsignal("rst_n", Pins("R6")),
        Subsignal("mdc", Pins("R5")),
        Subsignal("mdio", Pins("T4")),
        _IO33),
]
