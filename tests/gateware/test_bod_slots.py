# SPDX-License-Identifier: BSD-2-Clause
"""satemu_gw.bod_slots.SlotScheduler (with its BodAllocator) alone, in Amaranth's simulator,
against satemu.model.bod.Bod: every frame's release (its slot's end cycle), its header (egress
cycle, offset) and every superframe's record, read back from the ring as it is written."""

import random
from dataclasses import replace

import pytest

from satemu.model.bod import Bod
from satemu.base.records import pack_record, unpack_record
from satemu.base.params import ChannelParams, ChannelRegs, frame_words
from satemu.base.regmap import BOD_BG_REPEAT, BOD_ENABLE, BOD_FCA, CFG_FIELDS
from satemu_gw.bod_slots import SlotScheduler
from simbench import run

TIME48 = (1 << 48) - 1
START = 10          # superframe 0's first cycle (the initial commit's cycle + 1)


class Mismatch(AssertionError):
    """The block and the model disagree: which signal, for which frame or superframe, when."""


def cfg(regs: ChannelRegs) -> dict:
    return {f.name: getattr(regs, f.name) for f in CFG_FIELDS}


def model(frames, regs, params, commits, until):
    """The model's Bod, driven as ``Channel.arrive`` drives it (satemu/model/channel.py:
    ``advance(arrival)`` before each ``push``), then run over every slot starting at or before
    ``until``."""
    bod = Bod(regs, START, params, [(c, r) for c, r in commits])
    for k, (a, length) in enumerate(frames):
        bod.advance(a)
        bod.push(k, length, regs.overhead)
    bod.advance(until)
    return bod


