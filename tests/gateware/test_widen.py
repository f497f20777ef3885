# SPDX-License-Identifier: BSD-2-Clause
"""The port widener against its model: the wide commands a back-to-back stream becomes, and
read-after-write data through a 128-bit memory with random stalls and latencies."""

import random
from collections import deque

from amaranth.sim import Simulator

from satemu.model.widen import NarrowMemory, WideMemory, merge
from satemu_gw.widen import MemWiden

AW = 12


class Bench:
    """One testbench process drives every input and samples every output each cycle (so no
    ordering between processes matters). The wide side is a DRAM that takes its commands in
    order: a write's data is fetched (``wdata.ready``) a few cycles after the write reaches
    the head, a read's answer comes a fixed-or-random latency after it executes."""

    def __init__(self, dut, cmds, rng, *, gap=0.0, cmd_stall=0.0, rd_stall=0.0, latency=(6, 6),
                 fetch=(1, 1), data_lag=(1, 1)):
        self.dut, self.cmds, self.rng = dut, cmds, rng
        self.gap, self.cmd_stall, self.rd_stall = gap, cmd_stall, rd_stall
        self.latency, self.fetch, self.data_lag = latency, fetch, data_lag
        self.wide_cmds: list[tuple[bool, int]] = []
        self.masks: list[int] = []
        self.answers: list[int] = []
        self.expected: list[int] = []
        self.merged = 0

    async def run(self, ctx):
        dut, rng = self.dut, self.rng
        narrow, wide = self.narrow, self.wide = NarrowMemory(), WideMemory()
        todo = deque(self.cmds)          # (we, addr, data)
        wdata = deque()                  # (cycle it may be offered, data) in write order
        dram = deque()                   # accepted wide commands: (we, addr, due)
        answers = deque()                # (cycle, data) of executed reads
        offered = None
        cycle = quiet = 0
        # Until everything has gone and the widener has had time to flush a waiting word.
        while quiet < 300:
            busy = todo or offered or wdata or dram or answers or len(self.answers) < len(self.expected)
            quiet = 0 if busy else quiet + 1
            cycle += 1
            assert cycle < 20000, ("stuck", len(todo), offered, list(wdata)[:3], list(dram)[:3], list(answers)[:3], len(self.answers), len(self.expected), len(self.wide_cmds))
            if offered is None and todo and rng.random() >= self.gap:
                offered = todo.popleft()
            ctx.set(dut.narrow.cmd.valid, offered is not None)
            if offered is not None:
                ctx.set(dut.narrow.cmd.payload, {"we": offered[0], "addr": offered[1]})
            w_off = bool(wdata) and wdata[0][0] <= cycle
            ctx.set(dut.narrow.wdata.valid, w_off)
            if w_off:
                ctx.set(dut.narrow.wdata.payload, {"data": wdata[0][1], "we": 0xFF})
            rd_ready = rng.random() >= self.rd_stall
            ctx.set(dut.narrow.rdata.ready, rd_ready)
            # The DRAM: its head command executes when due; a write fetches its data then.
            head = dram[0] if dram and dram[0][2] <= cycle else None
            ctx.set(dut.wide.wdata.ready, head is not None and head[0])
            ans = answers[0] if answers and answers[0][0] <= cycle else None
            ctx.set(dut.wide.rdata.valid, ans is not None)
            if ans is not None:
                ctx.set(dut.wide.rdata.payload, ans[1])
            c_ready = rng.random() >= self.cmd_stall
            ctx.set(dut.wide.cmd.ready, c_ready)

            # Sample, then account for this cycle's transfers.
            if offered is not None and ctx.get(dut.narrow.cmd.ready):
                we, addr, data = offered
                if we:
                    narrow.write(addr, data)
                    wdata.append((cycle + rng.randint(*self.data_lag), data))
                else:
                    self.expected.append(narrow.read(addr))
                offered = None
            if w_off and ctx.get(dut.narrow.wdata.ready):
                wdata.popleft()
            if ctx.get(dut.narrow.rdata.valid) and rd_ready:
                self.answers.append(ctx.get(dut.narrow.rdata.payload))
            if head is not None:
                we, addr, _ = dram.popleft()
                if we:
                    assert ctx.get(dut.wide.wdata.valid), "write data not there when fetched"
                    w = ctx.get(dut.wide.wdata.payload)
                    self.masks.append(w["we"])
                    wide.write(addr, w["data"], w["we"])
                else:
                    due = max(cycle + rng.randint(*self.latency), answers[-1][0] + 1 if answers else 0)
                    answers.append((due, wide.read(addr)))
            if ans is not None:
                answers.popleft()
            if c_ready and ctx.get(dut.wide.cmd.valid):
                p = ctx.get(dut.wide.cmd.payload)
                self.wide_cmds.append((bool(p["we"]), p["addr"]))
                start = max(cycle + rng.randint(*self.fetch), dram[-1][2] + 1 if dram else 0)
                dram.append((bool(p["we"]), p["addr"], start))
            self.merged += ctx.get(dut.merged)
            await ctx.tick()
        self.cycles = cycle - 300


def simulate(cmds, seed=1, **kw):
    dut = MemWiden(AW)
    bench = Bench(dut, cmds, random.Random(seed), **kw)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench.run)
    sim.run()
    return bench


