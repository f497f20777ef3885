# SPDX-License-Identifier: BSD-2-Clause
"""The channel configurations of issue 2, each with random and adversarial traffic."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from satemu.base import distributions
from satemu.model.channel import Commit, simulate
from satemu.link.registers import channel_registers
from satemu.base.params import frame_words
from satemu.base.params import ChannelParams, ChannelRegs, Fate
from satemu.base.regmap import CFG_FIELDS
from sim.traffic import SCENARIO_PARAMS, scenario, traffic

HOSTILE_MEM = {"cmd_ready": 0.6, "wdata_ready": 0.6, "lat_min": 4, "lat_max": 40}
MEM_WORDS = 1 << 22     # 32 MiB of 64-bit words: enough for every profile below


def mem_for(rate_bps, delay_s, f_clk, margin=2.0) -> int:
    """Words a delay line needs for ``rate_bps`` x ``delay_s`` of minimum-size frames."""
    if not rate_bps:
        return MEM_WORDS
    frames = rate_bps * float(delay_s) / (8 * 60) * margin + 4096
    return min(MEM_WORDS, int(frames * frame_words(60)))


def paced_frames(sc: dict, summary: dict) -> int:
    """How many of a scenario's frames the memory's pace (``ChannelParams.mem_pace``) delayed:
    those whose egress the model, run on the bench's arrivals without the pace, puts earlier."""
    params = replace(ChannelParams(**sc["params"]), mem_pace=0)
    commits = [Commit(c["cycle"], ChannelRegs(**c["regs"]), c["reseed"]) for c in sc["commits"]]
    free = simulate(zip(summary["arrivals"], [f[1] for f in sc["frames"]],
                        [f[2] for f in sc["frames"]]), ChannelRegs(**sc["regs"]), params, commits,
                    bod_start=summary.get("bod_start", 0), jitter=sc.get("jitter"))
    got = iter(summary["egress"])
    return sum(r.egress != next(got) for r in free.frames if r.fate == Fate.DELIVERED)