def run_slots(frames, regs, params, commits=(), seed=0, p_ready=0.6, perturb=None):
    """Plays the admission engine and the registers around a SlotScheduler: pushes ``frames``
    ((arrival, length), every one admitted) as the engine does, and applies ``commits``
    ((cycle, regs)) as the engine and Regs do; checks every release, header and record against
    the model. ``perturb(bod)`` may alter the model's expectation first."""
    rng = random.Random(seed)
    last = frames[-1][0]
    sf = regs.bod_slots * regs.bod_slot_cycles
    end = last + 4 * sf
    want = model(frames, regs, params, commits, end + sf)
    if perturb:
        perturb(want)
    dut = SlotScheduler(params)
    ring = params.bod_ring
    offsets, off = [], 0               # each frame's header word, stored one after another
    for _, length in frames:
        offsets.append(off)
        off = (off + frame_words(length)) % regs.mem_size
    seen = {"released": 0, "records": 0, "max_queued": 0, "lag": 0}

    def fail(what, where, cycle, got, exp):
        raise Mismatch(f"bod_slots.{what}: {where} at cycle {cycle}: block {got}, model {exp}")

    async def bench(ctx):
        ctx.set(dut.cfg, cfg(regs))
        ctx.set(dut.start_at, START)
        pending = list(commits)
        pushed = released = 0
        count = 0
        check_record = None
        t = 0
        while t < end:
            if pending and pending[0][0] - 40 <= t:          # the commit is written (AT)
                ctx.set(dut.hold, 1)
                ctx.set(dut.hold_at, pending[0][0])
            done = ctx.get(dut.done_upto)
            # The engine: a frame arriving at a is pushed once every slot starting at or
            # before a is processed, a few cycles after it arrived; a frame after a pending
            # commit waits for the commit, which waits for the slots up to its cycle.
            push = False
            if pending:
                c, new = pending[0]
                arrived_before = pushed == len(frames) or frames[pushed][0] > c
                if arrived_before and done > c and t > c + 3:
                    pending.pop(0)
                    ctx.set(dut.cfg, cfg(new))
                    ctx.set(dut.hold, 0)
            if pushed < len(frames):
                a, length = frames[pushed]
                blocked = pending and a > pending[0][0]
                if (not blocked and t >= a + 2 + rng.randint(0, 3) and done > a
                        and rng.random() < 0.8):
                    push = True
            ctx.set(dut.push.valid, push)
            ctx.set(dut.push.payload.length, frames[pushed][1] if push else 0)
            if push:
                seen["lag"] = max(seen["lag"], t - frames[pushed][0])
                pushed += 1
            # Every frame that arrived before the horizon has been pushed.
            nxt = frames[pushed][0] if pushed < len(frames) else t
            ctx.set(dut.horizon, min(nxt, t))
            ctx.set(dut.hdr.ready, rng.random() < p_ready)
            ctx.set(dut.ring_sel, (count - 1) % (1 << 32))

            # A record written in the last cycle reads back now.
            if check_record is not None:
                k, at = check_record
                got = ctx.get(dut.ring_data)
                exp = pack_record(want.records[k]) if k < len(want.records) else None
                if got != exp:
                    fail("ring_data", f"superframe {k}", t, unpack_record(got),
                         exp and want.records[k])
                seen["records"] += 1
                check_record = None
            new_count = ctx.get(dut.count)
            if new_count != count:
                if new_count != count + 1:
                    fail("count", f"superframe {count}", t, new_count, count + 1)
                count = new_count
                check_record = (count - 1, t)
                ctx.set(dut.ring_sel, count - 1)
            hv, rv = ctx.get(dut.hdr.valid), ctx.get(dut.release.valid)
            if rv and not (hv and ctx.get(dut.hdr.ready)):
                fail("release.valid", f"release {released}", t, 1, 0)
            if hv and ctx.get(dut.hdr.ready):
                if not rv:
                    fail("release.valid", f"release {released}", t, 0, 1)
                if released >= len(want.released):
                    fail("release", f"release {released}", t, "a release", "none")
                k, at, egress = want.released[released]
                where = f"frame {k} (arrival {frames[k][0]})"
                got = ctx.get(dut.release.payload.departure)
                if got != at & TIME48:
                    fail("release.departure", where, t, got, at & TIME48)
                for name, sig, exp in (("release.length", dut.release.payload.length,
                                        frames[k][1]),
                                       ("hdr.length", dut.hdr.payload.length, frames[k][1]),
                                       ("hdr.egress", dut.hdr.payload.egress, egress & TIME48),
                                       ("hdr.offset", dut.hdr.payload.offset, offsets[k])):
                    if ctx.get(sig) != exp:
                        fail(name, where, t, ctx.get(sig), exp)
                if k >= pushed:
                    fail("release", where, t, "released before it was pushed", "")
                released += 1
            seen["max_queued"] = max(seen["max_queued"], pushed - released)
            if pushed - released >= params.bod_depth:
                raise Mismatch(f"bod_slots: the bench overfilled the queue at cycle {t}")
            await ctx.tick()
            t += 1
        # Every slot starting before done_upto is processed; the model, run as far, agrees on
        # what that released and recorded; the ring holds its newest records.
        if pushed != len(frames):
            raise Mismatch(f"bod_slots: stalled, {pushed} of {len(frames)} frames pushed")
        ctx.set(dut.hdr.ready, 0)        # the horizon holds still: let done_upto settle
        ctx.set(dut.push.valid, 0)
        for _ in range(12):
            await ctx.tick()
        count = ctx.get(dut.count)
        done = ctx.get(dut.done_upto)
        final = model(frames, regs, params, commits, done - 1)
        if released != len(final.released):
            fail("release", "the run's releases", t, released, len(final.released))
        if count != len(final.records):
            fail("count", "the run's superframes", t, count, len(final.records))
        for k in range(max(0, count - ring), count):
            ctx.set(dut.ring_sel, k)
            await ctx.tick()
            got = ctx.get(dut.ring_data)
            if got != pack_record(final.records[k]):
                fail("ring_data", f"superframe {k} (read back)", t, unpack_record(got),
                     final.records[k])
        seen["released"], seen["count"] = released, count
        seen["final"] = final

    run(dut, bench)
    return seen


PARAMS = ChannelParams(bod=True, queue_depth=128, latency_floor=64, bod_ring=8,
                       port_pad=60, port_fcs=4, port_gap=3)
PACED = replace(PARAMS, mem_pace=4)

# 8 slots of 40 cycles and 300 bytes: a superframe is 320 cycles; frames up to 600 bytes span
# up to 3 slots, and a slot carries the ends of several small ones. A small region (offsets
# wrap) and a delay a little above the latency floor.
BASE = ChannelRegs(bod_flags=BOD_ENABLE, bod_slots=8, bod_slot_cycles=40, bod_slot_bytes=300,
                   overhead=6, delay=100, min_len=60, max_len=600, mem_size=700,
                   queue_frames=100, bod_latency=2, bod_bg_count=1, bod_bg0=1 << 16)
