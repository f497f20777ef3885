# SPDX-License-Identifier: BSD-2-Clause
"""The duplication block (satemu_gw.duplicate) against its model (satemu.model.duplicate), draw
by draw."""

import random
from types import SimpleNamespace

from satemu.model.duplicate import Duplicate as DuplicateModel
from satemu_gw.duplicate import Duplicate
from simbench import reseed, run


def test_duplicate_matches_model():
    """Draws under changing probabilities (some, none, all) and correlations, with gaps between
    draws and reseeds: every decision, from the cycle after its draw until the next, is the
    model's."""
    rng = random.Random(7)
    dut = Duplicate()
    settings = [(1 << 31, 0), (0, 0), ((1 << 32) - 1, 0), (1 << 28, 1 << 15), (1 << 31, 65535)]

    async def bench(ctx):
        model = DuplicateModel(1)
        hits = 0
        for step in range(1000):
            p, corr = settings[step // 200]
            regs = SimpleNamespace(dup_p=p, dup_corr=corr)
            ctx.set(dut.p, p)
            ctx.set(dut.corr, corr)
            if step in (300, 700):
                await reseed(ctx, dut, model, rng.getrandbits(64))
            expected = model.draw(regs)
            hits += expected
            ctx.set(dut.draw, 1)
            await ctx.tick()
            ctx.set(dut.draw, 0)
            for _ in range(rng.randint(1, 3)):
                assert ctx.get(dut.hit) == expected, f"step {step}"
                await ctx.tick()
        assert 300 < hits < 800
    run(dut, bench)
