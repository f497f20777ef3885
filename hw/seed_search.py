# SPDX-License-Identifier: BSD-2-Clause
"""Try nextpnr seeds and options on a board's synthesised netlist, one run at a time.

    python -m hw.seed_search --board versa-ecp5 --seeds 1 3 4 --args "--placer static --tmg-ripup"

It reuses the netlist of the board's current build (``hw.bitstream``'s directory for the
content key of the sources: run ``python -m hw.bitstream`` first, which synthesises even when
routing fails) and the nextpnr command line LiteX wrote beside it, with the seed and the
options given instead of the board's. router2 rarely recovers once its overused wires stay
high, so a run is stopped when they are above the limits of ``STOP`` at an iteration
(docs/hardware.md, "Timing closure on the Versa-5G"): builds that converged here were below
500 by iteration 20. Each run's log stays under ``build/seeds/<board>/<key>/``; one line per
run says how it ended: stopped (iteration, overused wires), or routed with each clock's fmax.
A run that meets every clock is what ``Bitstream.seed`` and ``Bitstream.nextpnr_args`` may then
name, and ``hw.bitstream`` builds it again in full.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from hw.bitstream import BOARDS, BUILD, ROOT, TOOLCHAIN, _key, parse_nextpnr

# (iteration, most overused wires at it or later) before a run is stopped.
STOP = ((20, 800), (30, 400), (50, 200), (80, 100), (110, 40))
OVERUSE = re.compile(r"iter=(\d+) .*overused=(\d+)")


def nextpnr_command(gateware: Path, build_name: str) -> list[str]:
    """The nextpnr-ecp5 command of LiteX's build script, as it wrote it."""
    script = (gateware / f"build_{build_name}.sh").read_text()
    line = next(ln for ln in script.splitlines() if ln.startswith("nextpnr-ecp5"))
    return shlex.split(line)


def with_options(cmd: list[str], seed: int, args: str, board_args: str) -> list[str]:
    """``cmd`` with the seed, and ``args`` instead of the board's own options; its outputs in
    the run's directory."""
    drop = set(shlex.split(board_args))
    out, skip = [str(TOOLCHAIN / "nextpnr-ecp5")], False
    for word in cmd[1:]:
        if skip:
            skip = False
            continue
        if word in ("--seed", "--log", "--report", "--textcfg"):
            skip = True
            continue
        if word in drop:
            continue
        out.append(word)
    return out + shlex.split(args) + ["--seed", str(seed), "--log", "nextpnr.log",
                                      "--report", "report.json", "--textcfg", "out.config"]


def should_stop(iteration: int, overused: int) -> bool:
    return any(iteration >= it and overused > most for it, most in STOP)


def run(cmd: list[str], gateware: Path, build_name: str, where: Path) -> dict:
    """One nextpnr run in ``where``, on the netlist and pins of ``build_name``, stopped if
    router2 diverges; its verdict."""
    where.mkdir(parents=True, exist_ok=True)
    for name in (f"{build_name}.json", f"{build_name}.lpf"):
        (where / name).write_bytes((gateware / name).read_bytes())
    started = time.monotonic()
    with open(where / "stdout.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=where, stdout=log, stderr=subprocess.STDOUT)
        verdict, seen, tail = None, 0, ""
        while proc.poll() is None:
            time.sleep(10)
            # Only what the log gained since the last look (it grows to megabytes); a line cut
            # at the end waits for the next look.
            if (where / "nextpnr.log").exists():
                with open(where / "nextpnr.log", "rb") as f:
                    f.seek(seen)
                    new = f.read()
                seen += len(new)
                text, _, tail = (tail + new.decode(errors="replace")).rpartition("\n")
                last = OVERUSE.findall(text)
                if last and should_stop(int(last[-1][0]), int(last[-1][1])):
                    proc.kill()
                    proc.wait()
                    verdict = {"stopped": {"iteration": int(last[-1][0]),
                                           "overused": int(last[-1][1])}}
    text = (where / "nextpnr.log").read_text()
    report = where / "report.json"
    parsed = parse_nextpnr(text, json.loads(report.read_text()) if report.exists() else None)
    if verdict is None:
        clocks = parsed["clocks"]
        verdict = {"exit": proc.returncode, "routed": parsed["routed"], "clocks": clocks,
                   "met": bool(clocks) and all(c["met"] for c in clocks.values())}
    verdict["seconds"] = round(time.monotonic() - started)
    return verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", default="versa-ecp5", choices=sorted(BOARDS))
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--args", default=None,
                    help="nextpnr options instead of the board's (default: the board's)")
    a = ap.parse_args()
    board = BOARDS[a.board]
    flow = board.bitstream
    key = _key(a.board)
    gateware = BUILD / a.board / key / "soc" / "gateware"
    if not (gateware / f"{flow.build_name}.json").exists():
        sys.exit(f"no netlist for key {key}: run `python -m hw.bitstream --board {a.board}` "
                 f"first")
    cmd = nextpnr_command(gateware, flow.build_name)
    args = flow.nextpnr_args if a.args is None else a.args
    tag = re.sub(r"[^A-Za-z0-9]+", "-", args).strip("-") or "default"
    for seed in a.seeds:
        where = ROOT / "build" / "seeds" / a.board / key / f"seed{seed}-{tag}"
        verdict = run(with_options(cmd, seed, args, flow.nextpnr_args), gateware,
                      flow.build_name, where)
        print(json.dumps({"seed": seed, "args": args, **verdict}), flush=True)


if __name__ == "__main__":
    main()
