#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: what many flows in one scenario cost the model engine per delivered packet.

Runs, on the model engine across geo-testbed (8.5 / 1.5 Mbit/s, 300 ms), one flow downloading
SIZE and ten flows downloading SIZE / 10 each (the same bytes in all, aioquic, ACK 1:2), each
REPEAT times, and writes bench/results/flows.json: each run's wall time, the datagrams
delivered and the wall time a delivered datagram took (the fastest of the repeats), and the
ten flows' cost against the one flow's (issue 41 asks for ten flows within 20% of one).
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "host"))

from satemu.quic.scenario import parse_scenario, run_scenario   # noqa: E402


def _scenario(flows: int, size: int):
    text = 'name = "bench"\nprofile = "geo-testbed"\nseed = 1\n'
    for _ in range(flows):
        text += f'\n[[flow]]\nack = "ratio:2"\nworkload = {{kind = "bulk", size = {size}}}\n'
    return parse_scenario(text, "bench")


def measure(flows: int, size: int, repeat: int) -> dict:
    sc = _scenario(flows, size // flows)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        run = run_scenario("model", sc, max_seconds=300)
        wall = time.perf_counter() - t0
        if not all(f.done for f in run.flows):
            raise SystemExit(f"{flows} flows: not every flow completed")
        n = len(run.delivered)
        if best is None or wall < best["wall_s"]:
            best = {"flows": flows, "bytes_each": size // flows, "wall_s": round(wall, 3),
                    "delivered": n, "sent": len(run.sent),
                    "us_per_delivered": round(wall / n * 1e6, 2),
                    "virtual_s": round(run.virtual_s, 3)}
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    one = measure(1, args.size, args.repeat)
    ten = measure(10, args.size, args.repeat)
    ratio = ten["us_per_delivered"] / one["us_per_delivered"]
    result = {"benchmark": "flows-per-packet", "engine": "model", "profile": "geo-testbed",
              "date": time.strftime("%Y-%m-%d"), "runs": [one, ten],
              "ten_against_one": round(ratio, 3), "within_20pct": ratio <= 1.2}
    out = ROOT / "bench" / "results" / "flows.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for r in (one, ten):
        print(f"{r['flows']:>2} flow(s) of {r['bytes_each']} B: {r['wall_s']:.2f} s wall, "
              f"{r['delivered']} datagrams delivered, {r['us_per_delivered']:.1f} us each")
    print(f"ten flows cost {ratio:.2f}x one flow's wall time per delivered datagram; "
          f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
