#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the two scenario presets on the model engine, with --jobs.

Runs `satemu experiment shared-return` (6 runs) and `satemu experiment satcom-objects` (40
runs) with `--jobs N --force` into build/bench-scenarios/, and writes
bench/results/scenario-presets.json: each preset's wall time, the machine's cores, and each
run's figures (results.csv); for shared-return, what the varying terminal's ACKs cost the
others (report.md's second table, from each run's result.json).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "host"))

from satemu.report.flows import first_against_others   # noqa: E402


def run(kind: str, jobs: int) -> dict:
    out = ROOT / "build" / "bench-scenarios" / kind
    cmd = [str(ROOT / ".venv" / "bin" / "satemu"), "experiment", kind, "--jobs", str(jobs),
           "--force", "--out", str(out)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"{kind}: {done.stderr[-2000:]}")
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    keep = ("overrides", "completed", "flows_completed", "goodput_mbps_mean", "goodput_jain",
            "slots_granted_jain", "return_bytes", "return_packets", "virtual_s", "wall_s")
    runs = []
    for r in rows:
        entry = {k: r[k] for k in keep}
        s = json.loads((out / r["run_dir"] / "result.json").read_text())
        entry["flows"] = {f["name"]: {"completion_s": f["completion_s"],
                                      "goodput_mbps": f["goodput_mbps"],
                                      "return_packets": f["return_packets"]}
                          for f in s["flows"]}
        if len(s["flows"]) > 1:
            entry["first_against_others"] = first_against_others(s)
        runs.append(entry)
    return {"preset": kind, "runs_count": len(rows), "wall_s": round(wall, 1), "runs": runs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    presets = [run(kind, args.jobs) for kind in ("shared-return", "satcom-objects")]
    result = {"benchmark": "scenario-presets", "engine": "model", "jobs": args.jobs,
              "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "presets": presets}
    out = ROOT / "bench" / "results" / "scenario-presets.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for p in presets:
        print(f"{p['preset']}: {p['runs_count']} runs in {p['wall_s']} s with --jobs {args.jobs}")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
