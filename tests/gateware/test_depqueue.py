# SPDX-License-Identifier: BSD-2-Clause
"""The departure queue (satemu_gw.depqueue) against its model, cycle by cycle, on a memory that
takes writes, acknowledges them and answers reads at random paces."""

import random
from collections import deque

import pytest

from satemu.model.depqueue import DepartureQueueModel
from satemu.base.params import ChannelParams
from satemu_gw.depqueue import DepartureQueue
from simbench import run

PARAMS = ChannelParams(queue_depth=400, queue_fifo=16)
BASE = (5 << 20) - 12      # the ring's first word: slot k is word BASE + k mod 2^16


def run_queue(seed: int, cycles: int, p_push: float, p_pop: float, p_mem: float,
              ring_bits: int | None = None) -> dict:
    """Random pushes and pops against the model, with a ring of ``2**ring_bits`` slots (by
    default the channel's). Returns what the run did, for the tests to check."""
    dut = DepartureQueue(PARAMS, ring_bits)
    rng = random.Random(seed)
    model = DepartureQueueModel(PARAMS, BASE, 1 << ring_bits if ring_bits else 0)
    # The queue never holds more than the ring (the channel's is 2^16 > queue_depth).
    depth = model.slots if ring_bits else PARAMS.queue_depth
    seen = {"chip": 0, "ring": 0, "bursts": [], "popped": 0, "max_queue": 0, "addrs": []}

    async def bench(ctx):
        pushed = deque()         # every entry pushed and not yet popped, in order
        acks = deque()           # ring writes memory took, acknowledged later
        answers = deque()        # (cycle due, data) of reads issued
        memory = {}
        ctx.set(dut.base, BASE)
        for t in range(cycles):
            prev_burst = model.burst_left
            burst = model.decide(ctx.get(dut.chip.level))
            # Drive this cycle's inputs.
            entry = rng.getrandbits(64)
            push = rng.random() < p_push and len(pushed) < depth
            pop = rng.random() < p_pop
            ctx.set(dut.push.valid, push)
            ctx.set(dut.push.payload.as_value(), entry)
            ctx.set(dut.head.ready, pop)
            ctx.set(dut.wr.ready, rng.random() < p_mem)
            ctx.set(dut.rd.ready, rng.random() < p_mem)
            ack = bool(acks) and rng.random() < p_mem
            ctx.set(dut.wr_done, ack)
            answer = bool(answers) and answers[0][0] <= t
            ctx.set(dut.rdata.valid, answer)
            ctx.set(dut.rdata.payload, answers[0][1] if answer else 0)
            # This cycle's handshakes, as the gateware sees them.
            room = bool(ctx.get(dut.chip.w_rdy))
            assert ctx.get(dut.push.ready) == model.ready(room), f"cycle {t}: push.ready"
            assert ctx.get(dut.waiting) == (not ctx.get(dut.head.valid) and model.spilled > 0)
            assert ctx.get(dut.rd.valid) == (prev_burst > 0), f"cycle {t}: rd.valid"
            assert ctx.get(dut.wr.valid) == model.offers(
                ctx.get(dut.stage.level), bool(ctx.get(dut.stage.r_rdy)),
                bool(ctx.get(dut.waiting))), \
                f"cycle {t}: wr.valid"
            if push and ctx.get(dut.push.ready):
                pushed.append(entry)
                seen[model.push(entry, room)] += 1
            if pop and ctx.get(dut.head.valid):
                got = ctx.get(dut.head.payload.as_value())
                want = pushed.popleft()
                assert model.pop() == want, f"cycle {t}: the model's order"
                assert int(got) == want, f"cycle {t}: popped {int(got):#x}, want {want:#x}"
                seen["popped"] += 1
            if ctx.get(dut.wr.valid) and ctx.get(dut.wr.ready):
                addr, data = model.write()
                assert ctx.get(dut.wr.payload.addr) == addr % (1 << PARAMS.addr_width)
                assert ctx.get(dut.wr.payload.data) == data
                memory[addr] = data
                acks.append(addr)
                seen["addrs"].append(addr)
            if ack:
                acks.popleft()
                model.written()
            if ctx.get(dut.rd.valid) and ctx.get(dut.rd.ready):
                addr, _ = model.read()
                assert ctx.get(dut.rd.payload.addr) == addr % (1 << PARAMS.addr_width)
                answers.append((t + rng.randint(1, 30), memory[addr]))
            if answer:
                model.returned(answers.popleft()[1])
            if burst:
                seen["bursts"].append(burst)
            seen["max_queue"] = max(seen["max_queue"], len(pushed))
            await ctx.tick()

    run(dut, bench)
    return seen


@pytest.mark.parametrize("seed, p_push, p_pop, p_mem, partial", [
    (1, 0.5, 0.35, 0.7, False),     # the queue grows to its cap and stays there
    (2, 0.55, 0.5, 0.3, True),      # a slow memory: pops wait for the ring, short bursts
    (3, 0.45, 0.45, 1.0, False),    # around the chip's depth, in and out of the ring
])
def test_departure_queue_matches_model(seed, p_push, p_pop, p_mem, partial):
    seen = run_queue(seed, 3000, p_push, p_pop, p_mem)
    assert seen["ring"] > 500 and seen["chip"] > 16, seen     # both paths taken
    assert seen["popped"] > 500 and seen["max_queue"] > 350
    assert max(seen["bursts"]) == 8 and (min(seen["bursts"]) < 8) == partial


def test_ring_wraps():
    """A ring of 64 slots and a queue as deep: the writes and reads go round it."""
    seen = run_queue(4, 2000, 0.5, 0.4, 0.8, ring_bits=6)
    assert seen["ring"] > 4 * 64 and seen["max_queue"] == 64
    assert seen["addrs"][:70] == [BASE + k % 64 for k in range(70)]
