# SPDX-License-Identifier: BSD-2-Clause
"""Register semantics of the whole channel, in Amaranth's simulator: shadow read-back, commit
refusal while pending, layout changes only while the delay line is empty, snapshot and clear."""

from dataclasses import replace

from amaranth import Module
from amaranth.sim import Simulator

from satemu.base.params import ChannelParams, ChannelRegs
from satemu.base.regmap import (CFG_FIELDS, REGMAP, COMMIT_APPLY, COMMIT_AT, COMMIT_LAYOUT,
    STATS_SNAPSHOT, STATS_CLEAR, STATUS_LATE, STATUS_PENDING)
from satemu_gw.channel import Channel
from satemu_gw.timebase import Timebase

PARAMS = ChannelParams(latency_floor=64)


class Harness:
    """Bus access, a one-frame driver and a zero-latency memory, around one simulated channel."""

    def __init__(self):
        self.dut = Channel(PARAMS)
        self.tb = Timebase()
        m = Module()
        m.submodules.dut, m.submodules.tb = self.dut, self.tb
        m.d.comb += self.dut.now.eq(self.tb.now)
        self.sim = Simulator(m)
        self.sim.add_clock(1e-6)
        self.cmd_addrs = []
        self.sim.add_process(self.memory)

    async def memory(self, ctx):
        """Always ready (and so is the egress sink); read data one cycle after the command."""
        dut, words, pending = self.dut, {}, []
        writes = []
        ctx.set(dut.mem.cmd.ready, 1)
        ctx.set(dut.mem.wdata.ready, 1)
        ctx.set(dut.source.ready, 1)
        async for _, _, cmd_v, cmd_p, wd_v, wd_p in ctx.tick().sample(
                dut.mem.cmd.valid, dut.mem.cmd.payload, dut.mem.wdata.valid, dut.mem.wdata.payload):
            ctx.set(dut.mem.rdata.valid, 0)
            if pending:
                ctx.set(dut.mem.rdata.valid, 1)
                ctx.set(dut.mem.rdata.payload, words.get(pending.pop(0), 0))
            if wd_v:
                words[writes.pop(0)] = wd_p.data
            if cmd_v:
                self.cmd_addrs.append(cmd_p.addr)
                (writes if cmd_p.we else pending).append(cmd_p.addr)

    async def write(self, ctx, addr, value):
        bus = self.dut.bus
        ctx.set(bus.addr, addr)
        ctx.set(bus.w_data, value)
        ctx.set(bus.w_en, 1)
        await ctx.tick()
        ctx.set(bus.w_en, 0)

    async def read(self, ctx, name, word=0):
        ctx.set(self.dut.bus.addr, REGMAP[name].offset + word)
        await ctx.tick()
        return ctx.get(self.dut.bus.r_data)

    async def read64(self, ctx, name):
        return await self.read(ctx, name, 0) | (await self.read(ctx, name, 1) << 32)

    async def load(self, ctx, regs: ChannelRegs):
        for f in CFG_FIELDS:
            value = getattr(regs, f.name)
            for k in range(f.words):
                await self.write(ctx, f.offset + k, (value >> (32 * k)) & 0xFFFF_FFFF)

    async def frame(self, ctx, length=64):
        sink = self.dut.sink
        beats = (length + 7) // 8
        for k in range(beats):
            last = k == beats - 1
            ctx.set(sink.valid, 1)
            ctx.set(sink.payload, {"data": k, "last": last, "nbytes": length - 8 * k if last else 8,
                                   "err": 0})
            await ctx.tick().until(sink.ready)
        ctx.set(sink.valid, 0)

    def run(self, bench):
        self.sim.add_testbench(bench)
        self.sim.run()


def test_shadow_fields_read_back():
    h = Harness()
    regs = ChannelRegs(loss_mode=2, ge_p=123, seed=0x1234_5678_9ABC_DEF0, rate_q=7, rate_num=3,
                       rate_den=11, overhead=24, delay=(1 << 39) + 5, queue_frames=77,
                       queue_bytes=640_000, min_len=64, max_len=1522, mem_base=4096, mem_size=1 << 20)

    async def bench(ctx):
        await h.load(ctx, regs)
        for f in CFG_FIELDS:
            value = 0
            for k in range(f.words):
                value |= await h.read(ctx, f.name, k) << (32 * k)
            assert value == getattr(regs, f.name), f.name
    h.run(bench)


