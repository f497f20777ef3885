# SPDX-License-Identifier: BSD-2-Clause
"""The soak: a long run of mixed traffic through one channel, every frame accounted for.

One profile (:func:`soak_registers`: 400 Mbit/s shaped at a 75 MHz clock, 1 ms of delay, 1%
Bernoulli loss, a 30-frame queue and a delay line a little short of what bursts need) and one
traffic (:func:`soak_traffic`: 0.8 times the shaped rate, with bursts at the GbE line rate, at
least 20% minimum-size frames, a few runts, oversize and bad-FCS frames) that makes the channel
drop frames for every cause. A frame comes as a GbE port would bring it: its beats one a
cycle, its last beat (its arrival) at least a GbE wire time after the one before, so that the
ingress never has to wait and the arrivals are the ones the channel bench's source makes
(``arrival - beats + 1`` is when its first beat goes in).

:func:`run_soak` runs it through the fast engine (``satemu.model.channel.Channel``) and checks
conservation, frame by frame: every frame offered is delivered or dropped for exactly one cause,
and once the channel has drained the queue and memory gauges are back to 0.
``bench/bench_soak.py`` runs 10^6 frames; ``tests/host/test_soak.py`` a shorter run;
``tests/gateware/test_channel.py`` the first frames through the RTL, across the wraps of its
32-bit counts and 48-bit times (:func:`soak_scenario`).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from fractions import Fraction

from satemu.model.channel import Channel
from satemu.link.registers import channel_registers
from satemu.base.params import frame_beats, frame_words
from satemu.base.params import FATE_COUNTER, ChannelParams, ChannelRegs, Fate
from satemu.base.regmap import COUNTERS

F_CLK = 75_000_000
RATE_BPS = 400_000_000
GBE_BPS = 1_000_000_000
MIN_LEN, MAX_LEN = 60, 1518


def soak_registers() -> ChannelRegs:
    """The soak's profile: 400 Mbit/s (24 bytes of overhead a frame), 1 ms, 1% loss, a 30-frame
    queue, 9000 words of delay line (1 ms of full-size frames at 400 Mbit/s takes about 6400, a
    full queue of them 5800 more: after a burst, some frames find the line full)."""
    return channel_registers(f_clk=F_CLK, rate_bps=RATE_BPS, overhead=24,
                             delay_s=Fraction(1, 1000), queue_frames=30, loss=0.01, seed=2024,
                             min_len=MIN_LEN, max_len=MAX_LEN, mem_base=4096, mem_size=9000)


def soak_traffic(n: int, seed: int = 21, load: float = 0.8) -> list[tuple[int, int, int]]:
    """``n`` frames as (arrival cycle, length, error): 30% of 60 bytes, 30% of 1518, the rest
    uniform in between, with 1% runts, 0.5% oversize and 0.5% bad FCS; exponential spacing at
    ``load`` times the shaped rate, and 3% of frames starting a burst of 4 to 40 frames at the
    GbE line rate. No two arrivals are closer than a GbE wire time (preamble, FCS and gap
    included), nor than the frame's beats."""
    rng = random.Random(seed)
    out = []
    t = 2000                      # the earliest arrival: the bench configures the channel first
    last = -1
    burst = 0
    for _ in range(n):
        u = rng.random()
        if u < 0.01:
            length = rng.randint(1, MIN_LEN - 1)
        elif u < 0.015:
            length = rng.randint(MAX_LEN + 1, 2048)
        elif u < 0.315:
            length = MIN_LEN
        elif u < 0.615:
            length = MAX_LEN
        else:
            length = rng.randint(MIN_LEN, MAX_LEN)
        err = int(rng.random() < 0.005)
        wire = -(-(max(length, MIN_LEN) + 24) * 8 * F_CLK // GBE_BPS)    # GbE cycles, rounded up
        arrival = max(t, last + wire, last + frame_beats(length))
        out.append((arrival, length, err))
        last = arrival
        if burst:
            burst -= 1
        elif rng.random() < 0.03:
            burst = rng.randint(4, 40)
        else:
            mean = (length + 24) * 8 * F_CLK / (RATE_BPS * load)
            t = arrival + max(1, int(rng.expovariate(1 / mean)))
    return out


def run_soak(n: int, seed: int = 21, params: ChannelParams = ChannelParams()) -> dict:
    """Run ``n`` frames of :func:`soak_traffic` through the model; returns the figures (frames,
    each fate's count, the counters, the gauges' peaks, the model's wall and CPU time, frames per
    second, each frame's fate and egress cycle) and raises
    AssertionError if a frame is unaccounted for or a gauge is not 0 once the channel drained."""
    frames = soak_traffic(n, seed)
    t0, c0 = time.perf_counter(), time.process_time()
    channel = Channel(soak_registers(), params)
    fates = Counter()
    words = 0
    last_egress = 0
    for arrival, length, err in frames:
        r = channel.arrive(arrival, length, bool(err))
        fates[r.fate] += 1
        if r.fate is Fate.DELIVERED:
            words += frame_words(length)
            last_egress = max(last_egress, r.egress)
    result = channel.finish()
    levels = channel.levels(last_egress + 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0

    c = {name: value - params.counter_init for name, value in result.counters.items()}
    drops = {name: c[name] for name in COUNTERS if name.startswith("drop_")}
    assert c["rx_frames"] == n == sum(fates.values()), "a frame was not counted on arrival"
    assert c["rx_frames"] == c["tx_frames"] + sum(drops.values()), "conservation"
    assert c["tx_frames"] == fates[Fate.DELIVERED]
    for fate, name in FATE_COUNTER.items():
        assert c[name] == fates[fate], f"{name} differs from the frames' fates"
    assert c["rx_bytes"] == sum(min(length, 0xFFFF) for _, length, _ in frames)
    assert c["drop_overrun"] == c["late"] == 0
    assert levels == dict.fromkeys(levels, 0), f"gauges not back to 0: {levels}"
    return {
        "frames": n,
        "min_size_frames": sum(length == MIN_LEN for _, length, _ in frames),
        "delivered": c["tx_frames"],
        "drops": drops,
        "counters": c,
        "peaks": result.gauges,
        "gauges_after_drain": levels,
        "words_admitted": words,
        "cycles": frames[-1][0] - frames[0][0],
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),          # the process's own time: the machine may be shared
        "frames_per_s": round(n / wall),
        "frames_per_cpu_s": round(n / cpu),
        "fates": [int(r.fate) for r in result.frames],
        "egress": [r.egress for r in result.frames],
    }


def soak_scenario(n: int, params: ChannelParams) -> dict:
    """The first ``n`` frames of the soak as a channel-bench scenario (``sim.channel.bench``): each
    frame's first beat offered in cycle ``params.now_init + arrival - beats + 1`` (the bench's
    timebase starts at ``now_init``), a memory a little hostile."""
    from dataclasses import asdict
    t0 = params.now_init
    frames = [[t0 + arrival - max(1, frame_beats(length)) + 1, length, err]
              for arrival, length, err in soak_traffic(n)]
    return {
        "run_after": 0, "expect": {},
        "name": f"soak prefix, {n} frames", "f_clk": F_CLK, "params": asdict(params),
        "regs": asdict(soak_registers()), "frames": frames, "tb_seed": 17, "beat_gap": 0.0,
        "mem": {"cmd_ready": 0.9, "wdata_ready": 0.9, "lat_min": 4, "lat_max": 24},
        "sink_ready": 1.0, "commits": [],
    }
