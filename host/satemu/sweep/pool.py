# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's points on a pool of worker processes, retried once if a worker dies."""

from __future__ import annotations

import contextlib
import signal

from satemu.sweep.worker import BOARD, run_point


def _worker_init() -> None:
    """A pool worker: Ctrl-C is the sweep's to handle (it terminates the workers); SIGTERM
    stops the worker's board first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, BOARD.on_sigterm)


def _terminate(pool) -> None:
    """Stop a pool now: its workers get SIGTERM (and stop their boards), then SIGKILL."""
    procs = list((getattr(pool, "_processes", None) or {}).values())   # shutdown() drops them
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


def _pool(points, jobs):
    """Points on ``jobs`` worker processes. A worker that dies breaks the pool: the points in
    it then are retried once in a new pool, and reported failed if it breaks again."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool
    tries: dict = {}
    pending = list(points)
    while pending:
        pool = ProcessPoolExecutor(min(jobs, len(pending)),
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init)
        clean = False
        try:
            futures = {pool.submit(run_point, p): p for p in pending}
            pending = []
            for f in as_completed(futures):
                p = futures[f]
                try:
                    yield p, f.result()
                except BrokenProcessPool:
                    tries[p] = tries.get(p, 0) + 1
                    if tries[p] < 2:
                        pending.append(p)
                    else:
                        yield p, {"ok": False, "error": "its worker process died", "log": None}
                except Exception as e:
                    yield p, {"ok": False, "error": f"{type(e).__name__}: {e}", "log": None}
            clean = not pending
            if pending:
                yield None, {"notice": f"a worker process died; the {len(pending)} points "
                                       f"that were in its pool run again in a new one"}
        finally:
            if clean:
                pool.shutdown(wait=True)
            else:
                _terminate(pool)