def test_reset_values_read_back():
    # The profile's words are read from a copy refilled after reset; untouched words must read
    # as the channel's reset values, and a word written while the refill runs keeps its value.
    h = Harness()
    defaults = ChannelRegs(queue_frames=PARAMS.queue_depth)

    async def bench(ctx):
        await h.write(ctx, REGMAP["overhead"].offset, 99)
        await ctx.tick().repeat(80)
        for f in CFG_FIELDS:
            value = 0
            for k in range(f.words):
                value |= await h.read(ctx, f.name, k) << (32 * k)
            expect = 99 if f.name == "overhead" else getattr(defaults, f.name)
            assert value == expect, f.name
    h.run(bench)


def test_commit_refused_while_pending_and_layout_only_when_empty():
    h = Harness()
    base = ChannelRegs(mem_base=1000, mem_size=4096, delay=2000)
    moved = replace(base, mem_base=50_000)

    async def bench(ctx):
        commit = REGMAP["commit"].offset
        await h.load(ctx, base)
        await h.write(ctx, commit, COMMIT_APPLY | COMMIT_LAYOUT)
        await h.write(ctx, commit, COMMIT_APPLY)           # still pending: refused
        status = await h.read(ctx, "status")
        assert status & 0b1001 == 0b1001, f"pending and refused expected, status {status:#x}"
        await ctx.tick().repeat(8)
        status = await h.read(ctx, "status")
        assert status & 0b0111 == 0b0100, f"applied, empty, layout taken; status {status:#x}"

        # A frame sits in the delay line: a layout commit now is rejected, the rest applies.
        await h.frame(ctx)
        await ctx.tick().repeat(40)
        first = list(h.cmd_addrs)
        assert first and min(first) == 1000, first
        await h.load(ctx, moved)
        await h.write(ctx, commit, COMMIT_APPLY | COMMIT_LAYOUT)
        await ctx.tick().repeat(8)
        status = await h.read(ctx, "status")
        assert status & 0b0111 == 0b0010, f"layout rejected, not empty; status {status:#x}"
        await h.frame(ctx)
        await ctx.tick().repeat(40)
        assert min(h.cmd_addrs[len(first):]) >= 1000 and max(h.cmd_addrs) < 1000 + 4096

        # Once both frames have left, the same layout commit is taken.
        await ctx.tick().repeat(2200)
        assert (await h.read(ctx, "status")) & 0b0100, "delay line should be empty"
        await h.write(ctx, commit, COMMIT_APPLY | COMMIT_LAYOUT)
        await ctx.tick().repeat(8)
        assert (await h.read(ctx, "status")) & 0b0110 == 0b0100
        mark = len(h.cmd_addrs)
        await h.frame(ctx)
        await ctx.tick().repeat(40)
        assert min(h.cmd_addrs[mark:]) == 50_000

        # Snapshot, then clear: counters read from the snapshot; clear zeroes live values.
        stats = REGMAP["stats"].offset
        await ctx.tick().repeat(2200)
        await h.write(ctx, stats, STATS_SNAPSHOT)
        assert await h.read64(ctx, "rx_frames") == 3
        assert await h.read64(ctx, "tx_frames") == 3
        assert await h.read64(ctx, "tx_bytes") == 3 * 64
        snap = await h.read64(ctx, "snapshot_cycle")
        await h.write(ctx, stats, STATS_CLEAR)
        assert await h.read64(ctx, "rx_frames") == 3          # the snapshot is unchanged
        await h.write(ctx, stats, STATS_SNAPSHOT)
        assert await h.read64(ctx, "rx_frames") == 0
        assert await h.read64(ctx, "queue_frames_hwm") == 0
        assert await h.read64(ctx, "snapshot_cycle") > snap
    h.run(bench)


