# SPDX-License-Identifier: BSD-2-Clause
"""A status line for a running transfer: redrawn on a terminal, printed now and then in a log."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

from satemu.report.tables import format_bytes

__all__ = ["ProgressLine"]


class ProgressLine:
    """One status line for a running transfer.

    On a TTY the line is redrawn in place with ``\\r`` at every :meth:`update`; on anything else a
    full line is printed at most every ``every`` seconds (the first update always prints), so logs
    stay short. Virtual seconds per wall second are ``sim_cycles_per_s / f_clk`` when ``f_clk``
    is given, else the average since the line was made.
    """

    def __init__(self, total_bytes: int, stream: TextIO | None = None, every: float = 10.0,
                 width: int = 24, f_clk: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total_bytes
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.width = width
        self.f_clk = f_clk
        self.clock = clock
        self.start = clock()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._last_print: float | None = None
        self._pending: str | None = None      # rendered but not yet printed (non-TTY)
        self._drawn = 0                        # length of the line on screen (TTY)

    def render(self, virtual_s: float, bytes_done: int, sim_cycles_per_s: float) -> str:
        frac = min(max(bytes_done / self.total, 0.0), 1.0) if self.total else 0.0
        fill = int(frac * self.width)
        bar = "#" * fill + "." * (self.width - fill)
        if self.f_clk:
            speed = sim_cycles_per_s / self.f_clk
        else:
            wall = self.clock() - self.start
            speed = virtual_s / wall if wall > 0 else 0.0
        return (f"[{bar}] {virtual_s:8.3f} s  {format_bytes(bytes_done)}/{format_bytes(self.total)}"
                f"  {100 * frac:5.1f}%  {speed:.3f} s/s  {sim_cycles_per_s / 1e6:.2f} Mcycles/s")

    def update(self, virtual_s: float, bytes_done: int, sim_cycles_per_s: float) -> None:
        text = self.render(virtual_s, bytes_done, sim_cycles_per_s)
        if self.tty:
            pad = max(self._drawn - len(text), 0)
            self.stream.write("\r" + text + " " * pad)
            self._drawn = len(text)
            self.stream.flush()
            return
        now = self.clock()
        if self._last_print is None or now - self._last_print >= self.every:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last_print = now
            self._pending = None
        else:
            self._pending = text

    def finish(self) -> None:
        """End the line: a newline on a TTY; the latest state, if not yet shown, elsewhere."""
        if self.tty:
            if self._drawn:
                self.stream.write("\n")
                self._drawn = 0
        elif self._pending is not None:
            self.stream.write(self._pending + "\n")
            self._pending = None
        self.stream.flush()
