# SPDX-License-Identifier: BSD-2-Clause
"""satemu_gw.admission.Admission alone, in Amaranth's simulator, against satemu.model.channel:
every frame's fate, departure and egress cycles, the queue and memory accounting, the loss
PRNG and a commit mid-run, frame by frame, with random arrivals and random backpressure."""

import heapq
import random
from collections import deque
from dataclasses import replace

import pytest
from amaranth import Elaboratable

from satemu.model.channel import Channel, Commit
from satemu.base.params import ChannelParams, ChannelRegs, Fate, frame_beats, frame_words
from satemu.base.regmap import (CFG_FIELDS, COMMIT_LAYOUT, COMMIT_RESEED, LOSS_BERNOULLI,
    LOSS_GILBERT_ELLIOTT)
from satemu_gw.admission import Admission, ENGINE_COUNTERS
from simbench import run

TIME48 = (1 << 48) - 1
WORDS32 = (1 << 32) - 1


class Mismatch(AssertionError):
    """The block and the model disagree: which signal, for which frame, in which cycle."""


class Probe(Elaboratable):
    """Elaborates the engine itself, so the bench can watch its on-chip departure FIFO (the
    departure times never leave the engine otherwise)."""

    def __init__(self, dut):
        self.dut = dut
        self.queue = None

    def elaborate(self, platform):
        self.dut._MustUse__used = True        # elaborated here, not by Fragment.get
        m = self.dut.elaborate(platform)
        if not hasattr(self.dut, "q_push"):
            self.queue = m.submodules.queue
        return m


def cfg(regs: ChannelRegs) -> dict:
    return {f.name: getattr(regs, f.name) for f in CFG_FIELDS}


def traffic(rng, n, gap, regs, p_err=0.03, start=20):
    """n frames (arrival, length, err): a frame of L bytes takes ceil(L/8) beats to come in,
    then a random gap of ``gap`` cycles."""
    frames, t = [], start
    for _ in range(n):
        length = lengths(rng, regs)
        t += max(frame_beats(length), 1) + rng.randint(*gap)
        frames.append((t, length, rng.random() < p_err))
    return frames


class Expect:
    """The model's verdict on each frame, and the layout the engine gives the kept ones: each
    stored one after another from offset 0 (the initial commit's layout), wrapping at
    ``mem_size`` (docs/architecture.md, "Widths and wraps")."""

    def __init__(self, frames, regs, params, commits):
        ch = Channel(regs, params, commits=commits)
        self.results = [ch.arrive(*f) for f in frames]
        self.model = ch.finish()
        self.offsets, off = [], 0
        for r, (_, length, _) in zip(self.results, frames):
            self.offsets.append(off if r.fate is Fate.DELIVERED else None)
            if r.fate is Fate.DELIVERED:
                off = (off + frame_words(length)) % regs.mem_size


