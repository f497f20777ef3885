# SPDX-License-Identifier: BSD-2-Clause
"""The delay-line writer (satemu_gw.writer) against its model: every command's address and
every word's data in order (an admitted frame's header word, then its beats, round the ring; a
BoD frame's beats, and its header when released; nothing of a discarded frame), and the
``written`` count in every cycle, on a memory that takes commands and data at random paces."""

import random
from collections import deque

import pytest

from satemu.model.delayline import writer_writes
from satemu.base.params import ChannelParams, frame_beats, frame_words
from satemu_gw.writer import Writer
from membench import Held, Mismatch, Source, expect, raw, simulate

PARAMS = ChannelParams(max_frame=256, ingress_beats=64, playout_beats=32,
                       word_init=(1 << 32) - 300)
MEM_BASE, MEM_SIZE = 0x123450, 97       # a small ring, which the frames go round many times
M32 = (1 << 32) - 1


def decisions(rng, n: int, p_bod: float):
    """``n`` decisions as the admission engine makes them, each with the beats the ingress
    FIFO holds for it: admitted frames at consecutive offsets of the ring (BoD ones among
    them), and discarded ones, truncated or empty among those."""
    off = rng.randrange(MEM_SIZE)
    for _ in range(n):
        length = rng.choice([1, 8, 9, 60, 64, rng.randint(1, 256), 256])
        keep = rng.random() < 0.7
        stored = frame_beats(length)
        if not keep:
            length = rng.choice([length, rng.randint(257, 3000)])
            stored = rng.choice([min(frame_beats(length), PARAMS.max_beats), 0,
                                 rng.randint(0, PARAMS.max_beats)])
        d = {"keep": int(keep), "bod": int(keep and rng.random() < p_bod), "stored": stored,
             "egress": rng.getrandbits(48), "length": length,
             "offset": off if keep else rng.randrange(MEM_SIZE)}
        if keep:
            off = (off + frame_words(length)) % MEM_SIZE
        yield d, [rng.getrandbits(64) for _ in range(stored)]


def pack(d: dict) -> int:
    """A decision's payload as the ``Decision`` layout lays it out."""
    return (d["keep"] | d["bod"] << 1 | d["stored"] << 2 | d["egress"] << 11
            | d["length"] << 59 | d["offset"] << 75)


