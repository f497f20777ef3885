# SPDX-License-Identifier: BSD-2-Clause
"""The delay-line reader (satemu_gw.reader) against its model: it reads every committed word,
in ring order and only those, as far as the playout FIFOs have room, never stalls the read
data, and gives back every frame's beats and descriptor in order, each descriptor no sooner
than its frame's last beat; with random memory pace and latency, a writer committing words at
random and an egress side taking beats and descriptors at random."""

import random
from collections import deque

import pytest

from satemu.model.delayline import header_word
from satemu.base.params import ChannelParams, frame_beats
from satemu_gw.reader import Reader
from membench import Mismatch, expect, expect_ports, raw, simulate

PARAMS = ChannelParams(max_frame=256, ingress_beats=64, playout_beats=32,
                       word_init=(1 << 32) - 200)
DESC_DEPTH = 16         # the reader's descriptor FIFO: max(16, playout_beats / 4)
LAYOUTS = [(0x2000, 61), (0x7F_FF00, 29), (0x10, 97)]     # (mem_base, mem_size) in turn
M32 = (1 << 32) - 1


def frames(rng, n):
    """``n`` frames as stored: ``(length, egress, beats)``."""
    for _ in range(n):
        length = rng.choice([1, 8, 9, 60, 64, 65, rng.randint(1, 256), 256])
        yield length, rng.getrandbits(48), [rng.getrandbits(64) for _ in range(frame_beats(length))]


def run_reader(seed: int, n: int, p_write: float, p_cmd: float, latency: tuple[int, int],
               p_data: float, p_desc: float, p_layout: float = 0.0, perturb=None) -> dict:
    """``n`` random frames written back to back into the ring, committed a few words at a time
    (``p_write``) while the ring has room; the memory takes reads at ``p_cmd`` and answers in
    order after ``latency`` cycles; egress takes beats at ``p_data`` and descriptors at
    ``p_desc``. With ``p_layout``, whenever the line is empty the region may move (a layout
    reset). Returns what the run did."""
    dut = Reader(PARAMS)
    rng = random.Random(seed)
    stored = list(frames(rng, n))
    words = []              # (data, is a beat, is its frame's last beat)
    for length, egress, beats in stored:
        words.append((header_word(length, egress), False, False))
        words += [(b, True, k + 1 == len(beats)) for k, b in enumerate(beats)]
    all_beats = [b for *_, beats in stored for b in beats]
    upto = [0]              # beats of the frames before each frame, and of all of them
    for *_, beats in stored:
        upto.append(upto[-1] + len(beats))
    seen = {"cycles": 0, "layouts": 0, "max_beats_held": 0, "max_descs_held": 0}

    async def bench(ctx):
        layout = 0
        base, size = LAYOUTS[layout]
        start = 0               # the word at the region's first offset
        committed = issued = 0  # words the writer committed, reads issued
        beats_issued = last_issued = 0
        got_beats = got_descs = 0
        memory = {}
        answers = deque()       # (cycle due, word) of reads taken
        t = 0
        ctx.set(dut.cfg.mem_base, base)
        ctx.set(dut.cfg.mem_size, size)
        while got_descs < n or got_beats < len(all_beats):
            assert t < 100 * len(words), "the reader stalled"
            reset = False
            if (p_layout and committed == issued and not answers and got_beats == upto[got_descs]
                    and got_descs == sum(1 for _, b, last in words[:issued] if last)
                    and rng.random() < p_layout):
                # The line is empty: the region may move, and both sides start at its offset 0.
                layout = (layout + 1) % len(LAYOUTS)
                base, size = LAYOUTS[layout]
                start = committed
                reset = True
                seen["layouts"] += 1
            ctx.set(dut.cfg.mem_base, base)
            ctx.set(dut.cfg.mem_size, size)
            ctx.set(dut.layout_reset, reset)
            # The writer: a few more words, where they overwrite only words already read (and
            # none in a layout reset's cycle: the line is empty then).
            if not reset and rng.random() < p_write:
                more = min(rng.randint(1, 12), len(words) - committed, issued + size - committed)
                for k in range(committed, committed + max(more, 0)):
                    memory[base + (k - start) % size] = words[k][0]
                committed += max(more, 0)
            ctx.set(dut.written, (PARAMS.word_init + committed) & M32)
            cmd_ready = rng.random() < p_cmd
            ctx.set(dut.cmd.ready, cmd_ready)
            answer = answers[0][1] if answers and answers[0][0] <= t else None
            ctx.set(dut.rdata.valid, answer is not None)
            ctx.set(dut.rdata.payload, answer or 0)
            data_ready, desc_ready = rng.random() < p_data, rng.random() < p_desc
            ctx.set(dut.data.ready, data_ready)
            ctx.set(dut.desc.ready, desc_ready)

            want = {"rdata.ready": 1}
            if ctx.get(dut.cmd.valid):
                want["cmd.payload"] = base + (issued - start) % size
            if ctx.get(dut.data.valid):
                want["data.payload"] = all_beats[got_beats] if got_beats < len(all_beats) else None
            if ctx.get(dut.desc.valid) and got_descs < n:
                length, egress, _ = stored[got_descs]
                want["desc.payload"] = header_word(length, egress)
                # The frame's beats are all there: egress can send it without a pause.
                if got_beats < upto[got_descs + 1]:
                    want["data.valid"] = 1
            expect_ports(ctx, dut, t, want, perturb)
            if ctx.get(dut.cmd.valid):
                expect(t, "cmd.valid (a word not yet committed)", issued < committed, True)
            if ctx.get(dut.desc.valid):
                expect(t, "desc.valid (a frame the model does not have)", got_descs < n, True)

            if ctx.get(dut.cmd.valid) and cmd_ready:
                due = max(t + rng.randint(*latency), answers[-1][0] + 1 if answers else 0)
                answers.append((due, memory[base + (issued - start) % size]))
                beats_issued += words[issued][1]
                last_issued += words[issued][2]
                issued += 1
                # Room: every word read finds a place in the playout FIFOs.
                assert beats_issued - got_beats <= PARAMS.playout_beats, t
                assert last_issued - got_descs <= DESC_DEPTH, t
                seen["max_beats_held"] = max(seen["max_beats_held"], beats_issued - got_beats)
                seen["max_descs_held"] = max(seen["max_descs_held"], last_issued - got_descs)
            if answer is not None:
                answers.popleft()
            got_beats += bool(ctx.get(dut.data.valid) and data_ready)
            got_descs += bool(ctx.get(dut.desc.valid) and desc_ready)
            t += 1
            await ctx.tick()
        for _ in range(30):         # and nothing more comes
            expect(t, "data.valid", ctx.get(dut.data.valid), 0)
            expect(t, "desc.valid", ctx.get(dut.desc.valid), 0)
            expect(t, "cmd.valid", ctx.get(dut.cmd.valid), 0)
            t += 1
            await ctx.tick()
        seen["cycles"] = t - 30

    simulate(dut, bench)
    seen["words"] = len(words)
    return seen


