#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Measurement: what the initial RTT does to the handshake and the transfer, per stack.

The evidence behind satemu's default initial RTT (docs/architecture.md, "Endpoint settings").
On the model engine, for each profile, size, stack pair and initial RTT (aioquic's own 100 ms,
RFC 9002's 333 ms, and 1 s), one download with ACK 1:2, seed 0: its completion time, handshake
time, and what each side declared lost before its handshake was confirmed (result.json's
``handshake_losses``). Writes bench/results/initial-rtt.json.
"""

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from satemu.quic.engine import run_model_transfer  # noqa: E402
from satemu.quic.settings import EndpointSettings  # noqa: E402
from satemu.report.metrics import summarize  # noqa: E402

PROFILES = ("geo-constrained-return", "geo-testbed", "short-asym")
SIZES = (400_000, 10_000_000)
# aioquic's client applies ratio:2; quinn's receiver acks every second packet by itself
# (RFC 9000), which the ``default`` policy leaves it to.
STACKS = ((("aioquic", "aioquic"), "ratio:2"), (("quinn", "quinn"), "default"))
INITIAL_RTTS_MS = (100.0, 333.0, 1000.0)


def main() -> int:
    rows = []
    for profile in PROFILES:
        for size in SIZES:
            for stacks, ack in STACKS:
                for rtt in INITIAL_RTTS_MS:
                    t0 = time.monotonic()
                    t = run_model_transfer(profile, size, ack=ack, seed=0, max_seconds=300,
                                           settings=EndpointSettings(initial_rtt_ms=rtt),
                                           stacks=stacks)
                    s = summarize(t)
                    h = s["handshake_losses"]
                    rows.append({
                        "profile": profile, "size": size, "stacks": "/".join(stacks),
                        "ack": ack, "initial_rtt_ms": rtt, "completed": s["completed"],
                        "completion_s": s["completion_s"], "handshake_s": s["handshake_s"],
                        "declared_lost_in_handshake": h["declared"],
                        "client": h["client"], "server": h["server"],
                        "return_packets": s["return_packets"],
                        "wall_s": round(time.monotonic() - t0, 2)})
                    r = rows[-1]
                    print(f"{profile:24s} {size:>9d} {r['stacks']:16s} {rtt:6.0f} ms: "
                          f"{r['completion_s']:.3f} s, handshake {r['handshake_s']:.3f} s, "
                          f"{r['declared_lost_in_handshake']} declared lost", flush=True)
    out = ROOT / "bench" / "results" / "initial-rtt.json"
    out.write_text(json.dumps({
        "what": "one download per row on the model engine, seed 0, ACK 1:2; losses declared "
                "before each side's handshake was confirmed",
        "command": ".venv/bin/python bench/bench_initial_rtt.py", "rows": rows},
        indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if all(r["completed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
