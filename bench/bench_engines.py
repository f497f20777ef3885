#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the model engine's 10 MB geo-testbed download on one core, against the board's.

Runs the download with ACK 1:2 and 1:10 on the model engine, pinned to one core, and writes
bench/results/engines.json with each run's wall time, link time and simulated cycles per wall
second. With ``--board`` (as `make bench` runs it) the same transfers then run on the simulated
board, for its figures, and each pair is compared frame for frame
(satemu.quic.cosim.differences): the bench fails if they differ.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from satemu.quic.cosim import differences  # noqa: E402
from satemu.quic.engine import run_model_transfer  # noqa: E402
from satemu.report.metrics import summarize  # noqa: E402

PROFILE, SIZE, POLICIES, SEED = "geo-testbed", 10_000_000, ("ratio:2", "ratio:10"), 0
GOAL_S = 15.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", action="store_true",
                    help="also run the transfers on the simulated board and compare (slow)")
    args = ap.parse_args()
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})          # the model engine on one core
    results, models, failed = [], {}, False
    for ack in POLICIES:
        t0 = time.monotonic()
        t = run_model_transfer(PROFILE, SIZE, ack=ack, seed=SEED)
        wall = time.monotonic() - t0
        s = summarize(t)
        models[ack] = t
        results.append({"ack": ack, "completed": t.completed, "completion_s": s["completion_s"],
                        "return_packets": s["return_packets"], "return_bytes": s["return_bytes"],
                        "virtual_s": round(t.virtual_s, 6), "model_wall_s": round(wall, 2),
                        "model_cycles_per_wall_s": round(t.virtual_s * t.f_clk / wall)})
    os.sched_setaffinity(0, cores)
    board_runs, source = {}, None
    if args.board:                     # after the model's runs, so that they had a core each
        from sim import board
        from sim.engine import run_transfer
        source = "measured here on the simulated board"
        state = board.launch()
        try:
            for row in results:
                b = run_transfer(state["url"], state["eth_port"], PROFILE, SIZE,
                                 ack=row["ack"], seed=SEED)
                diff = differences(b, models[row["ack"]])
                failed |= bool(diff)
                row["equal_to_board"] = not diff
                board_runs[row["ack"]] = {
                    "wall_s": b.wall_s,
                    "cycles_per_wall_s": round(b.virtual_s * b.f_clk / b.wall_s)}
        finally:
            board.kill(state)
    for row in results:
        if row["ack"] in board_runs:
            bw = board_runs[row["ack"]]["wall_s"]
            row["board_wall_s"] = round(bw, 1)
            row["board_cycles_per_wall_s"] = board_runs[row["ack"]]["cycles_per_wall_s"]
            row["speedup"] = round(bw / row["model_wall_s"], 1)
        print(f"model engine, {PROFILE} 10 MB, ACK {row['ack']}: {row['model_wall_s']:.2f} s of "
              f"wall time for {row['virtual_s']:.3f} s of link time"
              + (f", {row['speedup']}x the board's {row['board_wall_s']} s"
                 if "speedup" in row else "")
              + ("" if "equal_to_board" not in row else
                 ", equal to the board's run" if row["equal_to_board"] else ", NOT EQUAL"))
    out = ROOT / "bench" / "results" / "engines.json"
    out.write_text(json.dumps({
        "benchmark": "model-engine", "date": time.strftime("%Y-%m-%d"), "profile": PROFILE,
        "size": SIZE, "seed": SEED, "goal_wall_s": GOAL_S, "cores": 1,
        "board_figures_from": source, "runs": results,
        "goal_met": all(r["model_wall_s"] <= GOAL_S for r in results)}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
