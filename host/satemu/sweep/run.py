# SPDX-License-Identifier: BSD-2-Clause
"""A sweep run: the points not yet done, serially, on a pool or on Dask, each stored as it ends."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from satemu.sweep.dask import DASK_TIMEOUT, _dask, check_scheduler
from satemu.sweep.points import Point
from satemu.sweep.pool import _pool
from satemu.sweep.records import _store, record_of
from satemu.sweep.worker import run_point


@dataclass
class Outcome:
    """What a sweep did: every point's record (None: not done), the points it ran this time
    and those that failed, with (error, log)."""

    points: list
    records: dict
    ran: list
    failed: dict


def _said(r: dict) -> str:
    """A finished point's row in a few words."""
    if "flows" in r:                                    # a scenario's run
        done = f"{r['flows_completed']} of {r['flows']} flows done"
        mean = r["goodput_mbps_mean"]
        return done + (f", mean goodput {mean:.3f} Mbit/s" if mean is not None else "") + \
            f", return {r['return_bytes']} B"
    return (f"{r['completion_s']:.3f} s, {r['goodput_mbps']:.3f} Mbit/s, "
            f"return {r['return_bytes']} B" if r["completed"]
            else f"NOT completed ({r['outcome'] or r['error']})")


def _serial(points, board, ticker):
    for p in points:
        yield p, run_point(p, board, ticker(p))

def _sigterm_raises():
    """SIGTERM as Ctrl-C in this (main) thread, so ``finally`` blocks stop what runs."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, handler)


def run_sweep(points, out, *, jobs: int = 1, dask: str | None = None, force: bool = False,
              board: dict | None = None, echo=None,
              dask_timeout: float = DASK_TIMEOUT) -> Outcome:
    """Run the points of ``points`` not already done under ``out`` (all with ``force``):
    serially in this process (``jobs`` 1; ``board``, the simulated board for the board
    engine), on ``jobs`` worker processes, or on the Dask scheduler ``dask`` (ProfileError,
    before anything runs, if none answers there within ``dask_timeout`` s). Each finished
    point's files and record are written as it finishes; a failed point is reported and not
    recorded. A progress bar with an ETA goes to stderr (a line per point when not a TTY)."""
    from tqdm import tqdm
    out = Path(out)
    records = {p: None if force else record_of(p, out) for p in points}
    todo = [p for p in points if records[p] is None]
    if dask and dask != "local" and todo:       # before the bar: a refusal is one line
        check_scheduler(dask, dask_timeout)
    tty = sys.stderr.isatty()
    bar = tqdm(total=len(points), initial=len(points) - len(todo), unit="point",
               file=sys.stderr, disable=not tty, dynamic_ncols=True)
    say = echo or (lambda line: bar.write(line, file=sys.stderr) if tty
                   else print(line, file=sys.stderr, flush=True))
    if len(todo) < len(points):
        say(f"{len(points) - len(todo)} of {len(points)} points already done under {out} "
            f"(--force runs them again)")
    ran, failed = [], {}

    def ticker(p: Point):
        """Progress within a point run here: on the bar, or a line every 30 s in a log."""
        last = [time.monotonic()]

        def tick(virtual_s: float, received: int) -> None:
            now = time.monotonic()
            if now - last[0] < (1.0 if tty else 30.0):
                return
            last[0] = now
            text = f"{virtual_s:.2f} s of link time" + \
                (f", {100 * received / p.size:.0f}%" if hasattr(p, "size") else "")
            if tty:
                bar.set_postfix_str(text)
            else:
                say(f"  {p.label()}: {text}")
        return tick

    if dask:
        runs = _dask(todo, dask, jobs, dask_timeout)
    elif jobs > 1 and len(todo) > 1:
        runs = _pool(todo, jobs)
    else:
        runs = _serial(todo, board, ticker)
    old = _sigterm_raises()
    try:
        with contextlib.closing(runs):
            for p, outcome in runs:
                if p is None:
                    say(outcome["notice"])
                    continue
                done = len(points) - len(todo) + len(ran) + len(failed) + 1
                if outcome["ok"]:
                    records[p] = _store(p, out, outcome)
                    ran.append(p)
                    what = _said(records[p]["row"])
                    say(f"[{done}/{len(points)}] {p.label()}: {what} "
                        f"({outcome.get('point_wall_s', 0):.1f} s wall)")
                else:
                    failed[p] = (outcome["error"], outcome.get("log"))
                    log = f"; log: {outcome['log']}" if outcome.get("log") else ""
                    say(f"[{done}/{len(points)}] {p.label()}: FAILED: {outcome['error']}{log}")
                bar.update(1)
    finally:
        bar.close()
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    return Outcome(list(points), records, ran, failed)
