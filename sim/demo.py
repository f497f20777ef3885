# SPDX-License-Identifier: BSD-2-Clause
"""`make demo`, the main job: what a QUIC ACK policy costs a GEO return link, on the full RTL.

Builds the simulated board once (LiteX SoC with VexRiscv, LiteDRAM, two LiteEth ports, both
channels and the C firmware, all in Verilator), starts it, loads the geo-testbed profile over
the UART with the CLI, then runs a 10 MB QUIC download (aioquic, server on port B, client on port
A) with the client ACKing 1:2 and then 1:10, each in the board's own virtual time. Prints the
comparison table and where the report and plots are, and records the co-simulation's speed in
bench/results/cosim/. ``SATEMU_DEMO_SIZE`` (e.g. 1MB) makes it shorter.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from pathlib import Path

from satemu.cli import main as cli
from sim import board

ROOT = Path(__file__).resolve().parent.parent
PROFILE = "geo-testbed"        # 8.5 / 1.5 Mbit/s, 300 ms each way, 1-BDP forward queue
POLICIES = "ratio:2,ratio:10"


def main() -> int:
    size = os.environ.get("SATEMU_DEMO_SIZE", "10MB")
    out = ROOT / "build" / "demo"
    print("satemu demo: QUIC across the simulated board (LiteX SoC, firmware, LiteEth ports and "
          "both channels in Verilator), in its virtual time")
    t0 = time.monotonic()
    state = board.launch()
    print(f"  board up at {state['url']} after {time.monotonic() - t0:.0f} s "
          f"(built once, cached under build/board/)")
    try:
        print(f"\n$ satemu load {PROFILE} --port {state['url']} --reseed")
        if cli(["load", PROFILE, "--port", state["url"], "--reseed"]):
            return 1
        args = ["experiment", "ack-policy", "--profile", PROFILE, "--sizes", size,
                "--policies", POLICIES, "--port", state["url"],
                "--eth-port", str(state["eth_port"]), "--out", str(out)]
        print(f"\n$ satemu {' '.join(args)}")
        t1 = time.monotonic()
        rc = cli(args)
        wall = time.monotonic() - t1
    finally:
        board.kill(state)
    runs = []
    for policy in POLICIES.split(","):
        result = out / PROFILE / size / policy.replace(":", "") / "result.json"
        if result.exists():
            s = json.loads(result.read_text())
            runs.append({"ack": s["ack"], "size": s["size"], "virtual_s": s["virtual_s"],
                         "wall_s": s["wall_s"], "virtual_per_wall": s["speed"],
                         "cycles_per_wall_s": round(s["virtual_s"] * state["hello"]["f_clk"]
                                                    / s["wall_s"])})
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    bench = ROOT / "bench" / "results" / "cosim" / f"demo-{stamp}.json"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(json.dumps({"benchmark": "cosim-demo", "profile": PROFILE, "size": size,
                                 "f_clk_nominal_hz": state["hello"]["f_clk"],
                                 "transfers_wall_s": round(wall, 1), "runs": runs}, indent=2) + "\n")
    print(f"\nreport and plots: {out / 'report.md'}")
    print(f"co-simulation speed: {bench.relative_to(ROOT)} "
          f"({sum(r['virtual_s'] for r in runs):.1f} s of link time in {wall:.0f} s)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
