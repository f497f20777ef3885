#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: how fast the simulated board runs, in system-clock cycles per wall second.

Starts a board of its own, reads the channel's snapshot cycle counter through the firmware at
intervals, and divides cycles by wall time; also times protocol round trips. Writes
bench/results/board.json.
"""

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from satemu.base import protocol as P  # noqa: E402
from satemu.box.device import Device  # noqa: E402
from sim import board  # noqa: E402


# The figure before the simulated board's speed work (bench/results/board-profile.json): LiteEth's
# FCS engines and LiteDRAM's controller and SDRAM model in the simulated board.
BEFORE = {
    "cycles_per_wall_second": 305855, "real_time_factor": 0.0489,
    "hello_round_trip_ms_median": 50.33, "date": "2026-11-23",
    "description": "before the table FCS (hw.simcrc) and the behavioural delay-line memory "
                   "(hw.simmem): the same benchmark on the board as of commit 2c94eab",
}


def main():
    state = board.launch()
    try:
        with Device(state["url"]) as dev:
            info = dev.hello()
            samples = []
            for _ in range(6):
                t = time.monotonic()
                cycle = dev.get_stats(P.CHANNEL_FORWARD)["snapshot_cycle"]
                samples.append((t, cycle))
                time.sleep(2)
            rtts = []
            for _ in range(20):
                t = time.monotonic()
                dev.hello()
                rtts.append(time.monotonic() - t)
    finally:
        board.kill(state)
    (t0, c0), (t1, c1) = samples[0], samples[-1]
    rate = (c1 - c0) / (t1 - t0)
    result = {
        "benchmark": "simulated-board-speed", "date": time.strftime("%Y-%m-%d"),
        "f_clk_nominal_hz": info["f_clk"],
        "cycles_per_wall_second": round(rate),
        "real_time_factor": round(rate / info["f_clk"], 4),
        "hello_round_trip_ms_median": round(sorted(rtts)[len(rtts) // 2] * 1e3, 2),
        "note": "idle channels, firmware polling the UART; Verilator -O3, C++ -O3, one thread",
        "before": BEFORE,
    }
    out = ROOT / "bench" / "results" / "board.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"simulated board: {rate / 1e6:.2f} M cycles per wall second (before: "
          f"{BEFORE['cycles_per_wall_second'] / 1e6:.2f} M) "
          f"({rate / info['f_clk']:.3f}x real time at {info['f_clk'] / 1e6:g} MHz), "
          f"HELLO round trip {result['hello_round_trip_ms_median']} ms")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