def run_admission(frames, regs, params, commits=(), seed=0, p_ready=0.7, p_push=0.8,
                  p_wait=0.3, perturb=None):
    """Drives ``frames`` into an Admission built with ``params`` (the profile ``regs`` from an
    initial commit, then ``commits``, each a Commit with AT) and checks every event against the
    model; ``perturb(expect)`` may alter the model's expectation first. Returns what happened."""
    rng = random.Random(seed)
    exp = Expect(frames, regs, params, commits)
    if perturb:
        perturb(exp)
    dut = Admission(params)
    top = Probe(dut)
    outside = hasattr(dut, "q_push")
    words0 = params.word_init
    seen = {"fates": [], "lag": 0, "idle_checks": 0, "pushes": 0, "applies": []}
    ends = {"cycle": 0}

    def fail(what, k, cycle, got, want):
        arrival = frames[k][0] if k is not None and k < len(frames) else None
        raise Mismatch(f"admission.{what}: frame {k} (arrival {arrival}) at cycle {cycle}: "
                       f"block {got}, model {want}")

    async def bench(ctx):
        staged_regs = [(None, regs, COMMIT_RESEED | COMMIT_LAYOUT)]   # (cycle, regs, flags)
        for c in commits:
            staged_regs.append((c.cycle, c.regs, COMMIT_RESEED if c.reseed else 0))
        ctx.set(dut.cfg, cfg(ChannelRegs()))              # the reset values, until the first commit
        pending = None                                    # (commit_at, regs, flags) in force
        inflight = []                                     # heap of (egress, words) decided
        freed = words0
        freed_at = {}
        fifo = deque()                                    # descriptors visible to the engine
        visible = deque()                                 # (cycle visible, frame index)
        vis_t = 0
        for k, (a, _, _) in enumerate(frames):
            vis_t = max(vis_t, a + rng.randint(1, 2))     # the ingress FIFO: by a + 2, in order
            visible.append((vis_t, k))
        queue = deque()                                   # the bench's departure queue (outside)
        room = False
        decided = pushed = 0
        dep_want = [(k, r.departure) for k, r in enumerate(exp.results)
                    if r.fate is Fate.DELIVERED]
        idle_model = Channel(regs, params, commits=commits)   # levels, in step with decisions
        arrivals = {a for a, _, _ in frames}
        t = 0
        apply_next = None
        while decided < len(frames) or t < frames[-1][0] + 40:
            if t > frames[-1][0] + 20_000:
                raise Mismatch(f"admission: stalled at cycle {t} with {decided} frames decided")
            if apply_next is not None:                    # Regs: staged -> active on apply
                ctx.set(dut.cfg, cfg(apply_next))
                apply_next = None
            if pending is None and staged_regs and (staged_regs[0][0] is None
                                                    or staged_regs[0][0] - 50 <= t):
                at, r, flags = staged_regs.pop(0)
                pending = (t if at is None else at, r, flags)
                ctx.set(dut.staged, cfg(r))
                ctx.set(dut.commit_at, pending[0])
                ctx.set(dut.commit_flags, flags)
            ctx.set(dut.pending, pending is not None)
            ctx.set(dut.now, t)
            while inflight and inflight[0][0] < t:        # egress starts on time: words freed
                freed = (freed + heapq.heappop(inflight)[1]) & WORDS32
            ctx.set(dut.freed, freed)
            if t in arrivals:
                freed_at[t] = freed                       # the ingress's snapshot
            while visible and visible[0][0] <= t:
                k = visible.popleft()[1]
                a, length, err = frames[k]
                fifo.append((k, {"arrival": a, "length": length, "err": err,
                                 "stored": min(frame_beats(length), params.max_beats),
                                 "freed": freed_at[a], "freed_all": freed_at[a]}))
            ctx.set(dut.desc.valid, bool(fifo))
            if fifo:
                ctx.set(dut.desc.payload, fifo[0][1])
            ctx.set(dut.decision.ready, rng.random() < p_ready)
            if outside:
                head_ok = bool(queue) and queue[0][0] <= t
                ctx.set(dut.q_head.valid, head_ok)
                ctx.set(dut.q_head.payload, queue[0][1] if head_ok else {})
                ctx.set(dut.q_waiting, bool(queue) and not head_ok)
                # Room comes at random, and only a push takes it away (the engine waits for
                # it in DEPART and pushes in SCHEDULE, as DeltaQueue and DepartureQueue allow).
                room = room or rng.random() < p_push
                ctx.set(dut.q_push.ready, room)

            # This cycle's events, as the block shows them.
            if ctx.get(dut.apply):
                seen["applies"].append(t)
                layout = ctx.get(dut.layout_ok)
                if pending[2] & COMMIT_LAYOUT and not layout:
                    fail("layout_ok", None, t, 0, 1)
                apply_next = pending[1]
                pending = None
            if ctx.get(dut.desc.ready) and ctx.get(dut.desc.valid):
                fifo.popleft()
            if outside:
                if ctx.get(dut.q_head.ready) and ctx.get(dut.q_head.valid):
                    queue.popleft()
                push = ctx.get(dut.q_push.valid) and ctx.get(dut.q_push.ready)
                entry = dut.q_push.payload
            else:
                push = ctx.get(top.queue.w_en)
                entry = top.queue.w_data
            if push:
                dep = ctx.get(entry.departure) if outside else ctx.get(entry) & TIME48
                length = ctx.get(entry.length) if outside else ctx.get(entry) >> 48
                if pushed >= len(dep_want):
                    fail("departure", None, t, dep, "no more frames")
                k, want = dep_want[pushed]
                if dep != want & TIME48:
                    fail("departure", k, t, dep, want & TIME48)
                if length != frames[k][1]:
                    fail("departure.length", k, t, length, frames[k][1])
                if outside:           # visible at the head a cycle later, or later (spilled)
                    later = 1 + (rng.randint(1, 6) if rng.random() < p_wait else 0)
                    at = max(t + later, queue[-1][0] if queue else 0)
                    queue.append((at, {"departure": dep, "length": length}))
                pushed += 1
                seen["pushes"] += 1
                room = False
            if ctx.get(dut.decision.valid) and ctx.get(dut.decision.ready):
                k = decided
                if k >= len(frames):
                    fail("decision", None, t, "a decision", "no more frames")
                if not ctx.get(dut.fate_valid):
                    fail("fate_valid", k, t, 0, 1)
                r, (a, length, _) = exp.results[k], frames[k]
                fate = Fate(ctx.get(dut.fate))
                if fate != r.fate:
                    fail("fate", k, t, fate.name, r.fate.name)
                if (ctx.get(dut.fate_arrival), ctx.get(dut.fate_length)) != (a, length):
                    fail("fate_arrival/length", k, t,
                         (ctx.get(dut.fate_arrival), ctx.get(dut.fate_length)), (a, length))
                d = dut.decision.payload
                keep = ctx.get(d.keep)
                if keep != (r.fate is Fate.DELIVERED):
                    fail("decision.keep", k, t, keep, int(r.fate is Fate.DELIVERED))
                if ctx.get(d.stored) != min(frame_beats(length), params.max_beats):
                    fail("decision.stored", k, t, ctx.get(d.stored), frame_beats(length))
                if ctx.get(d.length) != length or ctx.get(d.bod):
                    fail("decision.length/bod", k, t, (ctx.get(d.length), ctx.get(d.bod)),
                         (length, 0))
                if keep:
                    egress = ctx.get(d.egress)
                    if egress != r.egress & TIME48:
                        fail("decision.egress", k, t, egress, r.egress & TIME48)
                    if ctx.get(d.offset) != exp.offsets[k]:
                        fail("decision.offset", k, t, ctx.get(d.offset), exp.offsets[k])
                    if egress <= t:       # the model's premise: decided before its egress
                        fail("decision (late)", k, t, egress, f"> {t}")
                    heapq.heappush(inflight, (egress, frame_words(length)))
                idle_model.arrive(a, length, frames[k][2])
                seen["fates"].append(fate)
                seen["lag"] = max(seen["lag"], t - a)
                decided += 1
            elif ctx.get(dut.fate_valid):
                fail("fate_valid", decided, t, 1, 0)
            # Idle, with every frame that arrived before now decided: the memory in use is the
            # model's level at this cycle, and ``empty`` says whether it is 0.
            if decided and (decided == len(frames) or frames[decided][0] >= t):
                want = idle_model.levels(t)["mem_words_now"]
                got = ctx.get(dut.mem_words_now)
                if got != want:
                    fail("mem_words_now", decided - 1, t, got, want)
                if ctx.get(dut.empty) != (want == 0):
                    fail("empty", decided - 1, t, ctx.get(dut.empty), int(want == 0))
                seen["idle_checks"] += 1
            await ctx.tick()
            t += 1
        if pushed != len(dep_want):
            fail("departure", None, t, f"{pushed} pushes", f"{len(dep_want)}")
        for name in ENGINE_COUNTERS:
            if ctx.get(getattr(dut, name)) != exp.model.counters[name]:
                fail(name, None, t, ctx.get(getattr(dut, name)), exp.model.counters[name])
        for name, want in exp.model.gauges.items():
            if ctx.get(getattr(dut, name)) != want:
                fail(name, None, t, ctx.get(getattr(dut, name)), want)
        ends["cycle"] = t

    run(top, bench)
    seen["cycles"] = ends["cycle"]
    return seen


