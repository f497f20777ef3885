# SPDX-License-Identifier: BSD-2-Clause
"""hw.simcrc.TableCRC32 against LiteEth's LiteEthMACCRC32, in Migen's simulator: the same random
beats, byte enables, clock enables and resets into both, every output equal in every cycle."""

import random
import zlib

import pytest
from migen import Module, run_simulation

from liteeth.mac.crc import LiteEthMACCRC32

from hw.simcrc import TableCRC32


class Pair(Module):
    def __init__(self, data_width):
        self.submodules.ref = LiteEthMACCRC32(data_width)
        self.submodules.dut = TableCRC32(data_width)


@pytest.mark.parametrize("data_width", [8, 64])
def test_table_crc_equals_liteeth(data_width):
    pair = Pair(data_width)
    rnd = random.Random(data_width)
    nbytes = data_width // 8
    mismatches = []

    def bench():
        # LiteEth's 64-bit engine is slow in Migen's simulator (about 0.15 s a cycle).
        for cycle in range(400 if data_width == 8 else 80):
            be = rnd.choice([1 << rnd.randrange(nbytes), rnd.getrandbits(nbytes), 0])
            stim = {"data": rnd.getrandbits(data_width), "be": be,
                    "ce": rnd.random() < 0.8, "reset": rnd.random() < 0.05}
            for name, value in stim.items():
                yield getattr(pair.ref, name).eq(value)
                yield getattr(pair.dut, name).eq(value)
            yield
            for name in ("value", "error"):
                a, b = (yield getattr(pair.ref, name)), (yield getattr(pair.dut, name))
                if a != b:
                    mismatches.append((cycle, name, a, b))

    run_simulation(pair, bench())
    assert not mismatches, mismatches[:5]


def test_table_crc_gives_the_fcs():
    """A frame's bytes through the 64-bit table CRC give zlib's CRC-32 as ``value``, and the
    frame followed by that FCS leaves no ``error``."""
    frame = bytes(random.Random(1).getrandbits(8) for _ in range(61))
    fcs = zlib.crc32(frame)
    dut = TableCRC32(64)
    seen = {}

    def feed(data, key):
        yield dut.reset.eq(1)
        yield
        yield dut.reset.eq(0)
        yield dut.ce.eq(1)
        for i in range(0, len(data), 8):
            chunk = data[i:i + 8]
            yield dut.data.eq(int.from_bytes(chunk.ljust(8, b"\0"), "little"))
            yield dut.be.eq(1 << (len(chunk) - 1))
            if i + 8 >= len(data):
                yield
                seen[key] = ((yield dut.value), (yield dut.error))
            else:
                yield

    def bench():
        yield from feed(frame, "frame")
        yield from feed(frame + fcs.to_bytes(4, "little"), "with_fcs")

    run_simulation(dut, bench())
    assert seen["frame"][0] == fcs
    assert seen["with_fcs"][1] == 0
