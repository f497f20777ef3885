#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""How many live clients one lab console (``satemu serve``) feeds, and what it costs. N clients
each on a box's live stream (server-sent events) for SECONDS; for each N, the updates each
client got a second (the slowest client's and the mean), and the console process's CPU (user +
system) a second of wall time, read from /proc. Two boxes:

- ``board``: the console as ``satemu serve`` on a simulated board, polling it every 0.1 s. Its
  readings come as fast as the board's firmware answers over its UART in Verilator, which is
  what limits the updates here, not the console;
- ``replay``: the console in a process of its own with a box that publishes readings the
  simulated board gave, 10 a second: what the console's fan-out costs at the rate a real
  board's UART allows (docs/console.md, "How it holds a box").

Writes bench/results/console.json.

    .venv/bin/python bench/bench_console.py [--clients 1 10 50 100 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402

from sim import board  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "console.json"


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time so far (/proc/PID/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client(url: str, seconds: float, counts: list, index: int, start: threading.Event) -> None:
    """One client: connected and past its first update before the window starts, then the
    updates it gets in ``seconds``."""
    n = 0
    with httpx2.Client(timeout=seconds + 30) as c, c.stream("GET", url) as r:
        lines = r.iter_lines()
        for line in lines:
            if line.startswith("data: "):
                break
        counts[index] = -1                      # connected
        start.wait()
        deadline = time.monotonic() + seconds
        for line in lines:
            if time.monotonic() >= deadline:
                break
            if line.startswith("data: "):
                n += 1
    counts[index] = n


def measure(base: str, pid: int, clients: int, seconds: float) -> dict:
    counts = [0] * clients
    start = threading.Event()
    threads = [threading.Thread(target=client, args=(f"{base}/api/boxes/bench/live", seconds,
                                                      counts, i, start), daemon=True)
               for i in range(clients)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while any(c == 0 for c in counts) and time.monotonic() < deadline:
        time.sleep(0.05)
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    start.set()
    for t in threads:
        t.join(seconds + 30)
    wall = time.monotonic() - t0
    cpu = cpu_seconds(pid) - cpu0
    return {"clients": clients, "seconds": seconds,
            "updates_per_s_slowest": round(min(counts) / seconds, 2),
            "updates_per_s_mean": round(sum(counts) / clients / seconds, 2),
            "server_cpu_per_wall_s": round(cpu / wall, 3)}


def serve_replay(readings: list, port: int, data: Path) -> None:
    """The console on uvicorn with one box, ``bench``, publishing ``readings`` in turn every
    0.1 s (a child process's body)."""
    import uvicorn
    from satemu.serve.app import Console, create_app
    from satemu.serve.auth import Tokens
    from satemu.serve.boxes import Box

    class Replay(Box):
        def _poll(self):
            n = 0
            while not self._closed:
                self.error = None
                self._publish(readings[n % len(readings)])
                n += 1
                self._wake.wait(self.poll_s)

    box = Replay("bench", "replay://", poll_s=0.1)
    uvicorn.run(create_app(Console({"bench": box}, data, Tokens(None))), host="127.0.0.1",
                port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(base: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(f"{base}/api/boxes/bench", timeout=2).json()["state"] == "up":
                return
        except (httpx2.HTTPError, ValueError):
            pass
        if time.monotonic() > deadline:
            sys.exit("the console did not come up")
        time.sleep(0.2)


def run(base: str, pid: int, clients: list[int], seconds: float) -> dict:
    wait_up(base)
    idle0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    idle = (cpu_seconds(pid) - idle0) / (time.monotonic() - t0)
    rows = []
    for n in clients:
        row = measure(base, pid, n, seconds)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return {"server_cpu_per_wall_s_no_client": round(idle, 3), "runs": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 10, 50, 100, 200])
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    import multiprocessing
    data = ROOT / "build" / "bench-console"
    state = board.launch()
    port = free_port()
    server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "satemu"), "serve", "--box",
                               f"bench={state['url']}", "--listen", f"127.0.0.1:{port}",
                               "--data", str(data)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        on_board = run(base, server.pid, a.clients, a.seconds)
        readings = []               # the board's own readings, for the replay
        with httpx2.Client(timeout=30) as c, c.stream("GET", f"{base}/api/boxes/bench/live?"
                                                      f"max_updates=5") as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    readings.append(json.loads(line[6:])["reading"])
    finally:
        server.terminate()
        server.wait(10)
        board.kill(state)
    port = free_port()
    child = multiprocessing.get_context("fork").Process(
        target=serve_replay, args=([r for r in readings if r], port, data), daemon=True)
    child.start()
    try:
        replay = run(f"http://127.0.0.1:{port}", child.pid, a.clients, a.seconds)
    finally:
        child.terminate()
        child.join(10)
    out = {"benchmark": "console", "poll_s": 0.1, "cores": os.cpu_count(),
           "reading_bytes": len(json.dumps(readings[-1])),
           "board": {"box": "the simulated board, over its UART", **on_board},
           "replay": {"box": "the simulated board's readings, published 10 a second",
                      **replay}}
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
