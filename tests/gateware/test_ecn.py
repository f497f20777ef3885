# SPDX-License-Identifier: BSD-2-Clause
"""ECN marking's two halves (satemu_gw.ecnparse, ecnmark) against their model
(satemu.model.ecn), frame by frame: which frames are markable and how, and every byte of a
marked frame, on IPv4 and IPv6 packets of every ECN field, tagged and not, of every length."""

import random

from satemu.base.ether import ECN_IPV4, ECN_VLAN
from satemu.model.ecn import ce_marked, ecn_kind
from satemu_gw.ecnmark import EcnMark
from satemu_gw.ecnparse import EcnParse
from sim.traffic import overlay_ip
from simbench import run


def frames(n: int, seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.choice([rng.randint(1, 70), rng.randint(60, 200), 1500])
        out.append(bytes(overlay_ip(bytearray(rng.randbytes(length)), rng)))
    return out


def beats(frame: bytes) -> list[int]:
    return [int.from_bytes(frame[i:i + 8], "little") for i in range(0, len(frame), 8)]


def test_parse_matches_model():
    """Every frame's kind, in the cycle of its last beat, with gaps between beats."""
    rng = random.Random(3)
    dut = EcnParse()
    sample = frames(600, 1)
    kinds = [ecn_kind(f) for f in sample]
    assert {0, 1, 2, 1 | ECN_VLAN, 2 | ECN_VLAN} <= set(kinds)

    async def bench(ctx):
        for frame, kind in zip(sample, kinds):
            words = beats(frame)
            for k, word in enumerate(words):
                last = k == len(words) - 1
                ctx.set(dut.beat.data, word)
                ctx.set(dut.beat.last, last)
                ctx.set(dut.length, min(len(frame), 8 * (k + 1)))
                ctx.set(dut.take, 1)
                if last:
                    assert ctx.get(dut.kind) == kind, frame[:24].hex()
                await ctx.tick()
                ctx.set(dut.take, 0)
                for _ in range(rng.choice((0, 0, 1))):
                    await ctx.tick()
    run(dut, bench)


def test_mark_matches_model():
    """Every markable frame's beats as the writer stores them marked CE: the model's bytes, and
    an IPv4 header whose checksum still verifies; unmarked frames unchanged."""
    rng = random.Random(4)
    dut = EcnMark()
    sample = [f for f in frames(800, 2) if ecn_kind(f)]
    assert len(sample) > 200

    def verifies(frame: bytes, kind: int) -> bool:
        at = 18 if kind & ECN_VLAN else 14
        s = sum(int.from_bytes(frame[at + i:at + i + 2], "big") for i in range(0, 20, 2))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return s == 0xFFFF

    async def bench(ctx):
        for frame in sample:
            kind = ecn_kind(frame)
            mark = rng.random() < 0.8
            want = beats(ce_marked(frame, kind) if mark else frame)
            if mark and kind & ECN_IPV4 and len(frame) >= (38 if kind & ECN_VLAN else 34):
                assert verifies(ce_marked(frame, kind), kind)
            ctx.set(dut.mark, mark)
            ctx.set(dut.kind, kind)
            for k, word in enumerate(beats(frame)):
                ctx.set(dut.data, word)
                ctx.set(dut.index, k)
                ctx.set(dut.take, 1)
                assert ctx.get(dut.out) == want[k], (k, frame[:32].hex())
                await ctx.tick()
                ctx.set(dut.take, 0)
                for _ in range(rng.choice((0, 0, 2))):
                    await ctx.tick()
    run(dut, bench)