def assert_memory_agrees(b):
    """Nothing written was lost or misplaced: every word written holds, in the wide memory,
    the last value the narrow commands wrote to it."""
    for addr, word in b.narrow.words.items():
        assert (b.wide.read(addr // 2) >> (64 * (addr % 2))) & ((1 << 64) - 1) == word, addr


def stream_cmds(rng, n_runs=40):
    """Runs as the channel makes them: sequential writes of a frame's words, sequential reads,
    with lone words, odd starts, and a write then a read of the same word."""
    cmds, wr_at, rd_at = [], 0, 0
    for _ in range(n_runs):
        kind = rng.choice(["wr", "rd", "wr", "lone", "raw"])
        n = rng.randint(1, 9)
        if kind == "wr":
            cmds += [(1, (wr_at + i) % (1 << AW), rng.getrandbits(64)) for i in range(n)]
            wr_at += n
        elif kind == "rd":
            n = min(n, max(0, wr_at - rd_at))
            cmds += [(0, (rd_at + i) % (1 << AW), 0) for i in range(n)]
            rd_at += n
        elif kind == "lone":
            cmds.append((rng.randint(0, 1), rng.randrange(1 << AW), rng.getrandbits(64)))
        else:
            a = rng.randrange(1 << AW)
            cmds += [(1, a, rng.getrandbits(64)), (0, a, 0)]
    return cmds


def test_back_to_back_stream_merges_as_the_model_says():
    """Commands back to back, memory always ready: the wide writes are exactly the model's in
    order, with its byte masks, and so are the wide reads (reads may pass batched writes, so
    only the interleaving of the two differs); every read returns the last word written
    before it."""
    rng = random.Random(7)
    cmds = stream_cmds(rng)
    b = simulate(cmds, seed=2)
    model = merge([(bool(we), a) for we, a, _ in cmds])
    # Reads: the model's, in order, less those the write batch answered. Writes: at most the
    # model's, as the batch also joins writes to one wide word that were not back to back.
    reads = iter([(c.we, c.addr) for c in model if not c.we])
    assert all(c in reads for c in b.wide_cmds if not c[0])     # an ordered subsequence
    assert len(b.masks) <= sum(c.we for c in model)
    assert_memory_agrees(b)

    def turns(kinds):
        return sum(a != b for a, b in zip(kinds, kinds[1:]))
    # Batched writes: the data bus turns between writing and reading less often.
    assert turns([we for we, _ in b.wide_cmds]) < turns([c.we for c in model])
    assert b.merged > len(cmds) // 4               # the stream is mostly pairs
    assert b.answers == b.expected and len(b.expected) > 20


def test_random_stalls_keep_data_and_order():
    """Gaps between commands, a stalling controller, late data, long and varying read latency,
    a reader that stalls: every read still returns the last word written before it, in order,
    and every word written ends up in memory with the last value written to it."""
    for seed in range(6):
        rng = random.Random(100 + seed)
        cmds = stream_cmds(rng, 60)
        b = simulate(cmds, seed=seed, gap=0.3, cmd_stall=0.4, rd_stall=0.3, latency=(3, 25),
                     fetch=(1, 8), data_lag=(0, 4))
        assert b.answers == b.expected, f"seed {seed}"
        assert_memory_agrees(b)


def test_writes_trickling_into_reads_leave_in_batches():
    """The channel's pattern: a frame's words written one by one as they come off the wire
    while older words are read back in runs. The writes leave in batches of 8 wide words,
    so the bus turns about once per 16 written words instead of at every write."""
    cmds = []
    for i in range(128):
        cmds.append((1, 512 + i, 0x5A00 + i))
        cmds += [(0, 4 * i + k, 0) for k in range(4)]
    cmds = [(1, a, 0x77 + a) for a in range(512)] + cmds
    b = simulate(cmds, seed=5, gap=0.2)
    assert b.answers == b.expected
    tail = [we for we, _ in b.wide_cmds][256:]             # after the first 512 writes
    assert sum(a != b for a, b in zip(tail, tail[1:])) <= 2 * 128 // 16 + 4


def test_reads_chasing_writes_are_answered_from_the_batch():
    """A reader right behind the writer (each word read as soon as it is written, as when the
    channel's delay line has just started) costs the DRAM no reads: the batch answers them,
    and the writes still leave in batches."""
    cmds = []
    for a in range(200):
        cmds += [(1, a, 0x1234_0000 + a), (0, a, 0)]
    b = simulate(cmds, seed=9, gap=0.5)
    assert b.answers == [0x1234_0000 + a for a in range(200)]
    assert sum(not we for we, _ in b.wide_cmds) < 10
    assert len(b.masks) <= 100 + 10
    assert_memory_agrees(b)


def test_reads_keep_many_in_flight():
    """A long sequential read at a 20-cycle latency: the widener keeps issuing (pairs, one per
    cycle or two) rather than waiting for each answer, so 64 words take far fewer than
    32 x 20 cycles."""
    cmds = [(1, a, a * 0x0101) for a in range(64)] + [(0, a, 0) for a in range(64)]
    b = simulate(cmds, seed=3, latency=(20, 20))
    assert b.answers == [a * 0x0101 for a in range(64)]
    assert b.merged == 64
    # Back to back, a pair leaves every other cycle at worst: about 64 + 64 cycles of
    # commands plus one latency, against over 32 x 20 if each read waited for its answer.
    assert b.cycles < 200, b.cycles
    print("cycles", b.cycles)
