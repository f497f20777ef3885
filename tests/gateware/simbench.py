# SPDX-License-Identifier: BSD-2-Clause
"""Runs a unit test's testbench in Amaranth's simulator, at one cycle a microsecond."""

from amaranth import Elaboratable, Module
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator


def run(dut, bench):
    """Simulate ``dut`` under the async testbench ``bench`` until it returns."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


async def reseed(ctx, dut, model, seed: int) -> None:
    """A ``load`` strobe of ``seed`` into a block with a PRNG (``dut.seed``, ``dut.load``), as a
    commit with RESEED makes it, and the same reseed of its ``model``."""
    ctx.set(dut.seed, seed)
    ctx.set(dut.load, 1)
    await ctx.tick()
    ctx.set(dut.load, 0)
    model.reseed(seed)


class TableHarness(Elaboratable):
    """A block that reads its terminals' rows and levels (``row_addr``/``row``,
    ``level_addr``/``level``) from memories holding ``table``'s, as from the terminal table's
    active bank (the BoD pool allocator, the terminals' slot scheduler)."""

    def __init__(self, dut, table):
        from satemu_gw.termtable import POOL_FIELDS
        self.dut = dut
        terminals = table.terminals if table else ()
        self.rows = [{name: getattr(t, name) for name in POOL_FIELDS} for t in terminals]
        self.levels = [{"rate": r, "length": n} for r, n in (table.levels if table else ())]

    def elaborate(self, platform):
        from satemu_gw.termtable import Level, PoolCfg
        m = Module()
        dut = self.dut
        m.submodules.dut = dut
        m.submodules.rows = rows = Memory(shape=PoolCfg, depth=max(len(self.rows), 1),
                                          init=self.rows)
        m.submodules.lvls = lvls = Memory(shape=Level, depth=max(len(self.levels), 1),
                                          init=self.levels)
        r, lr = rows.read_port(), lvls.read_port()
        m.d.comb += [r.addr.eq(dut.row_addr), dut.row.eq(r.data),
                     lr.addr.eq(dut.level_addr), dut.level.eq(lr.data)]
        return m
