#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: satemu's jitter against its declared distributions, and its order against netem's.

On the channel model (which the gateware equals draw for draw: tests/gateware/test_channel.py's
jitter scenarios, tests/system/test_engines.py's jitter case), with the simulated board's clock:

* **Distribution.** For each distribution and correlation, N frames far enough apart that none
  waits for another; each frame's jitter (egress - departure - delay) in sigmas against the
  declared distribution as its table holds it (netem's +-4 sigma range): the Kolmogorov-Smirnov
  statistic D and its critical value at ALPHA, the mean and sd, and the correlation of
  successive frames' jitter against the declared one.
* **Order.** netem's documented behaviour: jitter reorders packets unless a rate is set (one
  measurement: 65 inversions in 200 datagrams at 30 +- 15 ms). 200 datagrams of 1,200 bytes
  1 ms apart at 30 ms +- 15 ms normal: satemu's inversions (frames that leave before one sent
  ahead of them), the frames held back by the frame ahead, and the inversions the same draws
  would make if frames could overtake (netem's free order).

Writes bench/results/jitter.json and jitter.md.
"""

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "host"))

from satemu.base import distributions as D                      # noqa: E402
from satemu.base.boards import BOARDS                             # noqa: E402
from satemu.base.params import ChannelRegs, Fate                 # noqa: E402
from satemu.model.channel import simulate                        # noqa: E402
from satemu.model.jitter import Jitter                           # noqa: E402

ALPHA = 0.001
BOARD = BOARDS["sim"]
F_CLK = BOARD.f_clk


def distribution(name: str, corr: float, n: int) -> dict:
    """N spaced frames through a channel with 10 ms of jitter (sigma) on a 100 ms delay."""
    sigma = F_CLK // 100
    delay = F_CLK // 10
    regs = ChannelRegs(delay=delay, mem_size=BOARD.hardware.mem_words, jit_sigma=sigma,
                       jit_corr=round(corr * 65536), seed=7)
    table = D.table(name)
    frames = [(1000 + 3 * delay * i, 100, 0) for i in range(n)]
    params = BOARD.channel_params(0)
    result = simulate(frames, regs, params, jitter=(table, table))
    # A frame's jitter is floor(entry x sigma / 8192) cycles, so its entry / 8192 lies in
    # [J, J + 1) / sigma: (J + 1) / sigma is within a cycle above it and below the next entry.
    x = np.array([(r.egress - r.departure - delay + 1) / sigma for r in result.frames])
    d = D.ks_statistic(x, lambda v: D.cdf_array(name, v, clipped=True))
    n_eff = int(n * (1 - corr) / (1 + corr))         # repeats shrink the sample's information
    stats = D.table_stats(table)
    return {"distribution": name, "correlation": corr, "frames": n,
            "ks_d": round(d, 5), "ks_critical": round(D.ks_critical(n_eff, ALPHA), 5),
            "passes": bool(d < D.ks_critical(n_eff, ALPHA)),
            "mean": round(float(x.mean()), 4), "sd": round(float(x.std()), 4),
            "table_mean": round(stats["mean"], 4), "table_sd": round(stats["sd"], 4),
            "lag1": round(float(np.corrcoef(x[:-1], x[1:])[0, 1]), 4)}


def inversions(order: list[int]) -> int:
    """Frames that leave before a frame sent ahead of them (each counted once)."""
    out, latest = 0, -1
    for index in order:
        if index < latest:
            out += 1
        latest = max(latest, index)
    return out


def order(seeds: range) -> dict:
    """200 datagrams 1 ms apart at 30 ms +- 15 ms normal, unshaped, per seed."""
    table = D.table("normal")
    runs = []
    for seed in seeds:
        regs = ChannelRegs(delay=round(0.030 * F_CLK), mem_size=BOARD.hardware.mem_words,
                           jit_sigma=round(0.015 * F_CLK), seed=seed)
        frames = [(1000 + i * F_CLK // 1000, 1200, 0) for i in range(200)]
        result = simulate(frames, regs, BOARD.channel_params(0), jitter=(table, table))
        assert all(r.fate is Fate.DELIVERED for r in result.frames)
        egress = [r.egress for r in result.frames]
        # Each frame's own schedule (departure + its own delay), as if it could overtake.
        floor = BOARD.channel.latency_floor
        own = []
        jitter = Jitter(seed, (table, table))
        for r in result.frames:
            own.append(r.departure + max(regs.delay + jitter.draw(regs), floor))
        held = sum(e > o for e, o in zip(egress, own))
        free = inversions(sorted(range(200), key=lambda i: (own[i], i)))
        runs.append({"seed": seed, "inversions": inversions(sorted(range(200),
                                                                   key=lambda i: egress[i])),
                     "held_back": held, "free_order_inversions": free})
    return {"datagrams": 200, "spacing_ms": 1, "delay_ms": 30, "jitter_ms": 15,
            "distribution": "normal", "runs": runs,
            "netem_documented_inversions": 65}


def markdown(out: dict) -> str:
    lines = ["# Jitter: satemu against the declared distributions, and netem's order", "",
             f"From `bench/bench_jitter.py` on the channel model at {F_CLK / 1e6:g} MHz "
             f"(the gateware equals it draw for draw). KS at alpha = {ALPHA}, against the "
             "distribution as its table holds it (+-4 sigma, netem's range); sd and mean in "
             "sigmas.", "",
             "| distribution | correlation | frames | KS D | critical | passes | mean | sd "
             "| table sd | lag-1 corr. |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in out["distributions"]:
        lines.append(f"| {r['distribution']} | {r['correlation']:g} | {r['frames']} | "
                     f"{r['ks_d']} | {r['ks_critical']} | {'yes' if r['passes'] else 'NO'} | "
                     f"{r['mean']} | {r['sd']} | {r['table_sd']} | {r['lag1']} |")
    o = out["order"]
    lines += ["", f"Order: {o['datagrams']} datagrams {o['spacing_ms']} ms apart at "
              f"{o['delay_ms']} ms +- {o['jitter_ms']} ms {o['distribution']} (netem's "
              f"documented measurement: {o['netem_documented_inversions']} inversions in 200).",
              "", "| seed | satemu inversions | held back by the frame ahead | inversions if "
              "frames could overtake |", "|---|---|---|---|"]
    for r in o["runs"]:
        lines.append(f"| {r['seed']} | {r['inversions']} | {r['held_back']} | "
                     f"{r['free_order_inversions']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=20_000)
    args = ap.parse_args()
    out = {"f_clk": F_CLK, "alpha": ALPHA,
           "distributions": [distribution(name, corr, args.frames) for name in D.NAMES
                             for corr in (0.0, 0.25, 0.75)],
           "order": order(range(1, 6))}
    results = ROOT / "bench" / "results"
    (results / "jitter.json").write_text(json.dumps(out, indent=1) + "\n")
    (results / "jitter.md").write_text(markdown(out))
    print(markdown(out))
    bad = [r for r in out["distributions"] if not r["passes"]]
    if bad or any(r["inversions"] for r in out["order"]["runs"]):
        raise SystemExit("jitter bench: a distribution failed its test, or frames reordered")


if __name__ == "__main__":
    main()