@pytest.mark.parametrize("seed, p_write, p_cmd, latency, p_data, p_desc, p_layout", [
    (1, 1.0, 1.0, (1, 1), 1.0, 1.0, 0.0),        # everything at full pace
    (2, 0.5, 0.6, (1, 20), 0.7, 0.7, 0.0),       # random paces and read latency
    (3, 1.0, 1.0, (5, 30), 0.3, 0.5, 0.0),       # a slow egress: the FIFOs fill, reads wait
    (4, 0.6, 0.8, (1, 2), 1.0, 0.04, 0.0),       # descriptors taken slowly: their FIFO fills
    (5, 0.4, 0.7, (1, 10), 0.9, 0.9, 0.2),       # the region moves whenever the line is empty
])
def test_reader_matches_model(seed, p_write, p_cmd, latency, p_data, p_desc, p_layout):
    seen = run_reader(seed, 80, p_write, p_cmd, latency, p_data, p_desc, p_layout)
    assert seen["words"] > 600
    assert (seen["layouts"] >= 2) == (p_layout > 0)
    if seed == 1:
        # A word a cycle once committed, less a cycle or two per frame.
        assert seen["cycles"] < seen["words"] + 2 * 80, seen
    if seed == 3:
        assert seen["max_beats_held"] == PARAMS.playout_beats
    if seed == 4:
        # Reads in flight count against its room too.
        assert seen["max_descs_held"] >= DESC_DEPTH - 2


def test_a_disagreement_names_signal_and_cycle():
    """A beat the model expects altered once fails in that cycle, by name."""
    hit = []

    def perturb(t, want):
        if t >= 60 and "data.payload" in want and not hit:
            hit.append(t)
            want["data.payload"] ^= 1 << 63
    with pytest.raises(Mismatch, match=r"^cycle \d+: data\.payload is 0x[0-9a-f]+, the model "):
        run_reader(2, 10, 0.5, 0.6, (1, 20), 0.7, 0.7, perturb=perturb)
