#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: the constrained-return-link preset on the model engine, with --jobs.

Runs `satemu experiment constrained-return --jobs N --force` (40 downloads of 10 MB: five return
rates x ACK 1:2 and 1:10 x Reno and BBR x 1280 and 1352 B datagrams; satemu.sweep.PRESETS) into
build/bench-preset/, and writes bench/results/constrained-return.json: the wall time, the
machine's cores, and each point's completion time, goodput and return packets per second.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    out = ROOT / "build" / "bench-preset"
    cmd = [str(ROOT / ".venv" / "bin" / "satemu"), "experiment", "constrained-return",
           "--jobs", str(args.jobs), "--force", "--out", str(out)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        return 1
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    keep = ("return.rate", "ack", "cc", "stacks", "max_datagram", "completion_s",
            "goodput_mbps", "return_packets", "return_bytes", "return_pps", "wall_s")
    result = {
        "command": " ".join(["satemu"] + cmd[1:-2] + ["--out", "OUT"]),
        "engine": "model", "jobs": args.jobs, "cores": os.cpu_count(), "points": len(rows),
        "wall_s": round(wall, 1),
        "rows": [{k: r[k] for k in keep} for r in rows],
    }
    path = ROOT / "bench" / "results" / "constrained-return.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(rows)} points in {wall:.1f} s with --jobs {args.jobs}; wrote "
          f"{path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