def lengths(rng, regs):
    """A length: mostly one the profile passes, sometimes a runt or an oversize frame."""
    kind = rng.random()
    if kind < 0.08:
        return rng.randint(1, regs.min_len - 1)
    if kind < 0.16:
        return rng.randint(regs.max_len + 1, regs.max_len + 64)
    return rng.randint(regs.min_len, regs.max_len)


# Register sets, in register units.
BASE = ChannelRegs(min_len=60, max_len=600, mem_size=4000, queue_frames=8, queue_bytes=2400)
# A rate shaper at a fractional rate (0.538 cycles a byte, plus 24 bytes of overhead a frame),
# a tight byte and frame limit: the queue fills and drops frames for either limit.
SHAPED = replace(BASE, rate_q=0, rate_num=7, rate_den=13, overhead=24, delay=300,
                 loss_mode=LOSS_BERNOULLI, loss_p=1 << 29, seed=0x1234_5678_9ABC)
# Gilbert-Elliott loss, a slower shaper with an integer part, and a memory region so small that
# frames wait in it for want of words (``drop_mem``).
GE = replace(BASE, rate_q=1, rate_num=5, rate_den=7, overhead=8, delay=500, mem_size=420,
             queue_frames=12, queue_bytes=0xFFFF_FFFF, loss_mode=LOSS_GILBERT_ELLIOTT,
             ge_p=1 << 30, ge_r=1 << 30, ge_loss_good=1 << 27, ge_loss_bad=3 << 30, seed=77)
