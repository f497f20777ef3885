# SPDX-License-Identifier: BSD-2-Clause
"""The BoD pool allocator (satemu_gw.bod_pool.PoolAllocator) against satemu.model.bod.Bod's
superframe: superframe after superframe, with random backlogs and arrivals on the terminals
with frames, every terminal's grants, requests and record, the runs of slots and their turn,
equal the model's; synthetic terminals' demand (constant, on/off, levels) included."""

import random
from dataclasses import replace


from satemu.base.params import ChannelParams, ChannelRegs
from satemu.base.regmap import BOD_BG_REPEAT, BOD_ENABLE, BOD_FCA, BOD_RATE_ONE
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONOFF, MATCH_MAC,
    TERM_FCA, TERM_SYNTHETIC, UNCLASSIFIED_DROP, TerminalRegs, TerminalTable)
from satemu.model.bod import Bod
from satemu_gw.bod_pool import PoolAllocator

from simbench import TableHarness, run

RECORD = ("rbdc_req", "vbdc_req", "g_cra", "g_rbdc", "g_vbdc", "g_fca", "backlog")


def _table(rng, slots, framed, synthetic):
    terms, levels = [], []
    budget = slots * BOD_RATE_ONE
    for i in range(framed + synthetic):
        cra = rng.choice([0, rng.randrange(budget // (framed + synthetic) + 1)])
        flags = TERM_FCA if rng.random() < 0.4 else 0
        t = TerminalRegs(key=0x020000000000 + i, flags=flags, cra=cra,
                         rbdc_max=rng.choice([0, rng.randrange(1, slots * 256)]),
                         rbdc_timeout=rng.choice([0, rng.randrange(1, 6)]),
                         vbdc_max=rng.choice([0, rng.randrange(1, 300)]),
                         req_period=rng.randrange(1, 4))
        if i >= framed:
            kind = rng.choice([DEMAND_CONSTANT, DEMAND_ONOFF, DEMAND_LEVELS])
            t = replace(t, flags=t.flags | TERM_SYNTHETIC, demand_kind=kind,
                        demand_rate=rng.randrange(0, 3000 * 256))
            if kind == DEMAND_ONOFF:
                t = replace(t, demand_on=rng.randrange(1 << 32), demand_off=rng.randrange(1 << 32))
            if kind == DEMAND_LEVELS:
                n = rng.randrange(1, 4)
                t = replace(t, demand_first=len(levels), demand_count=n)
                levels += [(rng.randrange(0, 4000 * 256), rng.randrange(1, 4)) for _ in range(n)]
        terms.append(t)
    return TerminalTable(MATCH_MAC, tuple(terms), UNCLASSIFIED_DROP, tuple(levels))


def _check(regs, table, params, superframes, seed):
    rng = random.Random(seed)
    harness = TableHarness(PoolAllocator(params), table)
    dut = harness.dut
    n = len(table.terminals) if table else 1
    framed = len(table.framed) if table else 1

    async def bench(ctx):
        model = Bod(regs, 0, params, table=table)
        for f in regs.__dataclass_fields__:
            if f.startswith(("bod_", "term_")) or f in ("overhead", "seed"):
                ctx.set(getattr(dut.cfg, f), getattr(regs, f))
        for k in range(superframes):
            for i in range(framed):
                s = model.state[i]
                s.backlog = rng.choice([0, rng.randrange(1 << 16), rng.randrange(1 << 31)])
                s.arrived = rng.choice([0, rng.randrange(1 << 14), rng.randrange(1 << 31)])
                ctx.set(dut.backlog[i], s.backlog)
                ctx.set(dut.arrived[i], s.arrived)
            model.k = k
            model._superframe()
            ctx.set(dut.k, k)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            took = 0
            while ctx.get(dut.busy):
                took |= ctx.get(dut.took)
                await ctx.tick()
            runs = []
            ctx.set(dut.runs.ready, 1)
            while ctx.get(dut.runs.valid):
                runs.append((ctx.get(dut.runs.payload.terminal),
                             ctx.get(dut.runs.payload.count)))
                await ctx.tick()
            ctx.set(dut.runs.ready, 0)
            want_runs = []
            for t in model.owners:
                if want_runs and want_runs[-1][0] == t:
                    want_runs[-1] = (t, want_runs[-1][1] + 1)
                else:
                    want_runs.append((t, 1))
            assert runs == want_runs, f"superframe {k}: runs {runs} != {want_runs}"
            assert ctx.get(dut.granted) == model.granted
            assert ctx.get(dut.bg) == model.cur[0].bg
            for t in range(n):
                ctx.set(dut.rec_addr, t)
                await ctx.tick()
                got = {name: ctx.get(getattr(dut.rec, name)) for name in RECORD}
                want = {name: getattr(model.cur[t], name) for name in RECORD}
                assert got == want, f"superframe {k}, terminal {t}: {got} != {want}"
                if t >= framed:
                    assert ctx.get(dut.rec.used) == model.cur[t].used, (k, t)
            # A request consumed a terminal with frames' arrivals exactly where the model's
            # did (its arrived is 0 after the superframe).
            for i in range(framed):
                assert bool(took >> i & 1) == (model.state[i].arrived == 0
                                               and model.state[i].req_wait
                                               == (table.framed[i] if table else
                                                   _own(regs)).req_period - 1), (k, i)
    run(harness, bench)


def _own(regs):
    return TerminalRegs(req_period=regs.bod_req_period)


def _regs(rng, slots, framed, synthetic, fca_pool=False):
    return ChannelRegs(
        bod_flags=BOD_ENABLE | (BOD_FCA if fca_pool else 0) | BOD_BG_REPEAT, bod_slots=slots,
        bod_slot_bytes=rng.randrange(40, 300), bod_slot_cycles=100,
        bod_cra=rng.randrange(slots * 128), bod_rbdc_max=rng.randrange(1, slots * 256),
        bod_rbdc_timeout=rng.randrange(0, 4), bod_vbdc_max=rng.randrange(1, 200),
        bod_req_period=rng.randrange(1, 4), bod_latency=rng.randrange(1, 30), bod_bg_count=2,
        bod_bg0=rng.randrange(slots // 3) | 3 << 16, bod_bg1=rng.randrange(slots) | 2 << 16,
        seed=rng.randrange(1, 1 << 40), term_match=MATCH_MAC if framed else 0,
        term_framed=framed, term_synthetic=synthetic)


def test_one_terminal_without_a_table_is_the_channel_itself():
    rng = random.Random(1)
    params = ChannelParams(bod=True, terminals=2, synthetic=2, demand_levels=8)
    _check(_regs(rng, 40, 0, 0, fca_pool=True), None, params, 60, 2)


def test_terminals_share_an_oversubscribed_pool_as_the_model_says():
    rng = random.Random(5)
    params = ChannelParams(bod=True, terminals=4, synthetic=6, demand_levels=16)
    for trial in range(3):
        framed, synthetic = rng.randrange(1, 5), rng.randrange(0, 7)
        slots = rng.randrange(8, 120)
        table = _table(rng, slots, framed, synthetic)
        _check(_regs(rng, slots, framed, synthetic), table, params, 40, trial)
