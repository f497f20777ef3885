# SPDX-License-Identifier: BSD-2-Clause
"""The corruption block (satemu_gw.corrupt) against its model (satemu.model.corrupt), draw by
draw."""

import random
from types import SimpleNamespace

from satemu.model.corrupt import Corrupt as CorruptModel, flipped
from satemu_gw.corrupt import Corrupt
from simbench import reseed, run


def test_corrupt_matches_model():
    """Draws under changing probabilities (none, some, all) and correlations, for frames of every
    length up to 4095 bytes, with gaps between draws and reseeds: every decision and bit, from
    the cycle after its draw until the next, is the model's."""
    rng = random.Random(5)
    dut = Corrupt()
    settings = [(1 << 31, 0), (0, 0), ((1 << 32) - 1, 0), (1 << 28, 1 << 15), (1 << 31, 65535)]

    async def bench(ctx):
        model = CorruptModel(1)
        hits = 0
        for step in range(1000):
            p, corr = settings[step // 200]
            regs = SimpleNamespace(cor_p=p, cor_corr=corr)
            length = rng.choice([1, 60, 1500, 4095, rng.randint(1, 4095)])
            ctx.set(dut.p, p)
            ctx.set(dut.corr, corr)
            if step in (300, 700):
                await reseed(ctx, dut, model, rng.getrandbits(64))
            expected = model.draw(regs, length)
            hits += expected is not None
            ctx.set(dut.length, length)
            ctx.set(dut.draw, 1)
            await ctx.tick()
            ctx.set(dut.draw, 0)
            for _ in range(rng.randint(1, 3)):
                assert ctx.get(dut.flip) == (expected is not None), f"step {step}"
                if expected is not None:
                    assert ctx.get(dut.bit) == expected < 8 * length, f"step {step}"
                await ctx.tick()
        assert 300 < hits < 800
    run(dut, bench)


def test_flipped_is_one_bit():
    frame = bytes(range(64))
    assert flipped(frame, None) == frame
    out = flipped(frame, 8 * 10 + 3)
    assert out[10] == frame[10] ^ 8 and out[:10] == frame[:10] and out[11:] == frame[11:]
