# SPDX-License-Identifier: BSD-2-Clause
"""sim/lifeline.py, which every board ``sim.board.launch`` starts runs under: the command ends
when the process that launched it ends, however it ends."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

LIFELINE = Path(__file__).resolve().parents[2] / "sim" / "lifeline.py"

# A launcher as sim.board.launch is one: it starts `sleep` under the lifeline, holding the
# pipe, prints the watcher's pid, then waits to be killed.
LAUNCHER = f"""
import subprocess, sys, time
p = subprocess.Popen([sys.executable, {str(LIFELINE)!r}, "sleep", "600"],
                     stdin=subprocess.PIPE, start_new_session=True)
print(p.pid, flush=True)
time.sleep(600)
"""


def _child_of(pid: int, program: bytes, timeout: float = 10.0) -> int:
    """``pid``'s child once it runs ``program``: a child seen between its fork and its exec
    still shows its parent's command line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children and Path(f"/proc/{children[0]}/cmdline").read_bytes().startswith(
                program + b"\0"):
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError(f"the lifeline started no {program.decode()}")


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_the_command_ends_when_its_launcher_is_killed():
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE,
                                text=True)
    try:
        with launcher.stdout:
            watcher = int(launcher.stdout.readline())
        command = _child_of(watcher, b"sleep")
        os.kill(launcher.pid, signal.SIGKILL)        # no cleanup of its own can run
        launcher.wait()
        assert _gone(command), "the command outlived its launcher"
        assert _gone(watcher), "the lifeline outlived its command"
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_the_command_s_status_is_the_lifeline_s():
    with subprocess.Popen([sys.executable, str(LIFELINE), sys.executable, "-c",
                           "raise SystemExit(7)"], stdin=subprocess.PIPE) as held:
        assert held.wait(30) == 7                     # its own end, the pipe still open
    with subprocess.Popen([sys.executable, str(LIFELINE), "sleep", "600"],
                          stdin=subprocess.PIPE) as cut:
        cut.stdin.close()                             # the launcher's end: SIGTERM
        assert cut.wait(30) == 128 + signal.SIGTERM
    done = subprocess.run([sys.executable, str(LIFELINE)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "usage" in done.stderr