# Unshaped: the port's pace and the memory's pace set the egress cycles.
UNSHAPED = replace(BASE, delay=90, queue_frames=12, mem_size=900)

PORT = dict(port_pad=60, port_fcs=4, port_gap=3)
PARAMS = {
    "fifo": ChannelParams(queue_depth=16, latency_floor=64, **PORT),
    "paced": ChannelParams(queue_depth=16, latency_floor=64, mem_pace=3, **PORT),
    # The departure times outside the engine (a delta-coded queue's port), with room and the
    # head arriving at random; the word counts start just below their 2^32 wrap.
    "outside": ChannelParams(queue_depth=64, delta_queue=64, latency_floor=64,
                             word_init=(1 << 32) - 700, counter_init=5, **PORT),
}

SCENARIOS = {
    # name: (regs, params, gap, commit)
    "shaped-bernoulli": (SHAPED, "fifo", (0, 30), None),
    "ge-mem": (GE, "fifo", (0, 40), None),
    "unshaped-paced": (UNSHAPED, "paced", (0, 12), None),
    "outside-queue": (SHAPED, "outside", (0, 30), None),
    # A commit mid-run with RESEED: another rate (its denominator changes, V rounds up), the
    # Gilbert-Elliott loss instead of Bernoulli, other limits.
    "commit-mid-run": (SHAPED, "fifo", (0, 30),
                       replace(GE, mem_size=SHAPED.mem_size, queue_frames=5, delay=200)),
    "commit-outside": (GE, "outside", (0, 35),
                       replace(SHAPED, mem_size=GE.mem_size, rate_num=3, rate_den=4)),
}


def scenario(name, seed, n=110):
    regs, pname, gap, later = SCENARIOS[name]
    params = PARAMS[pname]
    rng = random.Random(seed)
    frames = traffic(rng, n, gap, regs)
    commits = ()
    if later is not None:
        commits = (Commit(frames[n // 2][0] + rng.randint(-3, 3), later, reseed=True),)
    return frames, regs, params, commits


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("seed", [1, 2])
def test_admission_matches_model(name, seed):
    frames, regs, params, commits = scenario(name, seed)
    seen = run_admission(frames, regs, params, commits, seed=seed)
    fates = set(seen["fates"])
    # Every event the scenario is for happened.
    assert {Fate.DELIVERED, Fate.RUNT, Fate.OVERSIZE, Fate.ERROR} <= fates, fates
    if regs.loss_mode or commits:
        assert Fate.LOSS in fates
    if name != "unshaped-paced":
        assert Fate.QUEUE in fates
    if regs is GE:
        assert Fate.MEM in fates
    assert seen["idle_checks"] > 20
    assert len(seen["applies"]) == 1 + len(commits)


def test_the_bench_reports_a_wrong_egress_cycle():
    """One expected egress cycle shifted by one: the bench names the signal, frame and cycle."""
    frames, regs, params, commits = scenario("shaped-bernoulli", 1)

    def shift(exp):
        k = [i for i, r in enumerate(exp.results) if r.fate is Fate.DELIVERED][7]
        exp.results[k] = replace(exp.results[k], egress=exp.results[k].egress + 1)
        shift.k = k

    with pytest.raises(Mismatch) as info:
        run_admission(frames, regs, params, commits, seed=1, perturb=shift)
    assert f"admission.decision.egress: frame {shift.k} (arrival {frames[shift.k][0]}) at " \
           f"cycle " in str(info.value)


def test_the_bench_reports_a_wrong_fate():
    frames, regs, params, commits = scenario("ge-mem", 1)

    def flip(exp):
        k = [i for i, r in enumerate(exp.results) if r.fate is Fate.MEM][0]
        exp.results[k] = replace(exp.results[k], fate=Fate.QUEUE)
        flip.k = k

    with pytest.raises(Mismatch, match=r"admission\.fate: frame \d+ .* block MEM, model QUEUE"):
        run_admission(frames, regs, params, commits, seed=1, perturb=flip)
