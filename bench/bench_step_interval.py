#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the shortest interval between timeline steps that a board's firmware stages in
time, on that board's variant of the simulated board (its clock and its CPU).

The firmware stages each step after the one before it has taken effect: it writes the step's
registers over the profile in force, checks that profile and commits it named for the step's
cycle (docs/architecture.md, "Timelines"). A step it has not staged by its cycle takes effect
late, and TIMELINE_STATUS counts it. For each interval this loads a timeline of STEPS steps,
each changing both channels' rates (so each is checked on both), waits for the run to finish
and reads how many were late. Writes bench/results/step-interval-<board>.json.

    python bench/bench_step_interval.py --board versa-ecp5
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from satemu.base.boards import BOARDS  # noqa: E402
from satemu.cli import main as cli  # noqa: E402
from satemu.box.device import Device  # noqa: E402
from satemu.base.protocol import TimelineRun  # noqa: E402
from sim import board  # noqa: E402
from sim.datapath import FW_TIMEOUT  # noqa: E402

STEPS = 6
INTERVALS_MS = (10, 25, 50, 100)
LEAD_S = "0.2"


def profile(interval_ms: int) -> str:
    text = ('name = "steps"\n[forward]\nrate = "20 Mbit/s"\ndelay = "20 ms"\n'
            '[return]\nrate = "5 Mbit/s"\ndelay = "20 ms"\n')
    for k in range(STEPS):
        fwd, ret = (10, 2) if k % 2 == 0 else (20, 5)
        text += (f'[[timeline]]\nat = "{k * interval_ms} ms"\n'
                 f'forward = {{ rate = "{fwd} Mbit/s" }}\nreturn = {{ rate = "{ret} Mbit/s" }}\n')
    return text


def run_interval(url: str, interval_ms: int, workdir: Path) -> dict:
    path = workdir / f"steps-{interval_ms}ms.toml"
    path.write_text(profile(interval_ms))
    assert cli(["load", str(path), "--port", url, "--start-in", LEAD_S,
                "--timeout", str(FW_TIMEOUT)]) == 0
    with Device(url, timeout=FW_TIMEOUT) as dev:
        dev.hello()
        while True:
            state = dev.timeline_status()
            if state["state"] != TimelineRun.RUNNING:
                break
            time.sleep(1)
    return {"interval_ms": interval_ms, "steps": STEPS, "state": TimelineRun(state["state"]).name,
            "applied": state["applied"], "late": state["late"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", default="versa-ecp5", choices=sorted(BOARDS))
    args = ap.parse_args()
    started = time.monotonic()
    state = board.launch(board=args.board)
    points = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for interval in INTERVALS_MS:
                points.append(run_interval(state["url"], interval, Path(tmp)))
                print(json.dumps(points[-1]), flush=True)
    finally:
        board.kill(state)
    on_time = [p["interval_ms"] for p in points if p["state"] == "DONE" and p["late"] == 0]
    result = {
        "benchmark": "timeline-step-interval", "date": time.strftime("%Y-%m-%d"),
        "board": args.board, "cpu": BOARDS[args.board].cpu.type,
        "f_clk_hz": BOARDS[args.board].f_clk, "points": points,
        "shortest_interval_on_time_ms": min(on_time) if on_time else None,
        "note": f"{STEPS} steps, each changing both channels' rates; the board's variant of "
                "the simulated board, its CPU and clock",
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    out = ROOT / "bench" / "results" / f"step-interval-{args.board}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"shortest interval with every step on time: {result['shortest_interval_on_time_ms']} ms"
          f"; {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
