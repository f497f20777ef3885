# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's worker: one point run wherever it lands, on the process's own simulated board."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from satemu.sweep.points import Point
from satemu.sweep.records import CAPTURE


class WorkerBoard:
    """The simulated board a process runs its points on (the board engine, when run_point is
    given none): launched on its first point, relaunched when it has died, stopped by
    :meth:`release` (at exit, on SIGTERM, after a failed point, or by the sweep's Dask client)."""

    def __init__(self) -> None:
        self._state: dict | None = None
        self._lock = threading.Lock()

    def get(self) -> dict:
        """The board, launched if there is none or it has died."""
        from satemu.quic.engine import engine_class
        board = engine_class("board")
        with self._lock:
            if self._state is not None and board.alive(self._state["pid"]):
                return self._state
        self.release()
        try:
            state = board.launch()
        except board.BoardError as e:
            raise RuntimeError(str(e)) from None
        with self._lock:
            self._state = state
        atexit.register(self.release)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.on_sigterm)
        return state

    def release(self) -> bool:
        """Stop the board, if this process launched one."""
        with self._lock:
            state, self._state = self._state, None
        if state is None:
            return False
        from satemu.quic.engine import engine_class
        with contextlib.suppress(Exception):
            engine_class("board").kill(state)
        return True

    def on_sigterm(self, signum, frame):
        """A SIGTERM handler: stop the board, then exit at once."""
        self.release()
        os._exit(128 + signum)


# This process's board. A pool's or Dask's worker process finds it here, by name: what it is
# sent to run (run_point, release_board) is pickled by reference, so it cannot carry it.
BOARD = WorkerBoard()


def release_board() -> bool:
    """Stop the simulated board this process launched for its points, if any."""
    return BOARD.release()


def _log_of(state: dict | None) -> str | None:
    if state and state.get("run_dir"):
        return str(Path(state["run_dir"]) / "sim.log")
    return None


def _run_scenario(point, state, tmp: Path) -> tuple[dict, dict]:
    """A scenario point (satemu.sweep.scenarios.ScenarioPoint) run in ``tmp``: its summary and
    its run directory's files."""
    from satemu.quic.scenario import run_scenario
    from satemu.report.flows import write_scenario
    sc = point.load(tmp)
    run = tmp / "run"
    r = run_scenario(point.engine, sc, max_seconds=point.max_time, board=state,
                     pcap=run / CAPTURE if point.pcap else None)
    summary = write_scenario(r, run)
    return summary, {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


def run_point(point: Point, board: dict | None = None, progress=None) -> dict:
    """Run ``point`` and return its outcome: ``ok``, the summary and the run directory's
    files (result.json, packets.csv, plots) as bytes, so that the caller writes them wherever
    it runs; or ``ok`` False with ``error`` and the board's ``log``. With the board engine,
    ``board`` is the simulated board to use; without it, this process's own (launched on its
    first point, relaunched after a failure). ``progress(virtual_s, bytes)`` is called as the
    transfer runs."""
    from satemu.quic.engine import run_transfer
    from satemu.report.files import write_transfer
    t0 = time.monotonic()
    own = point.engine == "board" and board is None
    state = board
    try:
        if own:
            state = BOARD.get()
        with tempfile.TemporaryDirectory(prefix="satemu-point-") as tmp:
            if getattr(point, "kind", "") == "scenario":
                summary, files = _run_scenario(point, state, Path(tmp))
                return {"ok": True, "summary": summary, "files": files, "pid": os.getpid(),
                        "point_wall_s": time.monotonic() - t0}
            profile = point.profile
            if not profile:
                profile = str(Path(tmp) / f"{point.name}.toml")
                Path(profile).write_text(point.toml, encoding="utf-8")
            run = Path(tmp) / "run"
            t = run_transfer(point.engine, profile, point.size, ack=point.ack,
                             seed=point.seed, max_seconds=point.max_time,
                             settings=point.settings, stacks=point.stacks, board=state,
                             progress=progress and (lambda sim: progress(
                                 sim.time(sim.now_cycle), sim.client.received)),
                             pcap=run / CAPTURE if point.pcap else None)
            summary = write_transfer(t, run)
            files = {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}
    except Exception as e:                  # the sweep goes on; a rerun retries the point
        log = _log_of(state)
        if own:
            BOARD.release()
        return {"ok": False, "error": f"{type(e).__name__}: {e}".strip(), "log": log,
                "pid": os.getpid()}
    return {"ok": True, "summary": summary, "files": files, "pid": os.getpid(),
            "point_wall_s": time.monotonic() - t0}
