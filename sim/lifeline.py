# SPDX-License-Identifier: BSD-2-Clause
"""``python sim/lifeline.py COMMAND...``: runs COMMAND and ends it when this process's stdin
reaches its end (then SIGTERM, SIGKILL after GRACE_S), so that a simulated board ends with the process that launched it
(``sim.board.launch``), however that one ends: the launcher holds the pipe's other end, which
the kernel closes when it exits, SIGKILL included. Exits with COMMAND's status (128 + N
for signal N)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

GRACE_S = 5.0           # after SIGTERM, before SIGKILL


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python sim/lifeline.py COMMAND...", file=sys.stderr)
        return 2
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)

    def watch() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        child.terminate()               # the launcher is gone
        try:
            child.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()

    threading.Thread(target=watch, daemon=True).start()
    status = child.wait()
    return 128 - status if status < 0 else status       # a signal's death as a shell says it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
