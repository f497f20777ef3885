# SPDX-License-Identifier: BSD-2-Clause
"""Bandwidth-on-Demand return-link scenarios for the channel bench (issue 5)."""

from __future__ import annotations

from dataclasses import asdict, replace
from fractions import Fraction

from satemu.link.registers import channel_registers
from satemu.base.params import ChannelParams
from satemu.base.regmap import BOD_ENABLE, BOD_FCA, BOD_BG_REPEAT, BOD_RATE_ONE
from sim.traffic import scenario, traffic
from sim.channel.scenarios import HOSTILE_MEM

MEM_WORDS = 1 << 20
# A return channel as the boards build it: a MAC behind its egress (sim.board), 1024 departure
# times on chip, deeper queues spill to memory, and a BoD queue deeper than those (bod_queue).
PARAMS = ChannelParams(bod=True, port_pad=60, port_fcs=4, port_gap=3, frame_log=True,
                       queue_depth=4096, queue_fifo=1024, bod_queue=4096)
# The Versa-5G's return channel: departure times on chip as distances (delta_queue).
DELTA_PARAMS = replace(PARAMS, queue_fifo=0, delta_queue=4096)


def bod_regs(f_clk, *, superframe, slots, slot_bytes, cra=0, rbdc_max=0, timeout=0, vbdc_max=0,
             period=1, latency=8, background=((0, 1),), repeat=False, fca=False,
             delay=Fraction(1, 20), queue_frames=200, overhead=0, seed=1, loss=0.0):
    """Register values of a BoD return channel; rates in bit/s, times in seconds, background
    as (fraction of the slots, superframes) levels."""
    slot_cycles = round(Fraction(superframe) * f_clk / slots)
    sf_s = Fraction(slot_cycles * slots, f_clk)

    def rate(bps):
        return round(Fraction(bps) * sf_s / (8 * slot_bytes) * BOD_RATE_ONE)

    regs = channel_registers(f_clk=f_clk, delay_s=delay, queue_frames=queue_frames,
                             mem_size=MEM_WORDS, overhead=overhead, seed=seed, loss=loss,
                             params=PARAMS)
    levels = {f"bod_bg{i}": round(fr * slots) | (n << 16) for i, (fr, n) in enumerate(background)}
    return replace(regs, bod_flags=BOD_ENABLE | (BOD_FCA if fca else 0)
                   | (BOD_BG_REPEAT if repeat else 0),
                   bod_slot_cycles=slot_cycles, bod_slots=slots, bod_slot_bytes=slot_bytes,
                   bod_cra=rate(cra), bod_rbdc_max=rate(rbdc_max), bod_rbdc_timeout=timeout,
                   bod_vbdc_max=vbdc_max, bod_req_period=period, bod_latency=latency,
                   bod_bg_count=len(background), **levels)


