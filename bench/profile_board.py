#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Profile the simulated board: each part of the SoC's share of the Verilated model's time.

Records the running board's ``Vsim`` with ``perf record`` (idle, or while
``tests/system/test_quic.py`` sends QUIC transfers across it with ``--traffic``), then gives each
sample to a part of the SoC: ``addr2line -i`` turns its address into the generated C++ line it
executes (the innermost frame in Verilator's output, past inlined runtime helpers such as
``VL_REDXOR``), and the signal names on that line (``satemu_channel_fwd``, LiteX's
``ethport0``, ...) or the file (``Vsim_VexRiscv*``) name the part. Samples outside the model
(LiteX's simulation loop, its modules, libc, the kernel) are counted together. Prints the shares
as JSON; ``bench/results/board-profile.json`` holds the summary before and after the speed work.

Needs ``perf`` (kernel.perf_event_paranoid <= 2 for one's own processes) and binutils.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Signal-name patterns on a generated C++ line, first match wins, and the part each names.
PARTS = [
    (r"satemu_channel_fwd", "channel fwd"),
    (r"satemu_channel_ret", "channel ret (with BoD)"),
    (r"satemusimsoc_(ethport0|simethphy0)", "LiteEth MAC + sim PHY, port A"),
    (r"satemusimsoc_(ethport1|simethphy1)", "LiteEth MAC + sim PHY, port B"),
    (r"satemusimsoc_(bankmodel|dfi|bank_|banks|record)|__DOT__mem_\d", "SDRAM model"),
    (r"satemusimsoc_satemusimsoc_(sdram|litedram|port)", "LiteDRAM controller + crossbar"),
    (r"litedramnativeport|delay_lines", "channels' memory ports (hw.simmem's after)"),
    (r"satemusimsoc_(satemusimsoc_)?uart", "UART"),
    (r"satemusimsoc_(satemusimsoc_)?timer", "timer"),
    (r"satemusimsoc_add_channels|channel_bridge", "channel register bridge, timebase"),
    (r"satemusimsoc_satemusimsoc_|satemusimsoc_(bus|ram|rom|sram|wb|ibus|dbus|csr|interface)"
     r"|__DOT__(mem|rom|sram)\b|interface\d", "SoC bus, ROM, SRAM, CSRs"),
]
OUTSIDE = "outside the model: sim loop, its modules, libc, kernel"


def _symbols(exe: Path) -> dict[str, int]:
    syms = {}
    nm = subprocess.run(["nm", "-C", str(exe)], capture_output=True, text=True, check=True)
    for line in nm.stdout.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] in "tTwW" and "[clone" not in line:
            syms[" ".join(f[2:]).split("(")[0]] = int(f[0], 16)
    return syms


def attribute(data: Path, exe: Path) -> dict:
    """Each part's share of the samples in ``data`` (perf.data of ``exe``), in percent."""
    syms = _symbols(exe)
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,symoff,dso"],
                            capture_output=True, text=True, check=True).stdout
    in_model, total, outside = collections.Counter(), 0, 0
    for row in script.splitlines():
        m = re.match(r"\s*[0-9a-f]+\s+(\S+)\+0x([0-9a-f]+)\s+\((.*)\)", row)
        total += 1
        if m and m[1] in syms and m[3].endswith("/Vsim"):
            in_model[syms[m[1]] + int(m[2], 16)] += 1    # the address in the file, not mapped
        else:
            outside += 1
    frames: dict[int, list[str]] = {}
    out = subprocess.run(["addr2line", "-i", "-a", "-e", str(exe)] +
                         [hex(a) for a in in_model], capture_output=True, text=True,
                         check=True).stdout
    current = None
    for line in out.splitlines():
        if line.startswith("0x"):
            current = frames.setdefault(int(line, 16), [])
        else:
            current.append(line.split(" (")[0])
    sources: dict[Path, list[str]] = {}

    def source_line(path: Path, n: int) -> str:
        if path not in sources:
            sources[path] = path.read_text().split("\n") if path.exists() else []
        lines = sources[path]
        return lines[n - 1] if 0 < n <= len(lines) else ""

    shares = collections.Counter({OUTSIDE: outside})
    for address, n in in_model.items():
        part = "Verilator runtime"
        for frame in frames.get(address, []):
            m = re.match(r"(.*):(\d+)", frame)
            if not m or not Path(m[1]).name.startswith("Vsim"):
                continue                                # a runtime helper inlined here
            name = Path(m[1]).name
            if name.startswith("Vsim_VexRiscv"):
                part = "VexRiscv CPU"
                break
            part = "model: other (function entries, unattributed lines)"
            for k in range(6):                          # a statement may span lines
                text = source_line(exe.parent / name, int(m[2]) + k)
                hit = next((p for pattern, p in PARTS if re.search(pattern, text)), None)
                if hit:
                    part = hit
                    break
            break
        shares[part] += n
    return {"samples": total,
            "shares_percent": {p: round(100 * n / total, 1) for p, n in shares.most_common()}}


def record(pid: int, data: Path, seconds: float) -> None:
    subprocess.run(["perf", "record", "-F", "999", "-p", str(pid), "-o", str(data), "--",
                    "sleep", str(seconds)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--traffic", action="store_true",
                    help="profile the board tests/system/test_quic.py starts, while it runs")
    ap.add_argument("--data", default=str(ROOT / "build" / "board-profile.data"))
    args = ap.parse_args()
    from sim import board
    data = Path(args.data)
    exe = board.build_board(verbose=True) / "obj_dir" / "Vsim"
    if args.traffic:
        test = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 "tests/system/test_quic.py"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pid = None
        while pid is None and test.poll() is None:
            found = subprocess.run(["pgrep", "-n", "-f", "build/board/run-.*/obj_dir/Vsim"],
                                   capture_output=True, text=True).stdout.split()
            pid = int(found[0]) if found else None
            time.sleep(0.2)
        if pid is None:
            raise SystemExit("test_quic.py started no board")
        time.sleep(3)                                   # past the boot
        record(pid, data, args.seconds)
        test.wait()
    else:
        state = board.launch()
        try:
            record(state["sim_pid"], data, args.seconds)
        finally:
            board.kill(state)
    print(json.dumps(attribute(data, exe), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
