# SPDX-License-Identifier: BSD-2-Clause
"""The jitter block (satemu_gw.jitter) against its model (satemu.model.jitter), draw by draw."""

import random
from types import SimpleNamespace

from satemu.base.regmap import JITTER_TABLE
from satemu.model.jitter import Jitter as JitterModel
from satemu_gw.jitter import Jitter
from simbench import reseed, run


def test_jitter_matches_model():
    """Both banks written with random entries (the extremes included); draws under changing
    sigma, correlation and bank, with gaps between them and reseeds: every offset, from the
    second cycle after its draw, is the model's exactly."""
    rng = random.Random(7)
    banks = [[rng.randint(-32768, 32767) for _ in range(JITTER_TABLE)] for _ in range(2)]
    banks[0][:4] = [-32768, 32767, 0, -1]
    dut = Jitter()
    settings = [(10_000, 0, 0), ((1 << 32) - 1, 0, 1), (37_500, 58_982, 0), (1, 65_535, 1),
                (123_457, 1 << 15, 1)]

    async def bench(ctx):
        for bank, table in enumerate(banks):
            for i, value in enumerate(table):
                ctx.set(dut.w_en, 1)
                ctx.set(dut.w_addr, bank * JITTER_TABLE + i)
                ctx.set(dut.w_data, value & 0xFFFF)
                await ctx.tick()
        ctx.set(dut.w_en, 0)
        model = JitterModel(1, banks)
        checked = 0
        for step in range(600):
            sigma, corr, bank = settings[step // 120]
            regs = SimpleNamespace(jit_sigma=sigma, jit_corr=corr, jit_bank=bank)
            ctx.set(dut.sigma, sigma)
            ctx.set(dut.corr, corr)
            ctx.set(dut.bank, bank)
            if step in (200, 400):               # a reseed, as a commit with RESEED makes it
                await reseed(ctx, dut, model, rng.getrandbits(64))
            expected = model.draw(regs)
            ctx.set(dut.draw, 1)
            await ctx.tick()
            ctx.set(dut.draw, 0)
            await ctx.tick()
            for _ in range(rng.randint(0, 3)):   # the offset holds until the next draw's
                assert ctx.get(dut.offset) == expected, f"step {step}"
                await ctx.tick()
            assert ctx.get(dut.offset) == expected, f"step {step}"
            checked += 1
        assert checked == 600
    run(dut, bench)
