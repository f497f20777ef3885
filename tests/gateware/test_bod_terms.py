# SPDX-License-Identifier: BSD-2-Clause
"""satemu_gw.bod_terms.TerminalScheduler (with its PoolAllocator) alone, in Amaranth's
simulator, against satemu.model.bod.Bod with terminals: every frame's release (its terminal's
slot's end cycle), its header (egress cycle, its terminal's offset) and every record, a terminal
a superframe, read back from the ring as they are written. Terminals with frames contend for an
oversubscribed pool beside synthetic ones; without a table the block is the one terminal."""

import random
from dataclasses import replace

import pytest

from satemu.base.params import ChannelParams, ChannelRegs, frame_words
from satemu.base.records import pack_record, unpack_record
from satemu.base.regmap import BOD_ENABLE, BOD_FCA, CFG_FIELDS
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONOFF, MATCH_MAC,
    TERM_FCA, TERM_SYNTHETIC, UNCLASSIFIED_DROP, TerminalRegs, TerminalTable, terminal_share)
from satemu.model.bod import Bod
from satemu_gw.bod_terms import TerminalScheduler

from simbench import TableHarness, run

TIME48 = (1 << 48) - 1
START = 10


class Mismatch(AssertionError):
    """The block and the model disagree: which signal, for which frame or record, when."""


