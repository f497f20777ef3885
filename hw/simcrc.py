# SPDX-License-Identifier: BSD-2-Clause
"""A table-driven IEEE 802.3 CRC for the simulated board's MACs, equal to LiteEth's at every bit.

LiteEth's ``LiteEthMACCRC32`` on a 64-bit datapath has eight parallel CRC engines (one per byte
count of a beat), each output bit a wide XOR of data and CRC bits. That is cheap in an FPGA, but
a Verilator model evaluates every engine in every cycle, frame or no frame: on the simulated
board the four of them (each port's FCS inserter and checker) were more than half of the
simulation's time. ``TableCRC32`` computes the same function a byte at a time through a
256-entry table (the reflected form of the same polynomial), so the CRC after each byte count
of a beat is one table lookup after the one before. Its ports, reset, clock enable, ``value``
and ``error`` are LiteEth's; ``fast_fcs`` builds a LiteEth MAC with it in place of LiteEth's.
``tests/hardware/test_simcrc.py`` checks the two against each other on random beats.
"""

from __future__ import annotations

import contextlib

from migen import CEInserter, Memory, ResetInserter, Signal, If

from litex.gen import LiteXModule

POLY_REFLECTED = 0xEDB88320     # LiteEth's 0x04C11DB7, bit-reversed


def _reverse(value: int, bits: int) -> int:
    return int(f"{value:0{bits}b}"[::-1], 2)


def crc_table() -> list[int]:
    """The reflected CRC-32 of each byte: the state change one byte makes, LSB first."""
    table = []
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ (POLY_REFLECTED if c & 1 else 0)
        table.append(c)
    return table


@ResetInserter()
@CEInserter()
class TableCRC32(LiteXModule):
    """``liteeth.mac.crc.LiteEthMACCRC32`` (same ``data``, ``be``, ``value``, ``error``, reset
    and clock enable) for ``data_width``-bit data, computed through a byte table.

    LiteEth's engine shifts the data in from bit 0 up, MSB-first into its CRC register; its
    register reversed is the reflected CRC, which takes a byte ``b`` as ``(r >> 8) ^
    T[(r ^ b) & 0xff]``. The register here holds that reflected value: ``value`` (LiteEth's
    register reversed, complemented) is then the register complemented, and ``error`` compares
    it with LiteEth's residue reversed."""

    width = 32
    init = 2**32 - 1
    check = 0xc704dd7b

    def __init__(self, data_width: int):
        nbytes = data_width // 8
        self.data = Signal(data_width)
        self.be = Signal(nbytes, reset=(2**data_width // 8 - 1) & (2**nbytes - 1))
        self.value = Signal(self.width)
        self.error = Signal()

        # # #

        table = Memory(32, 256, init=crc_table())
        self.specials += table
        reg = Signal(self.width, reset=_reverse(self.init, 32))
        residue = _reverse(self.check, 32)
        crc = reg
        after = []                       # the reflected CRC after each byte count of the beat
        for n in range(nbytes):
            port = table.get_port(async_read=True)
            self.specials += port
            nxt = Signal(self.width)
            self.comb += [
                port.adr.eq(crc[:8] ^ self.data[8 * n:8 * n + 8]),
                nxt.eq((crc >> 8) ^ port.dat_r),
            ]
            after.append(nxt)
            crc = nxt
        self.sync += reg.eq(after[-1])
        for n in range(nbytes):
            self.comb += If(self.be[n],
                            self.value.eq(after[n] ^ self.init),
                            self.error.eq(after[n] != residue))


@contextlib.contextmanager
def fast_fcs():
    """While in effect, LiteEth's FCS inserter and checker are built with ``TableCRC32``."""
    from liteeth.mac import crc
    original = crc.LiteEthMACCRC32
    crc.LiteEthMACCRC32 = TableCRC32
    try:
        yield
    finally:
        crc.LiteEthMACCRC32 = original
