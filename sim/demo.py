# SPDX-License-Identifier: BSD-2-Clause
"""`make demo`, the main job: what a QUIC ACK policy costs a GEO return link.

Builds the simulated board once (LiteX SoC with VexRiscv, LiteDRAM, two LiteEth ports, both
channels and the C firmware, all in Verilator) and starts it. Then, as a user would, with the
CLI:

1. the 10 MB table: a 10 MB QUIC download (aioquic, server on port B, client on port A) across
   the geo-testbed profile with the client ACKing 1:2 and then 1:10, on the model engine (the
   reference models of the board's whole frame path, which equal the board frame for frame);
2. the hardware path: one transfer of the same profile (``SATEMU_DEMO_BOARD_SIZE``, 100KB) on
   the simulated board, loaded over the UART like a box, compared frame for frame with the
   model engine's run of it (``satemu quic --compare``).

Prints the table, the comparison and where the report and plots are, and records both engines'
speed in build/demo/demo-<time>.json: everything a run writes stays under build/, out of the
source tree. ``SATEMU_DEMO_SIZE`` (e.g. 1MB) changes the table's size.
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
    board_size = os.environ.get("SATEMU_DEMO_BOARD_SIZE", "100KB")
    out = ROOT / "build" / "demo"
    print("satemu demo: QUIC across a GEO link in virtual time, on the model engine and on the "
          "simulated board (LiteX SoC, firmware, LiteEth ports and both channels in Verilator)")
    args = ["experiment", "ack-policy", "--engine", "model", "--profile", PROFILE,
            "--sizes", size, "--policies", POLICIES, "--out", str(out / "table"), "--force"]
    print(f"\n$ satemu {' '.join(args)}")
    t1 = time.monotonic()
    rc = cli(args)
    model_wall = time.monotonic() - t1
    t0 = time.monotonic()
    state = board.launch()
    print(f"\nthe simulated board is up at {state['url']} after {time.monotonic() - t0:.0f} s "
          f"(built once, cached under build/board/)")
    try:
        print(f"\n$ satemu load {PROFILE} --port {state['url']} --reseed")
        rc |= cli(["load", PROFILE, "--port", state["url"], "--reseed"])
        policy = POLICIES.split(",")[-1]
        args = ["quic", "--engine", "board", "--compare", "--profile", PROFILE,
                "--size", board_size, "--ack", policy, "--port", state["url"],
                "--eth-port", str(state["eth_port"]), "--out", str(out / "board")]
        print(f"\n$ satemu {' '.join(args)}")
        t1 = time.monotonic()
        rc |= cli(args)
        board_wall = time.monotonic() - t1
    finally:
        board.kill(state)
    runs = []
    for policy_name in POLICIES.split(","):
        result = out / "table" / PROFILE / size / policy_name.replace(":", "") / "result.json"
        if result.exists():
            runs.append(_speed(json.loads(result.read_text()), state))
    board_run = out / "board" / "result.json"
    if board_run.exists():
        runs.append(_speed(json.loads(board_run.read_text()), state))
    compare = out / "board" / "compare.json"
    equal = json.loads(compare.read_text())["equal"] if compare.exists() else None
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    bench = out / f"demo-{stamp}.json"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(json.dumps({"benchmark": "cosim-demo", "profile": PROFILE, "size": size,
                                 "board_size": board_size,
                                 "f_clk_nominal_hz": state["hello"]["f_clk"],
                                 "model_transfers_wall_s": round(model_wall, 1),
                                 "board_transfer_wall_s": round(board_wall, 1),
                                 "board_equals_model": equal, "runs": runs}, indent=2) + "\n")
    print(f"\nreport and plots: {out / 'table' / 'report.md'} (model engine), "
          f"{out / 'board'} (simulated board)")
    print(f"speed: {bench.relative_to(ROOT)} (model engine {model_wall:.0f} s for the table; "
          f"the board {board_wall:.0f} s for its {board_size})")
    print("\nthe lab console on a simulated board of its own (docs/console.md): "
          ".venv/bin/satemu serve --sim demo, then open http://127.0.0.1:8470/")
    return rc


def _speed(s: dict, state: dict) -> dict:
    return {"engine": s["engine"], "ack": s["ack"], "size": s["size"],
            "virtual_s": s["virtual_s"], "wall_s": s["wall_s"], "virtual_per_wall": s["speed"],
            "cycles_per_wall_s": round(s["virtual_s"] * state["hello"]["f_clk"] / s["wall_s"])}


if __name__ == "__main__":
    sys.exit(main())
