# SPDX-License-Identifier: BSD-2-Clause
"""hw.fragment.FragmentPad before LiteEth's 64-bit FCS checker (with hw.simcrc's CRC, as the
simulated board builds it), in Migen's simulator: every frame comes out once, a frame of one beat
(a fragment) as a flagged five-byte runt, and the frames after a fragment are checked afresh;
with the output stalled at random. Without the pad, the same traffic loses frames."""

import random
import zlib

from migen import Module, run_simulation
from liteeth.common import eth_phy_description
from liteeth.mac.crc import LiteEthMACCRC32Checker

from hw.fragment import FragmentPad
from hw.simcrc import fast_fcs

DW = 64
# Idle beats after each frame, at least: the simulated wire's two gap beats and the preamble's.
HOLES = 3


class Path(Module):
    def __init__(self, with_pad: bool):
        with fast_fcs():
            self.submodules.check = LiteEthMACCRC32Checker(eth_phy_description(DW))
        self.sink, self.source = self.check.sink, self.check.source
        if with_pad:
            self.submodules.pad = FragmentPad(DW)
            self.comb += self.pad.source.connect(self.check.sink)
            self.sink = self.pad.sink


def with_fcs(frame: bytes, bad: bool = False) -> bytes:
    return frame + (zlib.crc32(frame) ^ (0xDEADBEEF if bad else 0)).to_bytes(4, "little")


def run(path, wires, expected: int, stall: float, seed: int):
    rnd = random.Random(seed)
    out = []

    def send():
        for data in wires:
            for off in range(0, len(data), DW // 8):
                chunk = data[off:off + DW // 8]
                last = off + DW // 8 >= len(data)
                yield path.sink.data.eq(int.from_bytes(chunk, "little"))
                yield path.sink.last.eq(last)
                yield path.sink.last_be.eq(1 << (len(chunk) - 1) if last else 0)
                yield path.sink.valid.eq(1)
                yield
                while not (yield path.sink.ready):
                    yield
            yield path.sink.valid.eq(0)
            for _ in range(HOLES + rnd.choice((0, 0, 1, 4))):
                yield

    def receive():
        frame = bytearray()
        cycle, after = 0, 0
        while cycle < 20 * len(wires) + 200 and after < 30:
            cycle += 1
            after += len(out) == expected
            ready = rnd.random() >= stall
            yield path.source.ready.eq(ready)
            yield
            if ready and (yield path.source.valid):
                data = (yield path.source.data).to_bytes(DW // 8, "little")
                if (yield path.source.last):
                    count = (yield path.source.last_be).bit_length()
                    frame += data[:count]
                    out.append((bytes(frame), bool((yield path.source.error))))
                    frame = bytearray()
                else:
                    frame += data

    run_simulation(path, [send(), receive()])
    return out


def traffic():
    rnd = random.Random(3)
    wires, want = [], []
    for n in range(30):
        if n % 3 == 1:                      # a fragment: one to eight bytes after the SFD
            data = rnd.randbytes(1 + n % 8)
            wires.append(data)
            want.append((data.ljust(8, b"\0")[:5], True))
        else:
            body = rnd.randbytes(rnd.choice((5, 8, 14, 60, 61, 333)))
            bad = n % 5 == 0
            wires.append(with_fcs(body, bad))
            want.append((body, bad))
    return wires, want


def test_fragments_come_out_as_flagged_runts_and_nothing_is_lost():
    wires, want = traffic()
    for stall, seed in ((0.0, 1), (0.4, 2)):
        assert run(Path(with_pad=True), wires, len(want), stall, seed) == want, f"stall {stall}"


def test_without_the_pad_the_checker_joins_a_fragment_to_the_next_frame():
    wires, want = traffic()
    got = run(Path(with_pad=False), wires, len(want), 0.0, 1)
    assert len(got) < len(want)
