#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: what telling terminals apart costs a channel's line rate (docs/bod.md, "Terminals").

Offers 60-byte frames back to back at one beat per cycle (saturation) to the Verilator model of
one channel, each frame from one of four terminals or from none, and measures the steady-state
cycles per frame at ingress (what the channel takes in) with the terminal table and without it:

* the forward channel, unshaped: one shared queue, the table only says whose each frame is;
* the return channel with BoD: every frame classified, queued in its terminal's queue or dropped
  (queue full, unclassified); the carrier, far slower than the offer, sends few of them.

Every run must equal the model frame for frame. Also records each board's terminal limits, from
its record. Writes bench/results/terminals.json.
"""

import json
import sys
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.run import run_scenario               # noqa: E402
from sim.traffic import scenario               # noqa: E402
from sim.channel.bod_scenarios import PARAMS as BOD_PARAMS, bod_regs  # noqa: E402
from satemu.base.boards import BOARDS          # noqa: E402
from satemu.base.params import ChannelParams   # noqa: E402
from satemu.base.terminals import MATCH_MAC, TerminalRegs, TerminalTable  # noqa: E402
from satemu.link.registers import channel_registers  # noqa: E402

F_CLK = 75_000_000
N = 3000
KEYS = [0x0200_0000_0010 + i for i in range(4)]


def line_pps(length: int) -> float:
    return 1e9 / ((length + 24) * 8)


def _frames(table: bool) -> list:
    # Terminals 0..3 in turn, every fifth frame from no terminal.
    out = []
    for i in range(N):
        who = -1 if i % 5 == 4 else i % 5
        out.append([0, 60, 0, who] if table else [0, 60, 0])
    return out


def measure(name: str, params: ChannelParams, regs, table: TerminalTable | None,
            run_after: int = 0) -> dict:
    if table is not None:
        regs = replace(regs, **table.registers())
    sc = scenario(f"terms-bench-{name}", f_clk=F_CLK, regs=regs, frames=_frames(table is not None),
                  params=params, table=table, run_after=run_after,
                  mem={"cmd_ready": 1.0, "wdata_ready": 1.0, "lat_min": 16, "lat_max": 16})
    s = run_scenario(sc, ROOT / "build" / "bench" / sc["name"])
    if s["errors"] or s["failed"]:
        raise SystemExit(f"{name}: the run disagrees with the model:\n"
                         + "\n".join(s["errors"][:10]))
    arr = s["arrivals"]
    k = N // 10
    per_in = (arr[-1] - arr[k]) / (N - 1 - k)
    c = s["counters"]
    return {"run": name, "terminal_table": table is not None, "frames": N, "frame_bytes": 60,
            "cycles_per_frame_ingress": round(per_in, 3),
            "mpps_at_75MHz": round(F_CLK / per_in / 1e6, 3),
            "share_of_1GbE_line_rate": round(F_CLK / per_in / line_pps(60), 3),
            "exact": True, "rx": c.get("rx_frames"), "tx": c.get("tx_frames"),
            "drops": {k2: v for k2, v in c.items() if k2.startswith("drop_") and v},
            "wall_s": round(s["wall_s"], 1)}


def main():
    fwd_params = ChannelParams(terminals=4)
    fwd_regs = channel_registers(f_clk=F_CLK, mem_size=1 << 20, delay_s=0)
    shared = TerminalTable(MATCH_MAC, tuple(TerminalRegs(key=k) for k in KEYS), shared=True)
    ret_params = replace(BOD_PARAMS, terminals=4, synthetic=2, demand_levels=4)
    # A 1 ms superframe of 40 slots of 100 bytes (32 Mbit/s), so that the queued frames have
    # left by the end of the run (every frame's fate and egress checked).
    ret_regs = bod_regs(F_CLK, superframe=Fraction(1, 1000), slots=40, slot_bytes=100,
                        cra=64_000, rbdc_max=1_600_000, timeout=8, vbdc_max=60, latency=8,
                        delay=Fraction(1, 1000), queue_frames=200)
    own = TerminalTable(MATCH_MAC, tuple(
        TerminalRegs(key=k, queue_frames=50, cra=ret_regs.bod_cra, rbdc_max=ret_regs.bod_rbdc_max,
                     rbdc_timeout=8, vbdc_max=60) for k in KEYS))
    runs = [measure("forward-plain", fwd_params, fwd_regs, None),
            measure("forward-terminals", fwd_params, fwd_regs, shared),
            measure("return-bod-plain", ret_params, ret_regs, None, run_after=3_000_000),
            measure("return-bod-terminals", ret_params, ret_regs, own, run_after=3_000_000)]
    boards = {}
    for name, board in BOARDS.items():
        p = board.hardware.channel_params("return")
        boards[name] = {"terminals": p.terminals, "synthetic": p.synthetic,
                        "demand_levels": p.demand_levels}
        report = ROOT / "bench" / "results" / f"bitstream-{name}.json"
        if report.is_file():            # a real board: its committed build's utilisation
            boards[name]["utilisation"] = json.loads(report.read_text())["utilisation"]
    # What 2 terminals with frames and 8 synthetic ones (16 demand levels) cost the Versa-5G's
    # return channel against the same channel without terminals: the cells of
    # bench/bench_terminal_cost.py's syntheses (the flow's yosys, synth_ecp5), where it has run;
    # the firmware's figures are a firmware build's (docs/hardware.md, "Terminals on the real
    # boards").
    versa = {}
    cost = ROOT / "bench" / "results" / "terminal_cost.json"
    if cost.is_file():
        variants = json.loads(cost.read_text())["variants"]
        cells = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD")
        versa = {side: {c: variants[name][c] for c in cells}
                 for side, name in (("without", "return-t0-s0-l0"), ("with", "return-t2-s8-l16"))}
        versa["from"] = str(cost.relative_to(ROOT))
    versa.update(firmware_text_bytes=6329, rom_overflow_bytes=2208)
    boards["versa-ecp5"]["return_channel_with_2_terminals_and_8_synthetic"] = versa
    results = {"benchmark": "terminals-line-rate", "f_clk_reference": F_CLK,
               "date": time.strftime("%Y-%m-%d"),
               "line_rate_cycles_per_min_frame_75MHz": round(F_CLK / line_pps(60), 2),
               "runs": runs, "boards": boards}
    out = ROOT / "bench" / "results" / "terminals.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    for r in runs:
        print(f"{r['run']:>22}: {r['cycles_per_frame_ingress']:6.2f} cycles/frame at ingress "
              f"({r['mpps_at_75MHz']} Mpps at 75 MHz, {r['share_of_1GbE_line_rate']}x GbE line "
              f"rate), exact; drops {r['drops']}")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