def all_scenarios() -> dict[str, dict]:
    """The configurations issue 2 names, each with random and adversarial traffic."""
    sc = {}

    # 10 Mbit/s forward, 2 Mbit/s return, 300 ms one way: the full delay, at a 1 MHz clock.
    f = 1_000_000
    for direction, rate, n in (("fwd-10M", 10_000_000, 700), ("ret-2M", 2_000_000, 250)):
        regs = channel_registers(f_clk=f, rate_bps=rate, overhead=24, delay_s=Fraction(3, 10),
                                 queue_frames=100, mem_size=MEM_WORDS, seed=7)
        sc[f"geo-small-{direction}-300ms"] = scenario(
            f"geo-small {direction}, 300 ms", f_clk=f, regs=regs, mem=HOSTILE_MEM, tb_seed=11,
            frames=traffic(21, n, rate_bps=rate, f_clk=f, load=1.5, p_runt=0.02, p_oversize=0.02,
                           p_err=0.02, p_burst=0.05, p_idle=0.01))

    # 8.5/1.5 Mbit/s, forward queue 1 BDP (~640 KB), return queue 50 frames, 1% loss forward.
    f = 2_000_000
    bdp = int(8_500_000 * 0.6 / 8)
    regs = channel_registers(f_clk=f, rate_bps=8_500_000, delay_s=Fraction(3, 10),
                             queue_bytes=bdp, loss=0.01, mem_size=MEM_WORDS, seed=99)
    sc["geo-testbed-fwd-bdp-loss"] = scenario(
        "geo-testbed forward: 1-BDP queue, 1% loss", f_clk=f, regs=regs, tb_seed=3,
        mem=HOSTILE_MEM, frames=traffic(5, 1500, rate_bps=8_500_000, f_clk=f, load=3.0,
                                        p_burst=0.1, burst=(50, 200)))
    regs = channel_registers(f_clk=f, rate_bps=1_500_000, delay_s=Fraction(3, 10),
                             queue_frames=50, mem_size=MEM_WORDS, seed=5,
                             gilbert_elliott=(0.01, 0.3, 0.0, 0.5))
    sc["geo-testbed-ret-50pkt-ge"] = scenario(
        "geo-testbed return: 50-frame queue, Gilbert-Elliott loss, 10x overload", f_clk=f,
        regs=regs, tb_seed=4, mem=HOSTILE_MEM,
        frames=traffic(6, 600, rate_bps=1_500_000, f_clk=f, load=10.0, p_small=0.6, p_burst=0.1))

    # 250 Mbit/s at a 50 MHz clock (5 bytes per cycle of a 64-bit datapath).
    f = 50_000_000
    regs = channel_registers(f_clk=f, rate_bps=250_000_000, overhead=24, delay_s=Fraction(1, 1000),
                             queue_frames=200, mem_size=MEM_WORDS, loss=0.01, seed=3)
    sc["rate-250M"] = scenario(
        "250 Mbit/s, 1 ms, 1% loss, 2x overload", f_clk=f, regs=regs, tb_seed=8,
        frames=traffic(9, 1200, rate_bps=250_000_000, f_clk=f, load=2.0, p_runt=0.02, p_err=0.02,
                       p_burst=0.05), mem={"cmd_ready": 0.9, "wdata_ready": 0.9, "lat_min": 4, "lat_max": 20})

    # 100 kbit/s (constrained return): ~10x overload into a 20-frame queue.
    f = 1_000_000
    regs = channel_registers(f_clk=f, rate_bps=100_000, delay_s=Fraction(3, 10), queue_frames=20,
                             mem_size=MEM_WORDS, seed=1)
    sc["rate-100k"] = scenario(
        "100 kbit/s, 300 ms, 20-frame queue", f_clk=f, regs=regs, tb_seed=12, mem=HOSTILE_MEM,
        frames=traffic(13, 150, rate_bps=100_000, f_clk=f, load=10.0, p_small=0.7))

    # No shaping and no delay: straight through (latency floor only). Beats come at about
    # 1.2 Gbit/s (a GbE port is 0.21 beats per cycle at 75 MHz), bursts back to back.
    f = 75_000_000
    regs = channel_registers(f_clk=f, mem_size=MEM_WORDS)
    sc["unshaped-nodelay"] = scenario(
        "no shaping, no delay", f_clk=f, regs=regs, tb_seed=2, beat_gap=0.75,
        frames=traffic(14, 1500, rate_bps=None, f_clk=f, load=0.25, p_runt=0.03, p_oversize=0.03,
                       p_err=0.03, p_malformed=0.02, p_burst=0.05, burst=(2, 10)),
        mem={"cmd_ready": 0.9, "wdata_ready": 0.9, "lat_min": 4, "lat_max": 16})

    # A small memory region: the delay line overflows, frames are dropped as memory-full.
    f = 1_000_000
    regs = channel_registers(f_clk=f, rate_bps=10_000_000, delay_s=Fraction(1, 10),
                             mem_size=2000, seed=1, mem_base=12345)
    sc["mem-full"] = scenario(
        "delay line overflow", f_clk=f, regs=regs, tb_seed=5, mem=HOSTILE_MEM,
        frames=traffic(15, 500, rate_bps=10_000_000, f_clk=f, load=0.9))

    # Profile changes mid-stream: each commit applies to frames arriving after its cycle.
    f = 1_000_000
    base = dict(f_clk=f, mem_size=MEM_WORDS, queue_frames=60)
    r0 = channel_registers(rate_bps=10_000_000, delay_s=Fraction(5, 100), seed=3, **base)
    r1 = channel_registers(rate_bps=2_000_000, overhead=40, delay_s=Fraction(49, 1000), loss=0.05,
                           seed=77, **base)
    r2 = channel_registers(rate_bps=3_333_333, delay_s=Fraction(7, 100), seed=5,
                           gilbert_elliott=(0.05, 0.2, 0.01, 0.6), **base)
    # A delay cut makes the frames of the cut due at once; exact while they fit the playout FIFO
    # (1 ms at 3.3 Mbit/s is ~53 beats), counted as late beyond that (architecture.md).
    r3 = replace(r2, delay=r2.delay - f // 1000, rate_q=r0.rate_q, rate_num=r0.rate_num,
                 rate_den=r0.rate_den)
    # Then a delay rise and a queue cut. Each commit is written some 20,000 cycles ahead and
    # named for its cycle (COMMIT_AT), as the firmware runs a timeline's steps; frames arrive
    # on either side of every named cycle.
    r4 = replace(r3, delay=r3.delay + f // 50, queue_frames=6, queue_bytes=4000)
    steps = [(60_000, r1, True), (140_000, r2, False), (200_000, r3, True), (230_000, r4, False)]
    sc["commit-midstream"] = scenario(
        "timeline steps mid-stream: rate, delay down and up, overhead, loss and queue change "
        "atomically at their named cycles", f_clk=f, regs=r0, tb_seed=9, mem=HOSTILE_MEM,
        frames=traffic(17, 900, rate_bps=4_000_000, f_clk=f, load=1.2, p_burst=0.05),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs, "reseed": reseed}
                 for cycle, regs, reseed in steps])
    sc["commit-midstream"]["expect_commit_cycles"] = [cycle for cycle, _, _ in steps]

    # A board's memory pace (ChannelParams.mem_pace, 4 cycles a word: 2 bytes a cycle, twice
    # the 8 Mbit/s link at 1 MHz): delay cuts of 55 ms and 30 ms make the frames of each cut
    # due at once, and they leave at the pace, not at the port's 8 bytes a cycle; a delay rise
    # and a rate step between. Steady traffic at the link rate never waits for the pace.
    f = 1_000_000
    d0 = channel_registers(f_clk=f, rate_bps=8_000_000, overhead=24, delay_s=Fraction(6, 100),
                           queue_frames=100, mem_size=MEM_WORDS, seed=6)
    d1 = replace(d0, delay=5_000)
    d2 = replace(d1, delay=30_000)
    half = channel_registers(f_clk=f, rate_bps=4_000_000)
    d3 = replace(d2, delay=0, rate_q=half.rate_q, rate_num=half.rate_num, rate_den=half.rate_den)
    steps = [(120_000, d1), (250_000, d2), (330_000, d3)]
    sc["delay-cut-paced"] = scenario(
        "delay cuts on a paced memory: the frames of a cut leave at the memory's pace, exactly",
        f_clk=f, regs=d0, params=replace(SCENARIO_PARAMS, mem_pace=4), tb_seed=14,
        mem=HOSTILE_MEM, frames=traffic(22, 500, rate_bps=8_000_000, f_clk=f, load=0.35,
                                        p_burst=0.05, p_runt=0.01),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs} for cycle, regs in steps])
    sc["delay-cut-paced"]["expect_commit_cycles"] = [cycle for cycle, _ in steps]

    # Frames whose last beat lands on the commit cycle C itself and on either side: frames up to
    # C keep the old rate, frames after it get the new one. The bench writes the 20 profile words
    # and then COMMIT one per cycle, so a commit planned at `at` strobes at C = at + 21.
    f = 1_000_000
    b0 = channel_registers(f_clk=f, rate_bps=10_000_000, delay_s=Fraction(1, 100), min_len=8,
                           mem_size=MEM_WORDS, seed=4)
    b1 = replace(b0, rate_q=8, rate_num=0, rate_den=1)           # 1 Mbit/s
    at = 20_000
    c = at + sum(fl.words for fl in CFG_FIELDS) + 1
    boundary = [[c + k, 8, 0] for k in range(-2, 3)]
    frames = traffic(19, 60, rate_bps=10_000_000, f_clk=f, load=0.5, start=2000)
    frames = [fr for fr in frames if fr[0] < c - 2000] + boundary + \
        traffic(20, 60, rate_bps=1_000_000, f_clk=f, load=0.5, start=c + 2000)
    sc["commit-boundary"] = scenario(
        "frames arriving at the commit cycle and around it", f_clk=f, regs=b0, tb_seed=10,
        frames=frames, commits=[{"at": at, "regs": b1}])
    sc["commit-boundary"]["expect_commit_cycle"] = c
    sc["commit-boundary"]["expect_arrivals"] = [fr[0] for fr in boundary]

    # Resource boundaries, hit on the exact cycle. 8-byte frames at 4 cycles per byte depart 32
    # cycles after arriving into an empty queue (limit 1 frame), and start egress 3000 cycles
    # later; the region holds two such frames. Per block: f0 at B; f1 at B+32, the cycle f0
    # departs, finds it still queued (drop); f2 at B+33 is admitted; f3 at B+3032, the cycle f0
    # starts egress, finds the region full (drop); f4 at B+3033 fits.
    f = 1_000_000
    edge = replace(channel_registers(f_clk=f, min_len=8, queue_frames=1, mem_size=4, seed=1),
                   rate_q=4, delay=3000)
    frames = []
    for block in range(12):
        b = 3000 + 7919 * block
        frames += [[b, 8, 0], [b + 32, 8, 0], [b + 33, 8, 0], [b + 3032, 8, 0], [b + 3033, 8, 0]]
    sc["boundaries"] = scenario("queue and memory freed exactly at their cycles", f_clk=f,
                                regs=edge, tb_seed=13, frames=frames)
    sc["boundaries"]["expect_fates"] = [0, 5, 0, 6, 0] * 12
    # ... with a frame log of 32 records, which its 60 decided and 36 sent records wrap thrice.
    sc["boundaries"]["log"] = {"base": 1 << 20, "bits": 5}

    # A channel that holds its queue's departure times on chip as distances (the Versa-5G's
    # return channel; satemu_gw.depdelta): ACK-sized frames at 3x the link rate build a queue
    # past 1024 frames, which an idle stretch drains, so that the queue empties and starts again
    # from a departure taken whole; timeline steps change the rate (down while the queue grows,
    # up after the idle stretch), cut the delay while hundreds of frames are queued, raise it
    # and cut the queue.
    f = 1_000_000
    deep = replace(SCENARIO_PARAMS, queue_depth=2048, queue_fifo=0, delta_queue=2048)
    q0 = channel_registers(f_clk=f, rate_bps=2_000_000, overhead=24, delay_s=Fraction(5, 100),
                           queue_frames=2000, mem_size=MEM_WORDS, seed=8)
    slow = channel_registers(f_clk=f, rate_bps=1_600_000)
    fast = channel_registers(f_clk=f, rate_bps=3_000_000)
    q1 = replace(q0, rate_q=slow.rate_q, rate_num=slow.rate_num, rate_den=slow.rate_den)
    q2 = replace(q1, delay=20_000)
    q3 = replace(q2, delay=60_000, rate_q=fast.rate_q, rate_num=fast.rate_num,
                 rate_den=fast.rate_den)
    q4 = replace(q3, queue_frames=8)
    steps = [(150_000, q1), (400_000, q2), (950_000, q3), (1_050_000, q4)]
    acks = dict(rate_bps=2_000_000, f_clk=f, lengths=(60, 100), p_small=0.5, p_full=0.2)
    sc["delta-deep-steps"] = scenario(
        "a queue of departure distances past 1024 frames, emptied and refilled, across rate, "
        "delay and queue steps", f_clk=f, regs=q0, params=deep, tb_seed=15, mem=HOSTILE_MEM,
        frames=traffic(41, 1800, load=3.0, **acks)
        + traffic(42, 800, load=0.9, start=900_000, p_idle=0.02, idle_cycles=(5_000, 30_000),
                  p_burst=0.05, burst=(10, 40), **acks),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs} for cycle, regs in steps],
        expect={"deep": "summary['counters']['queue_frames_hwm'] > 1024",
                "the queue cut": "summary['counters']['drop_queue'] > 0"})
    sc["delta-deep-steps"]["expect_commit_cycles"] = [cycle for cycle, _ in steps]

    # Jitter, order kept (satemu_gw.jitter): a normal table in bank 0 and a Pareto one in bank 1.
    # 10 Mbit/s, 50 ms +- 10 ms normal with 1% loss and a 60-frame queue at 1.2x load; steps
    # then switch to bank 1 at 30 ms with 50% correlation and a reseed, cut the delay to 5 ms
    # with 5 ms of jitter (about a sixth of the frames would fall below the latency floor, and
    # wait for it), and turn jitter off. Frames leave in order: one whose jitter is smaller than
    # the frame ahead's waits for it. Jitter makes frames fall due together as a delay cut does,
    # so the hostile memory is paced as a board's is (mem_pace, "delay-cut-paced" above).
    f = 1_000_000
    banks = (distributions.table("normal"), distributions.table("pareto"))
    j0 = replace(channel_registers(f_clk=f, rate_bps=10_000_000, overhead=24,
                                   delay_s=Fraction(5, 100), queue_frames=60, loss=0.01,
                                   mem_size=MEM_WORDS, seed=21), jit_sigma=10_000)
    j1 = replace(j0, jit_sigma=30_000, jit_corr=1 << 15, jit_bank=1)
    j2 = replace(j1, delay=5_000, jit_sigma=5_000, jit_bank=0, jit_corr=0)
    j3 = replace(j2, jit_sigma=0)
    steps = [(150_000, j1, True), (300_000, j2, False), (420_000, j3, False)]
    sc["jitter-keep-steps"] = scenario(
        "jitter in order: normal and Pareto banks, correlation, a reseed, the latency floor, "
        "off", f_clk=f, regs=j0, params=replace(SCENARIO_PARAMS, mem_pace=4), tb_seed=23,
        mem=HOSTILE_MEM, jitter=banks,
        frames=traffic(43, 900, rate_bps=10_000_000, f_clk=f, load=1.2, p_burst=0.05,
                       p_runt=0.01),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs, "reseed": reseed}
                 for cycle, regs, reseed in steps])
    sc["jitter-keep-steps"]["expect_commit_cycles"] = [cycle for cycle, _, _ in steps]

    # Unshaped at 75 MHz, frames close to back to back: 1 ms +- 0.5 ms uniform, 90% correlated;
    # the draws keep up with the admission engine's pace. The frames that fall due together
    # leave at the port's 8 bytes a cycle, which this memory keeps up with (as the simulated
    # board's does).
    f = 75_000_000
    u = replace(channel_registers(f_clk=f, delay_s=Fraction(1, 1000), mem_size=MEM_WORDS,
                                  seed=22), jit_sigma=37_500, jit_corr=58_982)
    sc["jitter-unshaped"] = scenario(
        "unshaped, uniform jitter, 90% correlated, frames near back to back", f_clk=f, regs=u,
        tb_seed=24, beat_gap=0.5, jitter=(distributions.table("uniform"),
                                          distributions.table("paretonormal")),
        frames=traffic(44, 1200, rate_bps=None, f_clk=f, load=0.25, p_runt=0.02, p_err=0.02,
                       p_burst=0.05, burst=(2, 10)),
        mem={"cmd_ready": 1.0, "wdata_ready": 1.0, "lat_min": 4, "lat_max": 8})

    # Corruption (satemu_gw.corrupt): 5% of the admitted frames get a bit flipped as the writer
    # stores them, among runts, bad FCSs, 1% loss and queue drops; steps raise it to 50% with
    # 75% correlation and a reseed, then to every frame, then none.
    f = 1_000_000
    c0 = replace(channel_registers(f_clk=f, rate_bps=8_000_000, overhead=24,
                                   delay_s=Fraction(2, 100), queue_frames=40, loss=0.01,
                                   mem_size=MEM_WORDS, seed=31), cor_p=round(0.05 * 2**32))
    c1 = replace(c0, cor_p=1 << 31, cor_corr=49_152)
    c2 = replace(c1, cor_p=(1 << 32) - 1, cor_corr=0)
    c3 = replace(c2, cor_p=0)
    steps = [(100_000, c1, True), (200_000, c2, False), (300_000, c3, False)]
    sc["corrupt-steps"] = scenario(
        "corruption: a bit of a share of frames flipped, correlated, every frame, none",
        f_clk=f, regs=c0, tb_seed=32, mem=HOSTILE_MEM,
        frames=traffic(45, 700, rate_bps=8_000_000, f_clk=f, load=0.9, p_burst=0.05,
                       p_runt=0.02, p_err=0.02),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs, "reseed": reseed}
                 for cycle, regs, reseed in steps],
        expect={"corrupted": "summary['counters']['corrupted'] > 100"})
    sc["corrupt-steps"]["expect_commit_cycles"] = [cycle for cycle, _, _ in steps]

    # Duplication (satemu_gw.duplicate): 5% of the frames that pass the checks are copied, the
    # copy a frame of its own behind its original (its own loss draw, queue check, shaping and
    # corruption), among runts, bad FCSs, 2% loss, 3% corruption and queue drops; steps raise
    # it to 50% with 75% correlation and a reseed, then to every frame, then none.
    f = 1_000_000
    d0 = replace(channel_registers(f_clk=f, rate_bps=8_000_000, overhead=24,
                                   delay_s=Fraction(2, 100), queue_frames=40, loss=0.02,
                                   mem_size=MEM_WORDS, seed=33),
                 dup_p=round(0.05 * 2**32), cor_p=round(0.03 * 2**32))
    d1 = replace(d0, dup_p=1 << 31, dup_corr=49_152)
    d2 = replace(d1, dup_p=(1 << 32) - 1, dup_corr=0)
    d3 = replace(d2, dup_p=0)
    steps = [(100_000, d1, True), (200_000, d2, False), (300_000, d3, False)]
    sc["duplicate-steps"] = scenario(
        "duplication: a share of frames copied, correlated, every frame, none",
        f_clk=f, regs=d0, tb_seed=34, mem=HOSTILE_MEM,
        frames=traffic(46, 700, rate_bps=8_000_000, f_clk=f, load=0.7, p_burst=0.05,
                       p_runt=0.02, p_err=0.02),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs, "reseed": reseed}
                 for cycle, regs, reseed in steps],
        expect={"duplicated": "summary['counters']['duplicated'] > 150",
                "queue drops": "summary['counters']['drop_queue'] > 0"})
    sc["duplicate-steps"]["expect_commit_cycles"] = [cycle for cycle, _, _ in steps]

    # ECN marking (satemu_gw.ecnparse, ecnmark): IPv4 and IPv6 packets of every ECN field,
    # tagged and not, among other frames, runts and bad FCSs, overloading a 10 Mbit/s queue;
    # ECN-capable ones marked CE from 2 ms in the bottleneck, then (a step) from 12 frames
    # queued ahead, then both with 5% corruption and 10% duplication, then neither.
    f = 1_000_000
    e0 = replace(channel_registers(f_clk=f, rate_bps=10_000_000, overhead=24,
                                   delay_s=Fraction(5, 1000), queue_frames=60,
                                   mem_size=MEM_WORDS, seed=35), ecn_sojourn=2000)
    e1 = replace(e0, ecn_sojourn=0, ecn_queue=12)
    e2 = replace(e0, ecn_queue=12, cor_p=round(0.05 * 2**32), dup_p=round(0.1 * 2**32))
    e3 = replace(e2, ecn_sojourn=0, ecn_queue=0)
    steps = [(80_000, e1, False), (160_000, e2, False), (240_000, e3, False)]
    sc["ecn-steps"] = scenario(
        "ECN marking: CE by sojourn time, by queue length, both, none", f_clk=f, regs=e0,
        tb_seed=36, mem=HOSTILE_MEM,
        frames=traffic(47, 800, rate_bps=10_000_000, f_clk=f, load=1.3, p_burst=0.1,
                       p_runt=0.02, p_err=0.02),
        commits=[{"at": cycle - 20_000, "cycle": cycle, "regs": regs, "reseed": reseed}
                 for cycle, regs, reseed in steps],
        expect={"marked": "summary['counters']['ce_marked'] > 100",
                "queue drops": "summary['counters']['drop_queue'] > 0"})
    sc["ecn-steps"]["ip"] = True
    sc["ecn-steps"]["expect_commit_cycles"] = [cycle for cycle, _, _ in steps]

    # A stalling egress sink: frames may only leave late, each late start is counted, and no
    # frame is lost, duplicated or corrupted.
    f = 10_000_000
    regs = channel_registers(f_clk=f, rate_bps=50_000_000, delay_s=Fraction(1, 1000),
                             mem_size=MEM_WORDS, queue_frames=64, seed=2)
    sc["sink-backpressure"] = scenario(
        "egress sink ready 50% of cycles", f_clk=f, regs=regs, tb_seed=6, sink_ready=0.5,
        mem=HOSTILE_MEM, frames=traffic(18, 600, rate_bps=50_000_000, f_clk=f, load=1.5,
                                        p_burst=0.1))
    return sc
