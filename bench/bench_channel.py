#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: cycles per frame through one channel, no shaping (and no delay, or 1 ms).

Offers 60-byte frames back to back at one beat per cycle (saturation) to the Verilator model,
with a memory that is always ready and answers reads after a fixed latency, and measures the
steady-state cycles per frame at ingress and at egress; then 1518-byte frames at GbE pacing and
at saturation, recording whether every frame kept its exact schedule. Writes
bench/results/channel.json.
Line rate for 64-byte frames at 1 GbE is 1.488 Mpps per port: 50.4 cycles per frame at 75 MHz.
"""

import json
import sys
import time
from dataclasses import asdict
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.run import run_scenario               # noqa: E402
from satemu.base.params import ChannelParams  # noqa: E402
from sim.traffic import scenario               # noqa: E402
from satemu.link.registers import channel_registers  # noqa: E402

F_CLK = 75_000_000
# The channel alone: no frame log, every departure time on chip (the cocotb scenarios' own
# parameters, sim.traffic.SCENARIO_PARAMS, add both, and with them memory words per frame).
PARAMS = ChannelParams()


def line_pps(length: int) -> float:
    """Frames per second on a 1 Gbit/s Ethernet wire, for frames of ``length`` bytes without FCS."""
    return 1e9 / ((length + 24) * 8)


def measure(latency: int, n: int = 3000, length: int = 60, delay_s=0, beat_gap: float = 0.0,
            expect_exact: bool = True) -> dict:
    regs = channel_registers(f_clk=F_CLK, mem_size=1 << 20, delay_s=delay_s)
    frames = [[0, length, 0] for _ in range(n)]
    sc = scenario(f"frames{length}-lat{latency}-delay{regs.delay}-gap{beat_gap}", f_clk=F_CLK,
                  regs=regs, frames=frames, beat_gap=beat_gap, params=PARAMS,
                  mem={"cmd_ready": 1.0, "wdata_ready": 1.0, "lat_min": latency, "lat_max": latency})
    s = run_scenario(sc, ROOT / "build" / "bench" / sc["name"])
    if expect_exact and (s["errors"] or s["failed"]):
        raise SystemExit("benchmark run disagrees with the model:\n" + "\n".join(s["errors"][:10]))
    arr, egr = s["arrivals"], s["egress"]
    k = n // 10                               # skip the start-up transient
    per_in = (arr[-1] - arr[k]) / (n - 1 - k)
    per_out = (egr[-1] - egr[k]) / (len(egr) - 1 - k)
    per = max(per_in, per_out)
    return {
        "memory_read_latency_cycles": latency,
        "delay_cycles": regs.delay,
        "offered_beats_per_cycle": round(1 - beat_gap, 3),
        "exact": not s["errors"] and not s["failed"],
        "late_frames": s["counters"]["late"],
        "frame_bytes": length,
        "frames": n,
        "cycles_per_frame_ingress": round(per_in, 3),
        "cycles_per_frame_egress": round(per_out, 3),
        "cycles_per_frame": round(per, 3),
        "latency_cycles_arrival_to_egress": egr[k] - arr[k],
        "max_latency_cycles": max(e - a for a, e in zip(arr, egr)),
        "mpps_at_75MHz": round(F_CLK / per / 1e6, 3),
        "gbps_at_75MHz": round(length * 8 * F_CLK / per / 1e9, 3),
        # A GbE port carries (length + 24) bytes per frame: preamble+SFD, FCS, inter-frame gap.
        "share_of_1GbE_line_rate": round(F_CLK / per / line_pps(length), 3),
        "share_of_2x_1GbE_line_rate": round(F_CLK / per / (2 * line_pps(length)), 3),
        "memory_words_per_frame": round((s["mem_reads"] + s["mem_writes"]) / n, 3),
        "wall_s": round(s["wall_s"], 1),
        "sim_cycles_per_s": round(s["counters"]["snapshot_cycle"] / s["wall_s"]),
    }


def main():
    results = {"benchmark": "channel-min-frame", "f_clk_reference": F_CLK,
               "line_rate_cycles_per_min_frame_75MHz": round(F_CLK / line_pps(60), 2),
               "date": time.strftime("%Y-%m-%d"), "params": asdict(PARAMS),
               "runs": [measure(lat) for lat in (4, 16, 32)]
               # 1 ms of delay holds ~3900 frames: far more than the reader's length ring.
               + [measure(lat, n=8000, delay_s=Fraction(1, 1000)) for lat in (16, 32)]
               # Longest frames: at GbE pacing (0.21 beats per cycle at 75 MHz) and at one beat
               # per cycle, 4.8 Gbit/s, more than one 64-bit port can write and read back.
               + [measure(16, n=400, length=1518, beat_gap=0.79),
                  measure(16, n=400, length=1518, expect_exact=False)]}
    out = ROOT / "bench" / "results" / "channel.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    for r in results["runs"]:
        print(f"{r['frame_bytes']:>4}-byte frames offered at {r['offered_beats_per_cycle']} beats/cycle, "
              f"delay {r['delay_cycles']:>6} cycles, read latency {r['memory_read_latency_cycles']:>3}: {r['cycles_per_frame']:6.2f} cycles/frame "
              f"({r['mpps_at_75MHz']} Mpps, {r['gbps_at_75MHz']} Gbit/s at 75 MHz: "
              f"{r['share_of_1GbE_line_rate']}x GbE line rate), "
              f"latency {r['latency_cycles_arrival_to_egress']} cycles, "
              f"{'exact' if r['exact'] else str(r['late_frames']) + ' frames late'}")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
