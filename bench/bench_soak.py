#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the soak, 10^6 frames of mixed traffic through one channel on the fast engine.

Runs ``sim.soak.run_soak`` (the profile and traffic are described there: 400 Mbit/s shaped at
75 MHz, 1 ms, 1% loss, a 30-frame queue, a delay line that overflows after bursts, at least 20%
minimum-size frames, runts, oversize and bad-FCS frames) through ``satemu.model.channel.Channel``,
which the RTL equals cycle for cycle (tests/gateware/test_channel.py runs the soak's first
frames through the RTL). It fails unless every frame is accounted for exactly (rx = tx + each
drop cause, every frame's fate against its counter) and the queue and memory gauges are back to
0 once the channel has drained. Writes bench/results/soak.json: frames, each cause's count,
the peaks, the wall and CPU time of the model's run (traffic generation left out) and frames per
second of each.
"""

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.soak import F_CLK, run_soak, soak_registers   # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "soak.json")
    args = ap.parse_args()
    r = run_soak(args.frames, args.seed)
    regs = soak_registers()
    result = {
        "benchmark": "soak",
        "date": datetime.date.today().isoformat(),
        "engine": "satemu.model.channel.Channel",
        "f_clk": F_CLK,
        "profile": {"rate_q": regs.rate_q, "rate_num": regs.rate_num, "rate_den": regs.rate_den,
                    "overhead": regs.overhead, "delay_cycles": regs.delay,
                    "loss_p": regs.loss_p, "queue_frames": regs.queue_frames,
                    "mem_size_words": regs.mem_size},
        "seed": args.seed,
        "frames": r["frames"],
        "min_size_frames": r["min_size_frames"],
        "min_size_share": round(r["min_size_frames"] / r["frames"], 4),
        "delivered": r["delivered"],
        "drops": r["drops"],
        "counters": r["counters"],
        "peaks": r["peaks"],
        "gauges_after_drain": r["gauges_after_drain"],
        "conservation_exact": True,      # run_soak raises otherwise
        "words_admitted": r["words_admitted"],
        "simulated_cycles": r["cycles"],
        "simulated_s": round(r["cycles"] / F_CLK, 3),
        "wall_s": r["wall_s"],
        "frames_per_s": r["frames_per_s"],
        "cpu_s": r["cpu_s"],
        "frames_per_cpu_s": r["frames_per_cpu_s"],
        "cores": os.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("frames", "delivered", "drops", "wall_s",
                                             "frames_per_s", "cpu_s", "frames_per_cpu_s")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
