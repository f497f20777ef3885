#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: cycles per minimum-size frame through one channel, no shaping and no delay.

Offers 60-byte frames back to back at one beat per cycle (saturation) to the Verilator model,
with a memory that is always ready and answers reads after a fixed latency, and measures the
steady-state cycles per frame at ingress and at egress. Writes bench/results/channel.json.
Line rate for 64-byte frames at 1 GbE is 1.488 Mpps per port: 50.4 cycles per frame at 75 MHz.
"""

import json
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.run import run_scenario               # noqa: E402
from sim.traffic import scenario               # noqa: E402
from satemu.channel_model import channel_registers  # noqa: E402

F_CLK = 75_000_000
LINE_PPS = 1_488_095


def measure(latency: int, n: int = 3000, length: int = 60, delay_s=0) -> dict:
    regs = channel_registers(f_clk=F_CLK, mem_size=1 << 20, delay_s=delay_s)
    frames = [[0, length, 0] for _ in range(n)]
    sc = scenario(f"min-frames-lat{latency}-delay{regs.delay}", f_clk=F_CLK, regs=regs, frames=frames,
                  mem={"cmd_ready": 1.0, "wdata_ready": 1.0, "lat_min": latency, "lat_max": latency})
    s = run_scenario(sc, ROOT / "build" / "bench" / sc["name"])
    if s["errors"] or s["failed"]:
        raise SystemExit("benchmark run disagrees with the model:\n" + "\n".join(s["errors"][:10]))
    arr, egr = s["arrivals"], s["egress"]
    k = n // 10                               # skip the start-up transient
    per_in = (arr[-1] - arr[k]) / (n - 1 - k)
    per_out = (egr[-1] - egr[k]) / (len(egr) - 1 - k)
    per = max(per_in, per_out)
    return {
        "memory_read_latency_cycles": latency,
        "delay_cycles": regs.delay,
        "frame_bytes": length,
        "frames": n,
        "cycles_per_frame_ingress": round(per_in, 3),
        "cycles_per_frame_egress": round(per_out, 3),
        "cycles_per_frame": round(per, 3),
        "latency_cycles_arrival_to_egress": egr[k] - arr[k],
        "mpps_at_75MHz": round(F_CLK / per / 1e6, 3),
        "share_of_1GbE_line_rate": round(F_CLK / per / LINE_PPS, 3),
        "share_of_2x_1GbE_line_rate": round(F_CLK / per / (2 * LINE_PPS), 3),
        "memory_words_per_frame": round((s["mem_reads"] + s["mem_writes"]) / n, 3),
        "wall_s": round(s["wall_s"], 1),
        "sim_cycles_per_s": round(s["counters"]["snapshot_cycle"] / s["wall_s"]),
    }


def main():
    results = {"benchmark": "channel-min-frame", "f_clk_reference": F_CLK,
               "line_rate_cycles_per_frame_75MHz": round(F_CLK / LINE_PPS, 2),
               "date": time.strftime("%Y-%m-%d"), "runs": [measure(lat) for lat in (4, 16, 32)]
               # 1 ms of delay holds ~3900 frames: far more than the reader's length ring.
               + [measure(lat, n=8000, delay_s=Fraction(1, 1000)) for lat in (16, 32)]}
    out = ROOT / "bench" / "results" / "channel.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    for r in results["runs"]:
        print(f"delay {r['delay_cycles']:>6} cycles, read latency {r['memory_read_latency_cycles']:>3}: {r['cycles_per_frame']:6.2f} cycles/frame "
              f"({r['mpps_at_75MHz']} Mpps at 75 MHz, {r['share_of_1GbE_line_rate']}x 1GbE line rate), "
              f"latency {r['latency_cycles_arrival_to_egress']} cycles")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
