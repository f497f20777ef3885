# SPDX-License-Identifier: BSD-2-Clause
"""hw.fragment.FragmentPad before each FCS checker a board has, in Migen's simulator: LiteEth's
64-bit checker (with hw.simcrc's CRC, as the simulated board builds it), LiteEth's byte-wide one
(the Versa-5G) and hw.fcs.RegisteredFCSChecker (the Colorlight). Every frame comes out once, a
fragment (a frame of one 64-bit beat, or of four bytes or fewer) as a flagged runt of five bytes
or of one, and the frames after a fragment are checked afresh; with the output stalled at random.
Without the pad, the same traffic loses frames through each checker."""

import random
import zlib

import pytest
from migen import Module, run_simulation
from liteeth.common import eth_phy_description
from liteeth.mac.crc import LiteEthMACCRC32Checker

from hw.fcs import RegisteredFCSChecker
from hw.fragment import FragmentPad
from hw.simcrc import fast_fcs

# (checker, data width): the simulated board's, the Versa-5G's, the Colorlight's.
CHECKERS = (("liteeth", 64), ("liteeth", 8), ("registered", 8))
# Idle beats after each frame, at least: on the simulated wire its two gap beats and the
# preamble's; on a byte-wide wire the preamble and SFD alone are eight.
HOLES = {64: 3, 8: 8}


class Path(Module):
    def __init__(self, checker: str, dw: int, with_pad: bool):
        self.dw = dw
        if checker == "registered":
            self.submodules.check = RegisteredFCSChecker()
        else:
            with fast_fcs():
                self.submodules.check = LiteEthMACCRC32Checker(eth_phy_description(dw))
        self.sink, self.source = self.check.sink, self.check.source
        if with_pad:
            self.submodules.pad = FragmentPad(dw)
            self.comb += self.pad.source.connect(self.check.sink)
            self.sink = self.pad.sink


def with_fcs(frame: bytes, bad: bool = False) -> bytes:
    return frame + (zlib.crc32(frame) ^ (0xDEADBEEF if bad else 0)).to_bytes(4, "little")


def run(path, wires, expected: int, stall: float, seed: int):
    rnd = random.Random(seed)
    out = []
    dw = path.dw

    def send():
        for data in wires:
            for off in range(0, len(data), dw // 8):
                chunk = data[off:off + dw // 8]
                last = off + dw // 8 >= len(data)
                yield path.sink.data.eq(int.from_bytes(chunk, "little"))
                yield path.sink.last.eq(last)
                yield path.sink.last_be.eq(1 << (len(chunk) - 1) if last else 0)
                yield path.sink.valid.eq(1)
                yield
                while not (yield path.sink.ready):
                    yield
            yield path.sink.valid.eq(0)
            for _ in range(HOLES[dw] + rnd.choice((0, 0, 1, 4))):
                yield

    def receive():
        frame = bytearray()
        cycle, after = 0, 0
        while cycle < 20 * len(wires) * (64 // dw) + 200 and after < 30:
            cycle += 1
            after += len(out) == expected
            ready = rnd.random() >= stall
            yield path.source.ready.eq(ready)
            yield
            if ready and (yield path.source.valid):
                data = (yield path.source.data).to_bytes(dw // 8, "little")
                if (yield path.source.last):
                    count = (yield path.source.last_be).bit_length() if dw > 8 else 1
                    frame += data[:count]
                    out.append((bytes(frame), bool((yield path.source.error))))
                    frame = bytearray()
                else:
                    frame += data

    run_simulation(path, [send(), receive()])
    return out


def traffic(dw: int):
    """Frames and fragments on the wire (after the SFD), and what the checker must give out: a
    fragment of a 64-bit path (one to eight bytes) as a five-byte runt (its bytes, then the pad's
    zeros), one of a byte-wide path (one to four bytes) as its first byte, flagged."""
    rnd = random.Random(3)
    wires, want = [], []
    longest = 8 if dw == 64 else 4
    for n in range(30 if dw == 64 else 24):
        if n % 3 == 1:                      # a fragment
            data = rnd.randbytes(1 + n % longest)
            wires.append(data)
            want.append((data.ljust(8, b"\0")[:5] if dw == 64 else data[:1], True))
        else:
            sizes = (5, 8, 14, 60, 61, 333) if dw == 64 else (1, 2, 14, 60, 61)
            body = rnd.randbytes(rnd.choice(sizes))
            bad = n % 5 == 0
            wires.append(with_fcs(body, bad))
            want.append((body, bad))
    return wires, want


@pytest.mark.parametrize("checker,dw", CHECKERS)
def test_fragments_come_out_as_flagged_runts_and_nothing_is_lost(checker, dw):
    wires, want = traffic(dw)
    for stall, seed in ((0.0, 1), (0.4, 2)):
        got = run(Path(checker, dw, with_pad=True), wires, len(want), stall, seed)
        assert got == want, f"stall {stall}"


@pytest.mark.parametrize("checker,dw", CHECKERS)
def test_without_the_pad_the_checker_loses_a_fragment(checker, dw):
    wires, want = traffic(dw)
    got = run(Path(checker, dw, with_pad=False), wires, len(want), 0.0, 1)
    assert len(got) < len(want)