def run_terms(frames, regs, params, table, seed=0, p_ready=0.6):
    """Pushes ``frames`` ((arrival, length, terminal), every one admitted) as the engine does,
    and checks every release, header and record against the model."""
    rng = random.Random(seed)
    n_t = len(table.terminals) if table else 1
    framed = len(table.framed) if table else 1
    sf = regs.bod_slots * regs.bod_slot_cycles
    end = frames[-1][0] + 4 * sf
    want = Bod(regs, START, params, table=table)
    for k, (a, length, who) in enumerate(frames):
        want.advance(a)
        want.push(k, length, regs.overhead, who)
    want.advance(end + sf)
    share = terminal_share(regs.mem_size, framed)
    offsets, off = [], [0] * framed
    for _, length, who in frames:
        offsets.append(who * share + off[who])
        off[who] = (off[who] + frame_words(length)) % share
    harness = TableHarness(TerminalScheduler(params), table)
    dut = harness.dut
    seen = {"released": 0, "records": 0}

    def fail(what, where, cycle, got, exp):
        raise Mismatch(f"bod_terms.{what}: {where} at cycle {cycle}: block {got}, model {exp}")

    async def bench(ctx):
        for f in CFG_FIELDS:
            ctx.set(getattr(dut.cfg, f.name), getattr(regs, f.name))
        ctx.set(dut.start_at, START)
        pushed = released = 0
        count = 0
        t = 0
        # The allocation of a superframe among several terminals takes hundreds of cycles,
        # longer here than its superframe: the run lasts until every frame is pushed.
        while (t < end or pushed < len(frames) or released < len(frames)) and t < 40 * end:
            done = ctx.get(dut.done_upto)
            push = False
            if pushed < len(frames):
                a, length, who = frames[pushed]
                if t >= a + 2 + rng.randint(0, 3) and done > a and rng.random() < 0.8:
                    push = True
            ctx.set(dut.push.valid, push)
            ctx.set(dut.push.payload.length, frames[pushed][1] if push else 0)
            ctx.set(dut.push.payload.terminal, frames[pushed][2] if push else 0)
            if push:
                pushed += 1
            nxt = frames[pushed][0] if pushed < len(frames) else t
            ctx.set(dut.horizon, min(nxt, t))
            ctx.set(dut.hdr.ready, rng.random() < p_ready)
            hv, rv = ctx.get(dut.hdr.valid), ctx.get(dut.release.valid)
            if rv and not (hv and ctx.get(dut.hdr.ready)):
                fail("release.valid", f"release {released}", t, 1, 0)
            if hv and ctx.get(dut.hdr.ready):
                if released >= len(want.released):
                    fail("release", f"release {released}", t, "a release", "none")
                k, at, egress = want.released[released]
                where = f"frame {k} (arrival {frames[k][0]}, terminal {frames[k][2]})"
                for name, sig, exp in (
                        ("release.departure", dut.release.payload.departure, at & TIME48),
                        ("release.terminal", dut.release.payload.terminal, frames[k][2]),
                        ("release.length", dut.release.payload.length, frames[k][1]),
                        ("hdr.terminal", dut.hdr.payload.terminal, frames[k][2]),
                        ("hdr.egress", dut.hdr.payload.egress, egress & TIME48),
                        ("hdr.offset", dut.hdr.payload.offset, offsets[k])):
                    if ctx.get(sig) != exp:
                        fail(name, where, t, ctx.get(sig), exp)
                released += 1
            count = ctx.get(dut.count)
            await ctx.tick()
            t += 1
        if pushed != len(frames):
            raise Mismatch(f"bod_terms: stalled, {pushed} of {len(frames)} frames pushed")
        ctx.set(dut.hdr.ready, 0)
        ctx.set(dut.push.valid, 0)
        for _ in range(12 + 200 * n_t):
            await ctx.tick()
        count = ctx.get(dut.count)
        done = ctx.get(dut.done_upto)
        final = Bod(regs, START, params, table=table)
        for k, (a, length, who) in enumerate(frames):
            final.advance(a)
            final.push(k, length, regs.overhead, who)
        final.advance(done - 1)
        if count * n_t != len(final.records):
            fail("count", "the run's superframes", t, count, len(final.records) // n_t)
        ring = params.bod_ring
        for rec in range(max(0, count * n_t - ring), count * n_t):
            ctx.set(dut.ring_sel, rec)
            await ctx.tick()
            got = ctx.get(dut.ring_data)
            if got != pack_record(final.records[rec]):
                fail("ring_data", f"record {rec} (read back)", t, unpack_record(got),
                     final.records[rec])
            seen["records"] += 1
        if released != len(final.released):
            fail("release", "the run's releases", t, released, len(final.released))
        seen["released"], seen["count"], seen["final"] = released, count, final

    run(harness, bench)
    return seen


PARAMS = ChannelParams(bod=True, queue_depth=128, latency_floor=64, bod_ring=64,
                       port_pad=60, port_fcs=4, port_gap=3, terminals=4, synthetic=4,
                       demand_levels=8)
BASE = ChannelRegs(bod_flags=BOD_ENABLE, bod_slots=8, bod_slot_cycles=40, bod_slot_bytes=300,
                   overhead=6, delay=100, min_len=60, max_len=600, mem_size=1400,
                   queue_frames=100, bod_latency=2, bod_bg_count=1, bod_bg0=1 << 16)


def _terminals(framed, synthetic, fca):
    terms = [TerminalRegs(key=0x020000000001 + i, queue_frames=32, cra=40 + 30 * i,
                          rbdc_max=4 * 256, vbdc_max=6, flags=TERM_FCA if fca else 0,
                          req_period=1 + i % 2)
             for i in range(framed)]
    kinds = [(DEMAND_CONSTANT, 0, 0), (DEMAND_ONOFF, 1 << 30, 1 << 29), (DEMAND_LEVELS, 0, 0)]
    for i in range(synthetic):
        kind, on, off = kinds[i % 3]
        terms.append(TerminalRegs(flags=TERM_SYNTHETIC, cra=20, rbdc_max=3 * 256, vbdc_max=4,
                                  demand_kind=kind, demand_rate=150 * 256, demand_on=on,
                                  demand_off=off, demand_first=0, demand_count=2))
    return TerminalTable(MATCH_MAC, tuple(terms), UNCLASSIFIED_DROP,
                         ((400 * 256, 2), (0, 3)))


def _regs(table):
    return replace(BASE, **table.registers())


def frames_for(seed, framed, n=60, gap=(10, 80)):
    rng = random.Random(seed)
    frames, t = [], START + 5
    for _ in range(n):
        length = rng.randint(60, 600)
        t += (length + 7) // 8 + rng.randint(*gap)
        frames.append((t, length, rng.randrange(framed)))
    return frames


@pytest.mark.parametrize("seed", [1, 2])
def test_terminals_share_the_slots_as_the_model_says(seed):
    table = _terminals(3, 3, fca=False)
    seen = run_terms(frames_for(seed, 3), _regs(table), PARAMS, table, seed)
    recs = seen["final"].records
    assert seen["released"] == 60
    who = {r.terminal for r in recs if r.used}
    assert {0, 1, 2} <= who and any(r.used for r in recs if r.terminal >= 3)


def test_free_capacity_goes_to_each_terminal_in_turn():
    table = _terminals(2, 2, fca=True)
    regs = replace(_regs(table), bod_flags=BOD_ENABLE | BOD_FCA)
    seen = run_terms(frames_for(7, 2), regs, PARAMS, table, 7)
    assert any(r.g_fca for r in seen["final"].records)


def test_without_a_table_it_is_the_one_terminal():
    regs = replace(BASE, bod_cra=3 * 256 + 128, bod_vbdc_max=8)
    seen = run_terms(frames_for(3, 1), regs, PARAMS, None, 3)
    assert seen["released"] == 60
