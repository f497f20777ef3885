# SPDX-License-Identifier: BSD-2-Clause
"""The simulated board's lifecycle: it ends with the process that started it (a daemon aside),
a UART client that leaves takes its unread bytes with it, and a run finds the managed board
clean whatever became of the run before it."""

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from satemu import protocol as P
from satemu.cli import main
from satemu.device import Device
from sim import board

# A board that outlives its process is found gone within this many seconds, or never: the
# bound of the wait, not a speed asserted (it stops at the next pass of its event loop).
ENDS_WITHIN = 60.0

# Scripts for throwaway processes; the managed board's state file is the test's own, so that
# the checkout's managed board (``satemu sim start``) is left alone.
LAUNCH = """
import json, time
from sim import board
print(json.dumps(board.launch()), flush=True)
time.sleep(3600)
"""
SIM_START = """
import sys
from pathlib import Path
from satemu.cli import main
from sim import board
board.STATE = Path(sys.argv[1])
sys.exit(main(["sim", "start"]))
"""
QUIC = """
import sys
from pathlib import Path
from satemu.cli import main
from sim import board
board.STATE = Path(sys.argv[1])
sys.exit(main(sys.argv[2:]))
"""


def _env() -> dict:
    env = dict(os.environ)
    root = board.ROOT
    env["PYTHONPATH"] = os.pathsep.join([str(root / "host"), str(root / "gateware"), str(root),
                                         env.get("PYTHONPATH", "")])
    return env


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left to a parent that does not reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _ends(pid: int) -> bool:
    deadline = time.monotonic() + ENDS_WITHIN
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not _running(pid)


def test_a_board_ends_with_the_process_that_started_it():
    """A process that launched a board and is then killed with SIGKILL (no handler, no atexit,
    no finally runs in it) leaves no board behind."""
    starter = subprocess.Popen([sys.executable, "-c", LAUNCH], stdout=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env=_env(), text=True)
    try:
        line = starter.stdout.readline()
    finally:
        starter.send_signal(signal.SIGKILL)
        starter.wait()
        starter.stdout.close()
    state = json.loads(line)
    try:
        assert _ends(state["pid"]), f"board {state['pid']} outlived the process that started it"
    finally:
        if _running(state["pid"]):
            os.killpg(state["pid"], signal.SIGKILL)
    assert "the process that started the board has ended" in \
        (Path(state["run_dir"]) / "sim.log").read_text()


@pytest.fixture(scope="module")
def managed(tmp_path_factory):
    """The managed board's state file, once ``satemu sim start`` (a process that has exited
    since) started the board as a daemon; stopped at the module's end."""
    path = tmp_path_factory.mktemp("managed") / "running.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(board, "STATE", path)
        done = subprocess.run([sys.executable, "-c", SIM_START, str(path)], env=_env(),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        try:
            yield path
        finally:
            board.stop()


def test_sim_start_leaves_a_daemon_running(managed):
    state = board.status()
    assert state is not None and state["daemon"]
    with Device(state["url"]) as dev:
        assert dev.hello()["version"] == P.PROTOCOL_VERSION


def test_a_client_that_leaves_takes_its_unread_bytes_with_it(managed):
    """128 KB of garbage, far more than the board reads ahead, sent and the connection closed:
    the next client is attached and answered at once, with the device's usual timeout, not
    turned away while the board digests the garbage at UART speed."""
    state = board.status()
    garbage = random.Random(2).randbytes(128 * 1024)
    with socket.socket() as s:
        # The whole burst fits in this end's send buffer: sendall returns, and close() leaves
        # the FIN behind the bytes the board has not read.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        s.connect(("127.0.0.1", state["port"]))
        s.sendall(garbage)
    with Device(state["url"]) as dev:
        assert dev.hello()["version"] == P.PROTOCOL_VERSION
        # None of the garbage reaches the firmware's deframer any more: what it discarded
        # (by cause) stays as it was while the new client's requests go through.
        first = dev.link_stats()
        dev.get_stats(P.CHANNEL_FORWARD)
        last = dev.link_stats()
        assert {k: last[k] for k in last if k != "requests"} == \
            {k: first[k] for k in first if k != "requests"}


def _progress_seconds(line: str) -> float | None:
    match = re.search(r"\]\s+([0-9.]+) s\s", line)
    return float(match.group(1)) if match else None


def test_a_run_after_a_killed_one_finds_the_board_clean(managed, tmp_path):
    """A ``satemu quic`` on the managed board killed mid-transfer leaves frames in its delay
    lines and the BoD backlog. The next run, with a profile whose BoD settings differ (which
    the board takes only while its delay lines are empty), is not refused and gives the model
    engine's run frame for frame: the board was restarted, ports and daemon kept."""
    killed = subprocess.Popen(
        [sys.executable, "-c", QUIC, str(managed), "quic", "--engine", "board", "--profile",
         "geo-testbed-bod", "--size", "2MB", "--out", str(tmp_path / "killed")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=_env(), text=True)
    try:
        seen = []
        for line in killed.stderr:      # progress lines: the transfer's link time
            seen.append(line)
            if (_progress_seconds(line) or 0.0) >= 1.0:
                break
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        killed.stderr.close()
    assert (_progress_seconds(seen[-1]) or 0.0) >= 1.0, "".join(seen[-5:])
    before = board.status()
    assert board.held(before), "the killed run left nothing in flight: nothing tested"
    out = tmp_path / "next"
    assert main(["quic", "--engine", "board", "--compare", "--profile", "geo-testbed",
                 "--size", "20KB", "--out", str(out)]) == 0
    assert json.loads((out / "compare.json").read_text())["equal"]
    after = board.status()
    assert after["pid"] != before["pid"] and after["daemon"]
    assert (after["port"], after["eth_port"]) == (before["port"], before["eth_port"])
    assert not board.held(after)
