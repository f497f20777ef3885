# SPDX-License-Identifier: BSD-2-Clause
"""Egress (satemu_gw.egress) against its model cycle by cycle: the cycle each frame starts
(the first with ``now`` at its egress cycle and the port idle), every beat it sends, the words
it frees and what it counts (tx_frames, tx_bytes, late), with the 48-bit egress cycles and the
32- and 64-bit counts crossing their wraps."""

import random
from collections import deque

import pytest

from satemu.model.delayline import WRAP48, EgressModel, header_word
from satemu.base.params import ChannelParams, frame_beats
from satemu_gw.egress import EGRESS_COUNTERS, Egress
from membench import Held, Mismatch, expect, expect_ports, raw, simulate

PARAMS = ChannelParams(word_init=(1 << 32) - 40, counter_init=(1 << 64) - 3)
NOW0 = (5 << 48) - 700      # the timebase's low 48 bits wrap 700 cycles in


def lengths(rng):
    return rng.choice([1, 7, 8, 9, 60, 64, 65, rng.randint(1, 300), rng.randint(1, 300),
                       rng.randint(1, 2048)])


def run_egress(seed: int, cycles: int, p_fill: float, p_sink: float, p_clear: float = 0.0,
               perturb=None) -> dict:
    """Frames come as the reader brings them, a beat a cycle at pace ``p_fill``, each
    descriptor with its last beat; each frame's egress cycle lies from 30 cycles before to
    150 after the cycle its first beat came. The sink takes a beat at pace ``p_sink``.
    Returns each frame's start: ``(cycle, egress cycle unwrapped, cycle its descriptor
    showed, length)``."""
    dut = Egress(PARAMS)
    rng = random.Random(seed)
    model = EgressModel(PARAMS.word_init, PARAMS.counter_init)
    seen = {"starts": [], "late": 0, "clears": 0, "beats": 0}

    async def bench(ctx):
        data = deque()          # (cycle it shows, beat)
        descs = deque()         # (cycle it shows, length, egress unwrapped)
        filling = None          # [length, egress, beats still to bring]
        held = Held("source")
        for t in range(cycles):
            now = NOW0 + t
            # The reader's side: a beat this cycle, shown from the next.
            if filling is None:
                length = lengths(rng)
                filling = [length, now + rng.randint(-30, 150), frame_beats(length)]
            if rng.random() < p_fill:
                data.append((t + 1, rng.getrandbits(64)))
                filling[2] -= 1
                if filling[2] == 0:
                    descs.append((t + 1, filling[0], filling[1]))
                    filling = None
            desc = descs[0] if descs and descs[0][0] <= t else None
            beat = data[0][1] if data and data[0][0] <= t else None
            sink = rng.random() < p_sink
            clear = rng.random() < p_clear
            ctx.set(dut.now, now)
            ctx.set(dut.desc.valid, desc is not None)
            ctx.set(dut.desc.payload.as_value(),
                    header_word(desc[1], desc[2] % WRAP48) if desc else 0)
            ctx.set(dut.data.valid, beat is not None)
            ctx.set(dut.data.payload, beat or 0)
            ctx.set(dut.source.ready, sink)
            ctx.set(dut.clear, clear)

            want = {name: model.counts[name] for name in EGRESS_COUNTERS}
            want["freed"] = model.freed
            out = model.step(now, (desc[1], desc[2] % WRAP48) if desc else None, beat, sink,
                             clear)
            want["started"] = out["started"]
            if out["started"]:
                want["start_length"] = out["start_length"]
                want["start_late"] = out["start_late"]
            want["source.valid"] = out["source_valid"]
            if out["source_valid"]:
                for field in ("data", "last", "nbytes", "err"):
                    want[f"source.payload.{field}"] = out[field]
            if beat is not None:
                want["data.ready"] = out["data_ready"]
            if desc is not None:
                want["desc.ready"] = out["desc_ready"]
            expect_ports(ctx, dut, t, want, perturb)
            held.see(t, ctx.get(dut.source.valid), raw(ctx, dut.source.payload), sink)

            if out["started"]:
                seen["starts"].append((t, desc[2], desc[0], desc[1]))
                seen["late"] += out["start_late"]
            seen["clears"] += clear
            if beat is not None and ctx.get(dut.data.ready):
                data.popleft()
                seen["beats"] += 1
            if desc is not None and ctx.get(dut.desc.ready):
                descs.popleft()
            await ctx.tick()

    simulate(dut, bench)
    return seen


@pytest.mark.parametrize("seed, p_fill, p_sink", [
    (1, 1.0, 1.0),      # frames as fast as the port: back to back, no stalls
    (2, 1.0, 0.6),      # a stalling sink: frames start late
    (3, 0.6, 1.0),      # a slow memory: frames wait for their last beat
])
def test_egress_matches_model(seed, p_fill, p_sink):
    seen = run_egress(seed, 3000, p_fill, p_sink, p_clear=0.003)
    starts = seen["starts"]
    assert len(starts) > 40 and seen["clears"] >= 2 and seen["beats"] > 1000
    assert any(NOW0 + t >= 1 << 48 for t, *_ in starts[:len(starts) // 2])   # across the wrap
    assert 3 < seen["late"] < len(starts)
    if p_sink == 1.0:
        # Timing semantics, item 10: E_i = max(R_i, E_{i-1} + beats_{i-1}), where R_i is the
        # later of the frame's egress cycle and the cycle its descriptor reached egress.
        prev = None
        for t, egress, shown, length in starts:
            want = max(egress - NOW0, shown)
            if prev is not None:
                want = max(want, prev[0] + frame_beats(prev[3]))
            assert t == want, (t, egress - NOW0, shown, length)
            prev = (t, egress, shown, length)


def test_a_disagreement_names_signal_and_cycle():
    """A frame the model starts a cycle later than the gateware fails at its start, by name."""
    moved = []

    def perturb(t, want):
        if want["started"] and t > 100 and not moved:
            moved.append(t)
            want["started"] = 0
    with pytest.raises(Mismatch, match=r"^cycle (\d+): started is 0x1, the model says 0x0$") \
            as info:
        run_egress(1, 1000, 1.0, 1.0, perturb=perturb)
    assert info.match(rf"^cycle {moved[0]}:")
