# SPDX-License-Identifier: BSD-2-Clause
"""The delta-coded departure queue (satemu_gw.depdelta) against its model, cycle by cycle: every
word stored, every entry given back, and when the head and ``waiting`` show."""

import random
from collections import deque

import pytest

from satemu.base.queues import DELTA_BITS, FRAME_SPAN
from satemu.model.depdelta import DeltaQueueModel
from satemu.base.params import ChannelParams
from satemu_gw.depdelta import DeltaQueue
from simbench import run

PARAMS = ChannelParams(queue_depth=300, delta_queue=300)
LATENCY = 3          # cycles from a push into an empty queue to its head


def run_queue(seed: int, cycles: int, p_push: float, p_pop: float, gap) -> dict:
    """Random pushes and pops; ``gap(rng, empty)`` draws a departure's distance from the last
    one pushed. Returns what the run did, for the tests to check."""
    assert PARAMS.delta_coded
    dut = DeltaQueue(PARAMS)
    rng = random.Random(seed)
    model = DeltaQueueModel()
    seen = {"pushed": 0, "popped": 0, "max_queue": 0, "empty_pushes": 0, "big_gaps": 0,
            "max_len": 0, "wraps": 0}

    async def bench(ctx):
        queued = 0                  # entries pushed and not popped
        pushed_at = deque()         # the cycle each queued entry was pushed
        last = (1 << 48) - 40_000   # departures cross the 48-bit wrap early on
        for t in range(cycles):
            empty = queued == 0
            push = rng.random() < p_push and queued < PARAMS.queue_depth
            pop = rng.random() < p_pop
            if push:
                g = gap(rng, empty)
                seen["big_gaps"] += g >= 1 << DELTA_BITS
                seen["wraps"] += last + g >= 1 << 48
                last = (last + g) % (1 << 48)
                length = rng.choice([60, 64, 1500, 2047, 2048, rng.randint(1, 2048)])
            ctx.set(dut.push.valid, push)
            ctx.set(dut.push.payload.departure, last if push else 0)
            ctx.set(dut.push.payload.length, length if push else 0)
            ctx.set(dut.head.ready, pop)
            # The head shows once the entry before it is gone and LATENCY cycles have passed.
            head = bool(pushed_at) and pushed_at[0] + LATENCY <= t
            assert ctx.get(dut.head.valid) == head, f"cycle {t}: head.valid"
            assert ctx.get(dut.waiting) == (queued > 0 and not head), f"cycle {t}: waiting"
            assert ctx.get(dut.push.ready)
            if push:
                word = model.push(last, length, empty)
                assert ctx.get(dut.w_data) == word, f"cycle {t}: the word stored"
                seen["empty_pushes"] += empty
                seen["max_len"] = max(seen["max_len"], length)
                queued += 1
                pushed_at.append(t)
            if pop and head:
                got = (ctx.get(dut.head.payload.departure), ctx.get(dut.head.payload.length))
                assert got == model.pop(), f"cycle {t}: popped {got}"
                queued -= 1
                popped_at = pushed_at.popleft()
                if pushed_at:       # the next entry follows a cycle after this pop at the soonest
                    pushed_at[0] = max(pushed_at[0], popped_at + 1 - LATENCY, t + 1 - LATENCY)
                seen["popped"] += 1
            seen["max_queue"] = max(seen["max_queue"], queued)
            await ctx.tick()

    run(dut, bench)
    return seen


def shaped(rng, empty):
    """A shaped queue's gaps: up to a slow frame's serialisation while queued, any after idle."""
    if empty:
        return rng.choice([0, 1, rng.randint(0, 1 << 40), (1 << DELTA_BITS) + 7])
    return rng.choice([0, 1, rng.randint(0, 200), rng.randint(0, FRAME_SPAN), FRAME_SPAN,
                       (1 << DELTA_BITS) - 1])


@pytest.mark.parametrize("seed, p_push, p_pop", [
    (1, 0.5, 0.3),      # the queue fills to its depth and stays there
    (2, 0.3, 0.6),      # mostly short: many pushes into an empty queue
    (3, 0.5, 0.5),      # around the middle, pops and pushes together
])
def test_delta_queue_matches_model(seed, p_push, p_pop):
    seen = run_queue(seed, 3000, p_push, p_pop, shaped)
    assert seen["popped"] > 500 and seen["max_len"] == 2048 and seen["wraps"] > 0
    if seed == 1:
        assert seen["max_queue"] == PARAMS.queue_depth
    else:
        assert seen["empty_pushes"] > 3 and seen["big_gaps"] > 0


def test_the_model_refuses_a_gap_an_entry_cannot_hold():
    model = DeltaQueueModel()
    model.push(1000, 60, True)
    model.push(1000 + (1 << DELTA_BITS) - 1, 60, False)
    with pytest.raises(AssertionError, match="cycles after the one before"):
        model.push(1000 + 2 * (1 << DELTA_BITS), 60, False)
    with pytest.raises(AssertionError, match="does not fit"):
        model.push(1 << 30, 2049, True)


def test_a_delta_coded_channel_s_depth_is_its_delta_queue():
    """The queue is ``queue_depth`` deep while ``delta_coded`` keys on ``delta_queue``: the
    parameters refuse the two apart, and a channel with the ring is not delta-coded at all."""
    with pytest.raises(ValueError, match="queue_depth must be its delta_queue"):
        ChannelParams(queue_depth=1024, delta_queue=300)
    ringed = ChannelParams(queue_depth=4096, queue_fifo=1024, delta_queue=300)
    assert ringed.spill_words and not ringed.delta_coded
