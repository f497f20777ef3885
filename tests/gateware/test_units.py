# SPDX-License-Identifier: BSD-2-Clause
"""Small gateware units against their reference models in Amaranth's simulator, cycle by cycle."""

import random
from fractions import Fraction

from satemu.base.prng import Xoshiro128pp
from satemu_gw.prng import Prng
from satemu_gw.sertime import SerTime
from simbench import run


def test_prng_matches_model():
    dut = Prng()
    seeds = [1, 0xDEADBEEF_12345678, 0]

    async def bench(ctx):
        model = Xoshiro128pp(1)
        for step in range(300):
            if step in (100, 200):                 # reseed mid-stream
                seed = seeds[step // 100]
                ctx.set(dut.seed, seed)
                ctx.set(dut.load, 1)
                await ctx.tick()
                ctx.set(dut.load, 0)
                model = Xoshiro128pp(seed)
            advance = step % 3 != 2                # draws are held while next is low
            expected = model.next() if advance else None
            if advance:
                assert ctx.get(dut.out) == expected, f"step {step}"
            ctx.set(dut.next, int(advance))
            await ctx.tick()
            ctx.set(dut.next, 0)
    run(dut, bench)


def test_sertime_is_exact():
    dut = SerTime(m_bits=12)
    rng = random.Random(4)
    cases = [(60, 400, 0, 1), (1518, 70, 10, 17), (4095, 0, 1, 3), (1, 0, 0, 1),
             (2303, (1 << 32) - 1, (1 << 32) - 2, (1 << 32) - 1)]
    for _ in range(200):
        den = rng.randint(1, (1 << 32) - 1)
        cases.append((rng.randint(0, 4095), rng.randint(0, 1 << 20), rng.randint(0, den - 1), den))

    async def bench(ctx):
        for m, q, num, den in cases:
            ctx.set(dut.m, m)
            ctx.set(dut.q, q)
            ctx.set(dut.num, num)
            ctx.set(dut.den, den)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycles = 0
            while ctx.get(dut.busy):
                await ctx.tick()
                cycles += 1
            assert cycles == 12
            exact = m * (q + Fraction(num, den))
            ti, tf = ctx.get(dut.ti), ctx.get(dut.tf)
            assert tf < den and ti + Fraction(tf, den) == exact, (m, q, num, den)
    run(dut, bench)


def test_divider_is_exact():
    from satemu_gw.divider import Divider
    dut = Divider(40, 32)
    rng = random.Random(9)
    cases = [(0, 1), (1, 1), ((1 << 40) - 1, 1), ((1 << 40) - 1, (1 << 32) - 1), (255, 256)]
    cases += [(rng.randrange(1 << 40), rng.randrange(1, 1 << rng.randint(1, 32))) for _ in range(100)]

    async def bench(ctx):
        for n, d in cases:
            ctx.set(dut.n, n)
            ctx.set(dut.d, d)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            while ctx.get(dut.busy):
                await ctx.tick()
            assert (ctx.get(dut.q), ctx.get(dut.r)) == divmod(n, d), (n, d)
    run(dut, bench)


def test_bod_allocator_matches_model():
    """Superframe after superframe, with random backlog and arrivals, the allocator's grants
    and requests equal satemu.model.bod's."""
    from satemu.model.bod import Bod
    from satemu.base.params import ChannelParams, ChannelRegs
    from satemu.base.regmap import BOD_ENABLE, BOD_FCA, BOD_BG_REPEAT
    from satemu_gw.bod_alloc import BodAllocator

    rng = random.Random(3)
    configs = [
        ChannelRegs(bod_flags=BOD_ENABLE, bod_slots=40, bod_slot_bytes=100, bod_cra=300,
                    bod_rbdc_max=20 * 256, bod_rbdc_timeout=3, bod_vbdc_max=60, bod_req_period=1,
                    bod_latency=8, bod_bg_count=1, bod_bg0=12 | 1 << 16),
        ChannelRegs(bod_flags=BOD_ENABLE | BOD_FCA | BOD_BG_REPEAT, bod_slots=100, bod_slot_bytes=188,
                    bod_cra=1000, bod_rbdc_max=50 * 256, bod_rbdc_timeout=0, bod_vbdc_max=500,
                    bod_req_period=3, bod_latency=64, bod_bg_count=3,
                    bod_bg0=30 | 5 << 16, bod_bg1=95 | 2 << 16, bod_bg2=0 | 4 << 16),
    ]
    for regs in configs:
        dut = BodAllocator()

        async def bench(ctx, regs=regs):
            model = Bod(regs, 0, ChannelParams(bod=True))
            for f in regs.__dataclass_fields__:
                if f.startswith("bod_") or f == "overhead":
                    ctx.set(getattr(dut.cfg, f), getattr(regs, f))
            for k in range(200):
                backlog = rng.choice([0, rng.randrange(1 << 16), rng.randrange(1 << 31)])
                arrived = rng.choice([0, rng.randrange(1 << 14), rng.randrange(1 << 31)])
                model.k = k
                model.state[0].backlog, model.state[0].arrived = backlog, arrived
                model._superframe()
                want = model.cur[0]
                ctx.set(dut.k, k)
                ctx.set(dut.backlog, backlog)
                ctx.set(dut.arrived, arrived)
                ctx.set(dut.start, 1)
                await ctx.tick()
                ctx.set(dut.start, 0)
                while ctx.get(dut.busy):
                    await ctx.tick()
                got = {n: ctx.get(getattr(dut, n)) for n in
                       ("rbdc_req", "vbdc_req", "bg", "g_cra", "g_rbdc", "g_vbdc", "g_fca")}
                exp = {n: getattr(want, n) for n in got}
                assert got == exp, f"superframe {k}: {got} != {exp}"
                assert ctx.get(dut.granted) == want.granted
        run(dut, bench)
