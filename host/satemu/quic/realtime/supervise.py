# SPDX-License-Identifier: BSD-2-Clause
"""A real-time run's child processes and what it holds, released however the run ends."""

# Cleaning up: the namespaces carry the owner's PID in their names (satemu.quic.netns), so a run
# first sweeps those of dead runs. During the run SIGTERM and SIGINT unwind it through the same
# clean-up as a normal end (children's process groups stopped, namespaces and with them their
# interfaces deleted, each once; a second signal does not cut that short), then it says so on
# one line and exits with status 128 + the signal's number.

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from satemu.quic.netns import Namespaces, RealtimeError

MODULE = "satemu.quic.realtime"         # what the children run: python -m MODULE
HOST_DIR = Path(__file__).resolve().parents[3]      # what PYTHONPATH needs for ``-m MODULE``


class _Processes:
    """Child processes, each in a session of its own; signalled by process group only while
    their leader is unreaped (so the group id is still theirs), reaped on exit. :meth:`wait`
    calls ``check`` while it waits (it may raise: a signal, _Run.check); :meth:`stop` and
    :meth:`close` do not, so nothing cuts them short."""

    def __init__(self, env: dict, check: Callable[[], None] = lambda: None) -> None:
        self.env = env
        self.check = check
        self.stopped = 0                        # process groups close() had to stop
        self.procs: list[subprocess.Popen] = []
        self._files: list[Any] = []

    def __enter__(self) -> "_Processes":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every child still running (newest first), counting them in ``stopped``, and
        close the logs. Idempotent: a reaped child is skipped, so a second call does nothing."""
        for p in reversed(self.procs):
            if p.returncode is None:
                self.stop(p, grace=2.0)
                self.stopped += 1
        for f in self._files:
            f.close()

    def start(self, argv: list[str], log: Path) -> subprocess.Popen:
        out = open(log, "wb")
        self._files.append(out)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=self.env, start_new_session=True)
        self.procs.append(p)
        return p

    @staticmethod
    def exited(p: subprocess.Popen) -> bool:
        """Whether ``p`` has exited, without reaping it."""
        if p.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def wait(self, p: subprocess.Popen, timeout: float, check: bool = True) -> bool:
        """Wait up to ``timeout`` s for ``p`` to exit (not reaping it); True if it did."""
        deadline = time.monotonic() + timeout
        while not self.exited(p):
            if check:
                self.check()
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def signal(self, p: subprocess.Popen, sig: int) -> None:
        if p.returncode is None:                # unreaped: the group id is still p's
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, sig)

    def stop(self, p: subprocess.Popen, grace: float = 5.0) -> Optional[int]:
        """SIGTERM ``p``'s group (leftover children of an exited shell too), SIGKILL after
        ``grace`` s, then reap; returns the exit status."""
        if p.returncode is not None:
            return p.returncode
        self.signal(p, signal.SIGTERM)
        if not self.wait(p, grace, check=False):
            self.signal(p, signal.SIGKILL)
        return p.wait()

    def finish(self, p: subprocess.Popen) -> int:
        """Reap ``p`` after it exited, stopping what it left running in its group."""
        status = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        self.signal(p, signal.SIGTERM)
        p.wait()
        return status.si_status if status is not None and status.si_code == os.CLD_EXITED \
            else p.returncode


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _udp_bound(pid: int, port: int) -> bool:
    """Whether the network namespace of process ``pid`` has a UDP socket on ``port``."""
    for name in ("udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local = line.split()[1]
            if int(local.rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _say(message: str) -> None:
    print(f"satemu: {message}", file=sys.stderr, flush=True)


def _child_env() -> dict:
    env = dict(os.environ)
    paths = [str(HOST_DIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


class _Stop(BaseException):
    """Raised once by :meth:`_Run.check` after SIGTERM or SIGINT: unwinds the run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Run:
    """What a real-time run holds (``ns``, ``procs``, a temporary directory ``tmp``), set by the
    run as soon as each exists and released when the ``with`` is left, however it is left.

    In the main thread SIGTERM and SIGINT are caught meanwhile. The handler only notes the first
    one (``signum``); the run's waits call :meth:`check`, which raises :class:`_Stop` once, so
    the run unwinds from a known point and nothing ever interrupts a release half-way. On exit
    the children's process groups are stopped, the namespaces deleted (their interfaces with
    them) and ``tmp`` removed, each once (:meth:`release` is idempotent); then, if a signal came
    (also during a normal end), one line goes to ``say`` and the run leaves with
    SystemExit(128 + signum), or KeyboardInterrupt for SIGINT (status 130 at the CLI). The
    previous handlers come back on exit. Outside the main thread (where Python runs no signal
    handler) the signals keep their handlers."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, say: Callable[[str], None] = _say) -> None:
        self.say = say
        self.ns: Optional[Namespaces] = None
        self.procs: Optional[_Processes] = None
        self.tmp: Optional[tempfile.TemporaryDirectory] = None
        self.signum: Optional[int] = None
        self._unwinding = False
        self._old: dict = {}

    def __enter__(self) -> "_Run":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._note)
        return self

    def _note(self, signum: int, _frame: Any) -> None:
        if self.signum is None:
            self.signum = signum

    def check(self) -> None:
        """Raise :class:`_Stop` if a signal came, the first time only (the unwinding and the
        release it leads to call waits that check too)."""
        if self.signum is not None and not self._unwinding:
            self._unwinding = True
            raise _Stop(self.signum)

    def release(self) -> None:
        """Stop the children, delete the namespaces, remove ``tmp``; each only once."""
        self._unwinding = True
        if self.procs is not None:
            self.procs.close()
        if self.ns is not None:
            self.ns.close()
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            self.release()
        finally:
            for sig, old in self._old.items():
                signal.signal(sig, old if old is not None else signal.SIG_DFL)
            self._old.clear()
        if self.signum is None:
            return
        stopped = self.procs.stopped if self.procs is not None else 0
        deleted = self.ns.deleted if self.ns is not None else []
        removed = (f"deleted namespaces {' and '.join(deleted)} with their interfaces"
                   if deleted else "no namespace was created yet")
        self.say(f"stopped by {signal.Signals(self.signum).name}: stopped {stopped} child "
                 f"process group(s), {removed}; exit status {128 + self.signum}")
        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + self.signum)


def start_captures(res: "_Run", ns: Namespaces, procs: _Processes, out: Path,
                   netem: Optional[str], timeout: float) -> dict:
    """The start of a run in namespaces ``ns``: says what the sweep removed, adds ``netem`` to
    both interfaces, starts a capture in each (``python -m MODULE capture``: OUT/client.pcapng
    of the client's interface, OUT/server.pcapng) and waits for both to be ready (their
    ``{role}-capture.ready`` files); returns them by role. RealtimeError if one exits or is not
    ready within ``timeout`` s."""
    if ns.swept:
        res.say(f"swept {len(ns.swept)} namespace(s) left by runs no longer running: "
                f"{', '.join(ns.swept)}")
    if netem:
        ns.netem(netem)
    captures = {role: procs.start(ns.exec_argv(name, [
        sys.executable, "-m", MODULE, "capture", "--if", ifname,
        "--out", str(out / f"{role}.pcapng"), "--ready", str(out / f"{role}-capture.ready")]),
        out / f"{role}-capture.log")
        for role, name, ifname in (("client", ns.client, ns.client_if),
                                   ("server", ns.server, ns.server_if))}
    wait_ready(res, procs, {f"the {role} capture": (p, out / f"{role}-capture.ready",
                                                    out / f"{role}-capture.log")
                            for role, p in captures.items()}, timeout)
    return captures


def wait_ready(res: "_Run", procs: _Processes, waiting: dict, timeout: float) -> None:
    """Wait for each of ``waiting`` (what: (process, its ready file, its log)) to create its
    ready file, calling ``res.check`` meanwhile; RealtimeError naming the first that exits
    first or is not ready within ``timeout`` s, with the end of its log."""
    deadline = time.monotonic() + timeout
    for what, (p, ready, log) in waiting.items():
        while not ready.exists():
            res.check()
            if procs.exited(p):
                raise RealtimeError(f"{what} exited before it was ready: "
                                    f"{_tail(log) or 'no output'}")
            if time.monotonic() > deadline:
                raise RealtimeError(f"{what} was not ready within {timeout:g} s: "
                                    f"{_tail(log) or 'no output'}")
            time.sleep(0.02)