def bod_scenarios() -> dict[str, dict]:
    sc = {}
    f = 1_000_000
    # 10 ms superframes of 40 slots x 100 bytes (a 3.2 Mbit/s carrier); frames up to 1518
    # bytes span up to 16 slots, and slots carry the ends of several frames.
    base = dict(superframe=Fraction(1, 100), slots=40, slot_bytes=100, overhead=6)

    regs = bod_regs(f, cra=64_000, rbdc_max=1_600_000, timeout=8, vbdc_max=60, latency=8,
                    background=((0.3, 1),), **base)
    sc["bod-steady"] = scenario(
        "steady return traffic at 1 Mbit/s: RBDC follows the arrival rate", f_clk=f, regs=regs,
        params=PARAMS, tb_seed=21, run_after=200_000,
        frames=traffic(31, 250, rate_bps=1_000_000, f_clk=f, load=1.0),
        expect={"rbdc tracks": "sum(1 for r in bod['records'] if r['g_rbdc'] > 0) > 50"})

    # Bursts and long idle gaps, into a hostile memory: grants arrive (RBDC, VBDC, CRA) after
    # the queue has drained, and slots go unused.
    regs = bod_regs(f, cra=32_000, rbdc_max=2_000_000, timeout=4, vbdc_max=200, latency=12,
                    background=((0.2, 1),), queue_frames=400, **base)
    sc["bod-bursty-idle"] = scenario(
        "bursts and idle gaps: grants arriving while the queue is empty", f_clk=f, regs=regs,
        params=PARAMS, tb_seed=22, mem=HOSTILE_MEM, run_after=300_000,
        frames=traffic(32, 500, rate_bps=1_000_000, f_clk=f, load=1.0, p_burst=0.08,
                       burst=(10, 40), p_idle=0.03, idle_cycles=(100_000, 300_000)),
        expect={"idle grants": "any(r['backlog'] == 0 and r['granted'] > r['used'] and "
                               "r['g_rbdc'] + r['g_vbdc'] > 0 for r in bod['records'])",
                "bursts queue": "bod['backlog_max'] > 20_000"})

    # Pool contention: the other terminals' load steps through a repeating schedule up to 95%
    # of the carrier, so RBDC and VBDC get only what is left; FCA hands out the rest.
    regs = bod_regs(f, cra=64_000, rbdc_max=3_000_000, timeout=0, vbdc_max=400, latency=6,
                    background=((0.1, 6), (0.95, 10), (0.5, 4)), repeat=True, fca=True,
                    queue_frames=300, **base)
    sc["bod-pool-contention"] = scenario(
        "background load schedule up to 95% of the pool, FCA on", f_clk=f, regs=regs,
        params=PARAMS, tb_seed=23, run_after=100_000,
        frames=traffic(33, 500, rate_bps=2_000_000, f_clk=f, load=1.0, p_burst=0.03),
        expect={"pool full": "any(r['bg'] + r['granted'] == 40 and r['g_fca'] == 0 and "
                             "r['backlog'] > 0 for r in bod['records'])",
                "fca": "any(r['g_fca'] > 0 for r in bod['records'])",
                "levels": "set(bod['bg']) == {4, 38, 20}"})

    # RBDC requested every 4 superframes and valid for 2: its grants stop between requests (a
    # small CRA drains what RBDC leaves behind once the traffic stops).
    regs = bod_regs(f, cra=160_000, rbdc_max=1_500_000, timeout=2, period=4, latency=5,
                    background=((0.25, 1),), queue_frames=500, **base)
    sc["bod-rbdc-timeout"] = scenario(
        "RBDC request validity shorter than the request period", f_clk=f, regs=regs,
        params=PARAMS, tb_seed=24, run_after=100_000,
        frames=traffic(34, 300, rate_bps=800_000, f_clk=f, load=1.0),
        expect={"expired": "sum(1 for a, b in zip(bod['records'], bod['records'][1:]) "
                           "if a['g_rbdc'] > 0 and b['g_rbdc'] == 0 and b['backlog'] > 0) >= 5"})

    # VBDC only, for bursts far larger than a superframe's 40 slots; the maximum latency the
    # pipeline holds (64 superframes).
    regs = bod_regs(f, vbdc_max=2000, latency=64, background=((0.5, 1),), queue_frames=1000,
                    **base)
    sc["bod-vbdc-large"] = scenario(
        "VBDC volumes of many superframes, 64-superframe request-to-grant latency", f_clk=f,
        regs=regs, params=PARAMS, tb_seed=25, run_after=50_000,
        frames=traffic(35, 400, rate_bps=2_000_000, f_clk=f, load=1.0, p_burst=0.05,
                       burst=(30, 80), p_idle=0.01),
        expect={"vbdc > superframe": "bod['vbdc_max_req'] > 40",
                "spread": "sum(1 for r in bod['records'] if r['g_vbdc'] == 20) >= 3"})

    # Loss, queue overflow and a slot too small for one frame: 1% loss, a 30-frame queue under
    # 3x overload, 64-byte slots, frames fragmented over up to 24 slots.
    regs = bod_regs(f, superframe=Fraction(1, 100), slots=40, slot_bytes=64, overhead=10,
                    cra=128_000, rbdc_max=1_000_000, timeout=6, vbdc_max=100, latency=10,
                    background=((0.0, 1),), queue_frames=30, loss=0.01, seed=9)
    sc["bod-loss-overload"] = scenario(
        "loss and queue drops before the slots; frames over many 64-byte slots", f_clk=f,
        regs=regs, params=PARAMS, tb_seed=26, mem=HOSTILE_MEM, run_after=50_000,
        frames=traffic(36, 500, rate_bps=3_000_000, f_clk=f, load=1.0, p_runt=0.02, p_err=0.02),
        expect={"queue drops": "summary['counters']['drop_queue'] > 0",
                "loss": "summary['counters']['drop_loss'] > 0"})

    # The same with corruption, 12.5% of the frames admitted, 25% correlated: the writer flips
    # a bit of each as it stores it, whose header the slot scheduler writes later.
    sc["bod-corrupt"] = scenario(
        "corruption of frames the slots carry, with loss and queue drops", f_clk=f,
        regs=replace(regs, cor_p=1 << 29, cor_corr=1 << 14), params=replace(PARAMS, corrupt=True),
        tb_seed=27, mem=HOSTILE_MEM, run_after=50_000,
        frames=traffic(37, 500, rate_bps=3_000_000, f_clk=f, load=1.0, p_runt=0.02, p_err=0.02),
        expect={"corrupted": "summary['counters']['corrupted'] > 20",
                "loss": "summary['counters']['drop_loss'] > 0"})

    # The same with duplication, 10% of the frames, 25% correlated: each copy waits for the
    # slots behind its original, or is dropped in the queue or by the loss draw on its own.
    sc["bod-duplicate"] = scenario(
        "duplication of frames the slots carry, with loss and queue drops", f_clk=f,
        regs=replace(regs, dup_p=round(0.1 * 2**32), dup_corr=1 << 14),
        params=replace(PARAMS, duplicate=True), tb_seed=28, mem=HOSTILE_MEM, run_after=50_000,
        frames=traffic(38, 500, rate_bps=3_000_000, f_clk=f, load=1.0, p_runt=0.02, p_err=0.02),
        expect={"duplicated": "summary['counters']['duplicated'] > 20",
                "loss": "summary['counters']['drop_loss'] > 0"})

    # A board's memory pace (4 cycles a word, 2 bytes a cycle) on 1000-byte slots of an
    # 8 Mbit/s carrier: a slot carries the ends of several short frames, released together at
    # its end; they leave at the pace, not at the port's rate.
    regs = bod_regs(f, superframe=Fraction(1, 100), slots=10, slot_bytes=1000, overhead=6,
                    cra=3_000_000, rbdc_max=4_000_000, timeout=4, latency=4, queue_frames=200)
    sc["bod-paced"] = scenario(
        "slots releasing several frames at once on a paced memory", f_clk=f, regs=regs,
        params=replace(PARAMS, mem_pace=4), tb_seed=28, mem=HOSTILE_MEM, run_after=50_000,
        frames=traffic(38, 400, rate_bps=3_000_000, f_clk=f, load=1.0, p_small=0.6,
                       p_burst=0.05))

    # ACK-sized frames (60 to 100 bytes) at 8 Mbit/s into grants of at most 1.6 Mbit/s: the
    # BoD queue grows past the 1024 frames the chip holds departure times for, in a region of
    # 16,384 words that the frames wrap round, so every header goes where the scheduler
    # follows the engine's offsets.
    regs = bod_regs(f, cra=64_000, rbdc_max=1_600_000, timeout=8, vbdc_max=60, latency=8,
                    background=((0.3, 1),), queue_frames=3000, **base)
    sc["bod-deep-queue"] = scenario(
        "a BoD queue of 1,500 ACK-sized frames, past the chip's departure times", f_clk=f,
        regs=replace(regs, mem_size=1 << 14), params=PARAMS, tb_seed=29, run_after=700_000,
        frames=traffic(39, 2000, rate_bps=8_000_000, f_clk=f, load=1.0, lengths=(60, 100),
                       p_small=0.5, p_full=0.2),
        expect={"deep": "summary['counters']['queue_frames_hwm'] > 1024"})

    # A timeline's BoD steps, each named ahead (COMMIT_AT) as the firmware runs them, with
    # frames queued across every one: the grants, the background, the delay (up, then a cut)
    # and loss; then the superframe's shape (slots, their length and bytes) and the request
    # period; then back, with a queue cut. The block takes each at its first superframe after
    # the step, keeping its requests and grants in flight.
    common = dict(vbdc_max=80, latency=8, queue_frames=300, seed=3)
    s0 = bod_regs(f, cra=64_000, rbdc_max=1_600_000, timeout=8, background=((0.3, 1),),
                  **common, **base)
    s1 = bod_regs(f, cra=200_000, rbdc_max=800_000, timeout=8, background=((0.6, 1),),
                  delay=Fraction(8, 100), **common, **base)
    s2 = bod_regs(f, superframe=Fraction(15, 1000), slots=50, slot_bytes=60, cra=96_000,
                  rbdc_max=1_200_000, timeout=3, period=2, background=((0.1, 1),),
                  delay=Fraction(4, 100), loss=0.02, overhead=6, **common)
    s3 = replace(s0, queue_frames=40)
    steps = [(250_000, s1), (500_000, s2), (750_000, s3)]
    sc["bod-steps"] = scenario(
        "timeline steps on a BoD channel: grants, background, delay up and down, loss, the "
        "superframe's shape, the request period and the queue, each at its named cycle",
        f_clk=f, regs=s0, params=PARAMS, tb_seed=27, run_after=100_000,
        frames=traffic(37, 220, rate_bps=1_000_000, f_clk=f, load=1.0, p_burst=0.03),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs} for cycle, regs in steps],
        expect={"each step's background": "{12, 24, 5} <= {r['bg'] for r in bod['records']}",
                "each step's CRA": "{0, 1, 2} <= {r['g_cra'] for r in bod['records']}",
                "loss in step 2": "summary['counters']['drop_loss'] > 0"})
    sc["bod-steps"]["expect_commit_cycles"] = [cycle for cycle, _ in steps]
    # The same on a channel that holds its departure times on chip as distances, as the
    # Versa-5G's return channel does: the released frames' departures are slot ends.
    sc["bod-steps-delta"] = dict(sc["bod-steps"], params=asdict(DELTA_PARAMS),
                                 name="bod-steps on a queue of departure distances")
    return sc
