# SPDX-License-Identifier: BSD-2-Clause
"""The skid buffer (satemu_gw.skid) against its model cycle by cycle: a payload leaves one
cycle after it came, a transfer a cycle, order and content kept, and neither side's outputs
depend on the other side's inputs in the same cycle."""

import random

import pytest

from satemu.model.delayline import SkidModel
from satemu_gw.layouts import mem_cmd_layout
from satemu_gw.skid import SkidBuffer
from membench import Held, Mismatch, Source, expect, raw, simulate

AW = 28
WIDTH = AW + 1          # a memory command, as the channel puts through it


def run_skid(seed: int, cycles: int, p_in: float, p_out: float, perturb=None) -> dict:
    """Random offers and stalls; ``perturb(t, want)`` may alter the model's expectation (to show
    a disagreement is reported). Returns what the run did."""
    dut = SkidBuffer(mem_cmd_layout(AW))
    rng = random.Random(seed)
    model = SkidModel()
    seen = {"in": [], "out": [], "both": 0, "full": 0, "latency": set()}

    async def bench(ctx):
        src = Source(ctx, dut.sink, rng, p_in, (rng.getrandbits(WIDTH) for _ in range(cycles)))
        held = Held("source")
        taken_at = {}
        for t in range(cycles):
            src.drive()
            ready = rng.random() < p_out
            # Registered outputs: flipping the other side's inputs changes nothing this cycle.
            ctx.set(dut.source.ready, not ready)
            expect(t, "sink.ready (follows source.ready)", ctx.get(dut.sink.ready),
                   int(model.ready))
            ctx.set(dut.source.ready, ready)
            want = {"sink.ready": int(model.ready), "source.valid": int(model.valid)}
            if model.valid:
                want["source.payload"] = model.payload
            if perturb:
                perturb(t, want)
            expect(t, "sink.ready", ctx.get(dut.sink.ready), want["sink.ready"])
            expect(t, "source.valid", ctx.get(dut.source.valid), want["source.valid"])
            payload = raw(ctx, dut.source.payload)
            if "source.payload" in want:
                expect(t, "source.payload", payload, want["source.payload"])
            valid = bool(ctx.get(dut.source.valid))
            if src.offer is not None:
                # The sink's payload does not reach the source combinationally either.
                ctx.set(dut.sink.valid, 0)
                expect(t, "source.valid (follows sink.valid)", ctx.get(dut.source.valid),
                       int(valid))
                ctx.set(dut.sink.valid, 1)
            held.see(t, valid, payload, ready)
            given = valid and ready
            taken = src.took()
            if given:
                seen["out"].append(payload)
                seen["latency"].add(t - taken_at.pop(payload))
            if taken is not None:
                seen["in"].append(taken)
                taken_at[taken] = t
            seen["both"] += given and taken is not None
            seen["full"] += not model.ready
            model.step(taken, given)
            await ctx.tick()

    simulate(dut, bench)
    return seen


@pytest.mark.parametrize("seed, p_in, p_out", [
    (1, 1.0, 1.0),      # back to back: a transfer every cycle
    (2, 0.7, 0.5),      # both sides random: the skid register fills and drains
    (3, 0.9, 0.2),      # a slow source: full most of the time
    (4, 0.3, 0.9),      # a slow sink: mostly empty
])
def test_skid_matches_model(seed, p_in, p_out):
    seen = run_skid(seed, 3000, p_in, p_out)
    n = len(seen["out"])
    assert seen["out"] == seen["in"][:n] and len(seen["in"]) - n <= 2     # order and content
    assert min(seen["latency"]) == 1                                       # one cycle later
    if p_in == p_out == 1.0:
        assert n == 2999 and seen["both"] == 2999 and seen["full"] == 0
    else:
        assert n > 500 and seen["both"] > 100 and seen["full"] > (50 if p_out <= 0.5 else 5)


def test_a_disagreement_names_signal_and_cycle():
    """The bench is not blind: an expectation altered in one cycle fails there, by name."""
    def perturb(t, want):
        if t == 137 and "source.payload" in want:
            want["source.payload"] ^= 1 << 5
    with pytest.raises(Mismatch, match=r"^cycle 137: source\.payload is 0x[0-9a-f]+, "
                                       r"the model says 0x[0-9a-f]+$"):
        run_skid(2, 300, 0.7, 0.5, perturb)
