# SPDX-License-Identifier: BSD-2-Clause
"""hw.cdc.PacedAsyncFIFO in Migen's simulator, each side in its own clock at random moments:
every word comes out once, in order, never while the FIFO is empty; the paced side never moves
words in two cycles running; and it keeps a wire side's pace (a beat every 8 cycles) from a
slower system clock."""

import random

import pytest
from migen import ClockDomain, Module, run_simulation

from hw.cdc import PacedAsyncFIFO

WIDTH = 16


class Bench(Module):
    def __init__(self, paced, depth):
        self.clock_domains.cd_write = ClockDomain()
        self.clock_domains.cd_read = ClockDomain()
        self.submodules.fifo = PacedAsyncFIFO(WIDTH, depth, paced)


@pytest.mark.parametrize("paced", ["read", "write"])
@pytest.mark.parametrize("clocks", [(18, 8), (8, 18), (10, 10)])
@pytest.mark.parametrize("depth", [4, 16])
def test_words_come_out_once_in_order(paced, clocks, depth):
    rng = random.Random(f"{paced}{clocks}{depth}")
    words = [rng.randrange(1 << WIDTH) for _ in range(400)]
    bench = Bench(paced, depth)
    fifo = bench.fifo
    got, moves = [], {"write": [], "read": []}

    # Migen's simulator: a value a generator writes is seen from the next cycle on, and a
    # word moves at the edge that ends a cycle in which enable and flag are both high.
    def writer():
        i, we = 0, False
        while i < len(words):
            moved = bool(we and (yield fifo.writable))
            moves["write"].append(moved)
            i += moved
            we = i < len(words) and rng.random() < 0.7
            yield fifo.din.eq(words[i] if i < len(words) else 0)
            yield fifo.we.eq(we)
            yield

    def reader():
        re = False
        for _ in range(20 * len(words)):
            moved = bool(re and (yield fifo.readable))
            moves["read"].append(moved)
            if moved:
                got.append((yield fifo.dout))
            if len(got) == len(words):
                break
            re = rng.random() < 0.7
            yield fifo.re.eq(re)
            yield

    run_simulation(bench, {"write": writer(), "read": reader()},
                   clocks={"write": clocks[0], "read": clocks[1]})
    assert got == words
    m = moves[paced]
    assert not any(a and b for a, b in zip(m, m[1:])), "the paced side moved twice running"


@pytest.mark.parametrize("paced", ["read", "write"])
def test_a_wire_side_keeps_its_pace(paced):
    """A beat every 8 wire cycles (a byte a cycle at 125 MHz) through 16 entries, the system
    side at 55 MHz: the wire side never waits once it has started."""
    bench = Bench(paced, 16)
    fifo = bench.fifo
    n = 200
    stalls = []
    sys_domain, wire_domain = ("write", "read") if paced == "read" else ("read", "write")

    def system():
        if sys_domain == "write":
            i = 0
            yield fifo.din.eq(0)
            yield fifo.we.eq(1)
            yield
            while i < n:
                i += bool((yield fifo.writable))
                yield fifo.din.eq(i)
                yield fifo.we.eq(i < n)
                yield
        else:
            yield fifo.re.eq(1)
            for _ in range(40 * n):
                yield

    def wire():
        # Once a cycle in eight the wire side needs a word: it must be there (reading) or have
        # room (writing) at once.
        if wire_domain == "read":
            for _ in range(64):                  # let the system side fill it first
                yield
            for i in range(n):
                yield fifo.re.eq(1)
                yield
                stalls.append(not (yield fifo.readable))
                assert stalls[-1] or (yield fifo.dout) == i
                yield fifo.re.eq(0)
                for _ in range(7):
                    yield
        else:
            for i in range(n):
                yield fifo.din.eq(i)
                yield fifo.we.eq(1)
                yield
                stalls.append(not (yield fifo.writable))
                yield fifo.we.eq(0)
                for _ in range(7):
                    yield

    clocks = {sys_domain: 18, wire_domain: 8}
    run_simulation(bench, {sys_domain: system(), wire_domain: wire()}, clocks=clocks)
    assert len(stalls) == n and not any(stalls)
