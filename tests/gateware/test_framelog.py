# SPDX-License-Identifier: BSD-2-Clause
"""satemu_gw.framelog.FrameLog alone, in Amaranth's simulator, against satemu.model.framelog:
every event becomes the record the model packs, at the slot and lap the ring gives it; a ring
that wraps keeps the newest records; a writer that stalls loses records, each one counted; a
CLEAR starts the ring afresh and skips the records the writer still had."""

import random

from amaranth.sim import Simulator

from satemu.base.records import DECIDED, SENT, Record, pack, unpack
from satemu.model.framelog import join, read_ring
from satemu.base.params import ChannelParams, Fate
from satemu_gw.framelog import FrameLog

BASE = 0x1000


def simulate(events, bits, ready=lambda cycle: True, clear_at=(), log_fifo=16, tail=200):
    """Drives ``events`` ({cycle: [("d", arrival, length, fate) | ("s", start, length, late)]})
    into a FrameLog with a ring of 2^bits records at BASE; the writer takes a record when
    ``ready(cycle)`` and reports it done 3 cycles later. Returns the memory (word -> value),
    count and lost at the end, and the records each event should make (in event order)."""
    dut = FrameLog(ChannelParams(frame_log=True, log_fifo=log_fifo))
    memory = {}
    out = {}
    last = max(events) + tail

    async def bench(ctx):
        ctx.set(dut.base, BASE)
        ctx.set(dut.bits, bits)
        pending = []                                   # (done cycle) of records taken
        for cycle in range(last):
            ctx.set(dut.clear, cycle in clear_at)
            ctx.set(dut.decided.valid, 0)
            ctx.set(dut.sent.valid, 0)
            for ev in events.get(cycle, ()):
                if ev[0] == "d":
                    ctx.set(dut.decided.valid, 1)
                    ctx.set(dut.decided.payload, {"arrival": ev[1], "length": ev[2],
                                                  "fate": ev[3]})
                else:
                    ctx.set(dut.sent.valid, 1)
                    ctx.set(dut.sent.payload, {"start": ev[1], "length": ev[2], "late": ev[3]})
            take = ready(cycle)
            ctx.set(dut.write.ready, take)
            ctx.set(dut.done, bool(pending) and pending[0] == cycle)
            if pending and pending[0] == cycle:
                pending.pop(0)
            if take and ctx.get(dut.write.valid):
                addr = ctx.get(dut.write.payload.addr)
                data = ctx.get(dut.write.payload.data)
                memory[addr], memory[addr + 1] = data & (2**64 - 1), data >> 64
                pending.append(cycle + 3)
            await ctx.tick()
        out["count"], out["lost"] = ctx.get(dut.count), ctx.get(dut.lost)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return memory, out["count"], out["lost"]


def traffic(n, seed, spacing=(6, 30)):
    """n frames decided at random spacing, the delivered ones sent some cycles later, in order;
    and the record each event must make, with the event's cycle."""
    rng = random.Random(seed)
    events, want = {}, []
    t, sent_at, tx = 10, 10, 0
    for i in range(n):
        t += rng.randint(*spacing)
        fate = rng.choice([Fate.DELIVERED] * 4 + [Fate.LOSS, Fate.QUEUE, Fate.RUNT])
        length = rng.randint(1, 1600)
        arrival = ((1 << 48) - 3000 + 97 * i) % (1 << 48)      # crosses the 48-bit wrap
        events.setdefault(t, []).append(("d", arrival, length, int(fate)))
        want.append((t, Record(DECIDED, arrival, length, i, tx, int(fate))))
        if fate is Fate.DELIVERED:
            sent_at = max(sent_at + rng.randint(*spacing), t + 2)
            late = rng.random() < 0.2
            events.setdefault(sent_at, []).append(("s", 5000 + i, length, late))
            want.append((sent_at, Record(SENT, 5000 + i, length, 0, tx, 0, late)))
            tx += 1
    return events, want


def strip_lap(r):
    return Record(r.kind, r.cycle, r.length, r.index, r.tx, r.fate, r.late, 0)


def test_records_are_the_models_and_the_ring_keeps_the_newest():
    events, want = traffic(120, 1)
    records_in_order = [r for _, r in sorted(want, key=lambda cr: (cr[0], cr[1].kind))]
    for bits in (10, 4):                               # 1024 records, then 16 (wrapping)
        memory, count, lost = simulate(events, bits)
        assert (count, lost) == (len(want), 0)
        records, info = read_ring(memory, BASE, bits, count)
        assert info["stale"] == 0 and info["wrapped"] == (len(want) > 1 << bits)
        # The ring holds the newest records, in the order their events came (a decided record
        # before a sent one of the same cycle).
        assert list(map(strip_lap, records)) == records_in_order[-(1 << bits):]
        if bits == 10:
            entries, joined = join(records)
            assert joined == {"unsent": 0, "orphans": 0} and len(entries) == 120
        for a in range(BASE, BASE + 2 * min(count, 1 << bits), 2):
            assert pack(unpack(memory[a], memory[a + 1])) == (memory[a], memory[a + 1])


def test_a_stalled_writer_loses_records_and_counts_each():
    """The writer takes nothing for 600 cycles: the FIFO and the holding registers fill, every
    later record is lost and counted, and those that made it are the models'."""
    events, want = traffic(80, 2, spacing=(3, 12))
    memory, count, lost = simulate(events, 10, ready=lambda c: not 50 <= c < 650)
    assert lost > 0 and count + lost == len(want)
    records, info = read_ring(memory, BASE, 10, count)
    assert info["stale"] == 0 and len(records) == count
    assert set(map(strip_lap, records)) <= {r for _, r in want}


def test_clear_starts_afresh_and_pairs_still_join():
    """A CLEAR mid-stream: count and lost start at 0, the ring at slot 0 and lap 0, the records
    of the events before it are gone; a frame decided before it and sent after it still carries
    the sent-index its decided record had."""
    events, want = traffic(60, 3)
    clear = sorted(events)[len(events) // 2]
    memory, count, lost = simulate(events, 10, clear_at={clear})
    after = [r for c, r in want if c > clear]
    assert lost == 0 and count == len(after)
    records, info = read_ring(memory, BASE, 10, count)
    assert info["stale"] == 0 and list(map(strip_lap, records)) == \
        [r for c, r in sorted(want, key=lambda cr: (cr[0], cr[1].kind)) if c > clear]
    assert any(r.kind == SENT for r in after[:3])       # sent records of frames decided before