def run_writer(seed: int, frames: int, p_dec: float, p_beat: float, p_cmd: float,
               p_wdata: float, p_bod: float = 0.0, perturb=None) -> dict:
    """Random decisions and beats at paces ``p_dec``, ``p_beat``; the memory takes commands and
    data at ``p_cmd`` and ``p_wdata``; a BoD frame's header is released 0 to 80 cycles after
    the writer takes its decision. Runs until every word is written; returns what it saw."""
    dut = Writer(PARAMS)
    rng = random.Random(seed)
    work = list(decisions(rng, frames, p_bod))
    headers_due = deque()           # late headers, in release order
    expected = [writer_writes(d, b, MEM_BASE, MEM_SIZE, PARAMS.addr_width) for d, b in work]
    total_words = sum(len(words) + (late is not None) for words, late in expected)
    total = sum(sum(c for *_, c in words) + (late[2] if late else 0) for words, late in expected)
    seen = {"decided": [], "writes": [], "late_headers": 0, "discarded": 0, "discarded_beats": 0,
            "cycles": 0}

    async def bench(ctx):
        ctx.set(dut.cfg.mem_base, MEM_BASE)
        ctx.set(dut.cfg.mem_size, MEM_SIZE)
        dec = Source(ctx, dut.decision, rng, p_dec, [pack(d) for d, _ in work])
        beats = Source(ctx, dut.beats, rng, p_beat, [b for _, bs in work for b in bs])
        hdr = Source(ctx, dut.hdr, rng, 1.0)
        releases = []               # (cycle due, payload)
        pending = deque()           # the words of the frame being written
        queued = deque()            # (data, commits) of commands taken, for wdata
        written = PARAMS.word_init
        todo = iter(work)
        cmd_held, wdata_held = Held("cmd"), Held("wdata")
        t = 0
        while (len(seen["writes"]) < total_words or queued or dec.items or beats.items
               or dec.offer is not None or beats.offer is not None):
            assert t < 200 * frames, "the writer stalled"
            for due, payload in [r for r in releases if r[0] <= t]:
                releases.remove((due, payload))
                hdr.push(payload)
            dec.drive()
            beats.drive()
            hdr.drive()
            cmd_ready, wdata_ready = rng.random() < p_cmd, rng.random() < p_wdata
            ctx.set(dut.cmd.ready, cmd_ready)
            ctx.set(dut.wdata.ready, wdata_ready)

            want = {"written": written}
            if perturb:
                perturb(t, want)
            expect(t, "written", ctx.get(dut.written), want["written"])
            if ctx.get(dut.decision.ready) and dec.offer is not None:
                expect(t, "decision.ready while a header waits", hdr.offer is None, True)
            # The memory's side: data of a command taken in an earlier cycle, in order.
            if ctx.get(dut.wdata.valid):
                expect(t, "wdata.valid (data before its command)", bool(queued), True)
                expect(t, "wdata.payload.data", ctx.get(dut.wdata.payload.data), queued[0][0])
                expect(t, "wdata.payload.we", ctx.get(dut.wdata.payload.we), 0xFF)
            wdata_held.see(t, ctx.get(dut.wdata.valid), raw(ctx, dut.wdata.payload),
                           wdata_ready)
            cmd_held.see(t, ctx.get(dut.cmd.valid), ctx.get(dut.cmd.payload), cmd_ready)
            header = hdr.took()
            if header is not None:
                expect(t, "hdr.ready (a header taken without its command)",
                       ctx.get(dut.cmd.valid) and cmd_ready, 1)
            if ctx.get(dut.cmd.valid) and cmd_ready:
                if header is not None:
                    # A released header: between frames, after its frame's own beats.
                    expect(t, "cmd (a header inside a frame)", len(pending), 0)
                    want_addr, want_data, commits = headers_due.popleft()
                    seen["late_headers"] += 1
                else:
                    expect(t, "cmd (a write the model does not expect)", bool(pending), True)
                    want_addr, want_data, commits = pending.popleft()
                expect(t, "cmd.payload", ctx.get(dut.cmd.payload), want_addr)
                queued.append((want_data, commits))
                seen["writes"].append((want_addr, want_data))
            if ctx.get(dut.wdata.valid) and wdata_ready:
                written = (written + queued.popleft()[1]) & M32
            if dec.took() is not None:
                d, _ = next(todo)
                words, late = expected[len(seen["decided"])]
                seen["decided"].append(d)
                expect(t, "decision.ready (inside a frame)", len(pending), 0)
                pending.extend(words)
                seen["discarded"] += not d["keep"]
                seen["discarded_beats"] += 0 if d["keep"] else d["stored"]
                if late is not None:
                    headers_due.append(late)
                    # The slot scheduler releases frames in their order.
                    due = max([t + 1 + rng.randint(0, 80)] + [r[0] for r in releases])
                    releases.append((due,
                                     d["offset"] | d["length"] << 32 | d["egress"] << 48))
            beats.took()
            t += 1
            await ctx.tick()
        expect(t, "written", ctx.get(dut.written), (PARAMS.word_init + total) & M32)
        seen["cycles"] = t

    simulate(dut, bench)
    return seen


@pytest.mark.parametrize("seed, p_dec, p_beat, p_cmd, p_wdata, p_bod", [
    (1, 1.0, 1.0, 1.0, 1.0, 0.0),     # everything at full pace
    (2, 0.5, 0.7, 0.5, 0.6, 0.0),     # random paces on every side
    (3, 0.9, 0.9, 0.9, 0.3, 0.3),     # data taken slowly: the word queue fills; BoD frames
    (4, 0.6, 0.5, 0.3, 0.9, 0.6),     # commands taken slowly, mostly BoD frames
])
def test_writer_matches_model(seed, p_dec, p_beat, p_cmd, p_wdata, p_bod):
    seen = run_writer(seed, 100, p_dec, p_beat, p_cmd, p_wdata, p_bod)
    assert seen["discarded"] > 20 and len(seen["writes"]) > 400
    addrs = [a for a, _ in seen["writes"]]
    assert min(addrs) == MEM_BASE and max(addrs) == MEM_BASE + MEM_SIZE - 1    # round the ring
    assert (seen["late_headers"] > 10) == (p_bod > 0)
    if p_dec == p_beat == p_cmd == p_wdata == 1.0:
        # A word or a discarded beat a cycle, but for a cycle per decision between frames.
        assert seen["cycles"] <= len(seen["writes"]) + seen["discarded_beats"] + 100 + 5


def test_a_disagreement_names_signal_and_cycle():
    """A ``written`` count the model gets wrong in one cycle fails there, by name."""
    def perturb(t, want):
        if t == 77:
            want["written"] += 1
    with pytest.raises(Mismatch, match=r"^cycle 77: written is 0x[0-9a-f]+, the model says"):
        run_writer(2, 20, 0.5, 0.7, 0.5, 0.6, 0.3, perturb=perturb)