SCENARIOS = {
    # CRA only: 3.5 slots a superframe, the fraction carried from one superframe to the next.
    "cra": (replace(BASE, bod_cra=3 * 256 + 128), PARAMS, (40, 120), ()),
    # CRA and RBDC (with a timeout and a request every 2 superframes), over a background load.
    "cra-rbdc": (replace(BASE, bod_cra=256 + 77, bod_rbdc_max=5 * 256, bod_rbdc_timeout=3,
                         bod_req_period=2, bod_latency=3, bod_bg0=2 | 1 << 16),
                 PARAMS, (0, 70), ()),
    # VBDC alone, a background schedule that repeats (steps of 1, 5 and 3 slots), and FCA.
    "vbdc-background": (replace(BASE, bod_vbdc_max=12, bod_latency=2, bod_bg_count=3,
                                bod_bg0=1 | 2 << 16, bod_bg1=5 | 3 << 16, bod_bg2=3 | 1 << 16,
                                bod_flags=BOD_ENABLE | BOD_BG_REPEAT | BOD_FCA),
                        PARAMS, (20, 100), ()),
    # All three, the memory's pace, and a commit mid-run: another shape (6 slots of 48 cycles
    # and 350 bytes), other rates, a longer latency and delay, from the next superframe on.
    "commit-paced": (replace(BASE, bod_cra=256, bod_rbdc_max=384, bod_vbdc_max=8,
                             bod_latency=2),
                     PACED, (0, 60),
                     (("mid", replace(BASE, bod_slots=6, bod_slot_cycles=48,
                                      bod_slot_bytes=350, bod_cra=256 + 200,
                                      bod_rbdc_max=4 * 256, bod_latency=3,
                                      delay=180)),)),
}


def scenario(name, seed, n=50):
    regs, params, gap, later = SCENARIOS[name]
    rng = random.Random(seed)
    frames, t = [], START + 5
    for _ in range(n):
        length = rng.randint(regs.min_len, regs.max_len)
        t += (length + 7) // 8 + rng.randint(*gap)
        frames.append((t, length))
    commits = tuple((frames[n // 2][0] + rng.randint(-20, 20), r) for _, r in later)
    return frames, regs, params, commits


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("seed", [1, 2])
def test_slots_match_model(name, seed):
    frames, regs, params, commits = scenario(name, seed)
    seen = run_slots(frames, regs, params, commits, seed=seed)
    recs = seen["final"].records
    assert seen["released"] == len(frames)          # the run drained the queue
    assert seen["records"] >= seen["count"] - 1 and seen["count"] > params.bod_ring
    assert any(r.used < r.granted for r in recs) and max(r.backlog for r in recs) > 300
    kinds = {n for r in recs for n in ("g_cra", "g_rbdc", "g_vbdc", "g_fca", "bg")
             if getattr(r, n)}
    expected = {"cra": {"g_cra"}, "cra-rbdc": {"g_cra", "g_rbdc", "bg"},
                "vbdc-background": {"g_vbdc", "g_fca", "bg"},
                "commit-paced": {"g_cra", "g_rbdc", "g_vbdc"}}[name]
    assert expected <= kinds, kinds


def test_a_commit_lowering_the_vbdc_maximum_below_the_pending_volume():
    """The block and the model agree, and request no VBDC, while the VBDC pending exceeds a
    lowered maximum (both clamp the request at 0)."""
    frames, regs, params, commits = scenario("commit-paced", 2)
    commits = tuple((c, replace(r, bod_vbdc_max=2)) for c, r in commits)
    run_slots(frames, regs, params, commits, seed=2)


def test_the_bench_reports_a_wrong_release_cycle():
    """One expected release shifted by a cycle: the bench names the signal, frame and cycle."""
    frames, regs, params, commits = scenario("cra-rbdc", 1)

    def shift(bod):
        k, at, egress = bod.released[9]
        bod.released[9] = (k, at + 1, egress)
        shift.k = k

    with pytest.raises(Mismatch) as info:
        run_slots(frames, regs, params, commits, seed=1, perturb=shift)
    assert str(info.value).startswith(
        f"bod_slots.release.departure: frame {shift.k} (arrival {frames[shift.k][0]}) at cycle ")


def test_the_bench_reports_a_wrong_record():
    frames, regs, params, commits = scenario("cra", 1)

    def grant(bod):
        bod.records[5].g_cra += 1

    with pytest.raises(Mismatch, match=r"^bod_slots\.ring_data: superframe 5 at cycle \d+"):
        run_slots(frames, regs, params, commits, seed=1, perturb=grant)