def test_every_read_address_returns_its_word():
    # Each snapshot input, the BoD words and the status get a distinct value; every address
    # past the profile's words must read exactly its word, and an unmapped or write-only one 0
    # (the read multiplexer is a tree over the address bits, built from the map).
    from satemu.base.regmap import BOD_RECORD_WORDS
    from satemu_gw.regs import STAT_INPUTS, Regs

    dut = Regs(ChannelParams(bod=True))
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    cfg_words = sum(f.words for f in CFG_FIELDS)
    now = 0x0123_4567_89AB_CDEF
    inputs = {name: (0x9E37_79B9_7F4A_7C15 * (k + 1)) & (2**64 - 1)
              for k, name in enumerate(STAT_INPUTS)}
    bod_rec = sum((0xB0D0_0000 + k) << (32 * k) for k in range(BOD_RECORD_WORDS))
    expect = {}
    for name, value in list(inputs.items()) + [("snapshot_cycle", now)]:
        expect[REGMAP[name].offset] = value & 0xFFFF_FFFF
        expect[REGMAP[name].offset + 1] = value >> 32
    expect[REGMAP["bod_count"].offset] = 0x5EED_0042
    for k in range(BOD_RECORD_WORDS):
        expect[REGMAP["bod_rec"].offset + k] = 0xB0D0_0000 + k
    expect[REGMAP["status"].offset] = 0b0100          # the delay line empty, nothing pending

    async def bench(ctx):
        for name, value in inputs.items():
            ctx.set(getattr(dut, name), value)
        ctx.set(dut.now, now)
        ctx.set(dut.empty, 1)
        ctx.set(dut.bod_count, 0x5EED_0042)
        ctx.set(dut.bod_rec, bod_rec)
        ctx.set(dut.bus.addr, REGMAP["stats"].offset)
        ctx.set(dut.bus.w_data, STATS_SNAPSHOT)
        ctx.set(dut.bus.w_en, 1)
        await ctx.tick()
        ctx.set(dut.bus.w_en, 0)
        for name in inputs:                       # the snapshot, not the live value, is read
            ctx.set(getattr(dut, name), 0)
        got = {}
        for addr in range(cfg_words, 256):
            ctx.set(dut.bus.addr, addr)
            await ctx.tick()
            got[addr] = ctx.get(dut.bus.r_data)
        assert got == {a: expect.get(a, 0) for a in range(cfg_words, 256)}

    sim.add_testbench(bench)
    sim.run()


def test_commit_at_a_named_cycle():
    """COMMIT with AT: pending until the cycle in COMMIT_CYCLE, then applied; frames up to that
    cycle keep the old profile (here: min_len), later ones take the new. A cycle already past
    takes the write's cycle and sets STATUS's late bit."""
    h = Harness()
    base = ChannelRegs(mem_base=1000, mem_size=4096, delay=2000)
    strict = replace(base, min_len=100)          # the 64-byte test frame becomes a runt

    async def bench(ctx):
        commit, cycle = REGMAP["commit"].offset, REGMAP["commit_cycle"].offset
        await h.load(ctx, base)
        await h.write(ctx, commit, COMMIT_APPLY | COMMIT_LAYOUT)
        await ctx.tick().repeat(8)
        await h.load(ctx, strict)
        at = ctx.get(h.tb.now) + 300
        await h.write(ctx, cycle, at & 0xFFFF_FFFF)
        await h.write(ctx, cycle + 1, at >> 32)
        await h.write(ctx, commit, COMMIT_APPLY | COMMIT_AT)
        status = await h.read(ctx, "status")
        assert status & (STATUS_PENDING | STATUS_LATE) == STATUS_PENDING, hex(status)
        await h.frame(ctx)                       # arrives well before `at`: old profile
        while ctx.get(h.tb.now) < at - 2:
            await ctx.tick()
        assert (await h.read(ctx, "status")) & STATUS_PENDING, "applied before its cycle"
        await ctx.tick().repeat(8)
        assert not (await h.read(ctx, "status")) & STATUS_PENDING, "not applied after its cycle"
        await h.frame(ctx)                       # after `at`: a runt now
        await ctx.tick().repeat(40)
        await h.write(ctx, REGMAP["stats"].offset, STATS_SNAPSHOT)
        assert await h.read64(ctx, "rx_frames") == 2
        assert await h.read64(ctx, "drop_runt") == 1

        # A named cycle already past: taken at the write, flagged late.
        await h.load(ctx, base)
        past = ctx.get(h.tb.now) - 10
        await h.write(ctx, cycle, past & 0xFFFF_FFFF)
        await h.write(ctx, cycle + 1, past >> 32)
        await h.write(ctx, commit, COMMIT_APPLY | COMMIT_AT)
        await ctx.tick().repeat(8)
        status = await h.read(ctx, "status")
        assert status & (STATUS_PENDING | STATUS_LATE) == STATUS_LATE, hex(status)
        await h.frame(ctx)
        await ctx.tick().repeat(40)
        await h.write(ctx, REGMAP["stats"].offset, STATS_SNAPSHOT)
        assert await h.read64(ctx, "drop_runt") == 1, "the late commit did not apply"
        # A plain commit clears the late bit.
        await h.write(ctx, commit, COMMIT_APPLY)
        await ctx.tick().repeat(8)
        assert not (await h.read(ctx, "status")) & STATUS_LATE
    h.run(bench)
