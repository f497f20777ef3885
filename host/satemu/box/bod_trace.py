# SPDX-License-Identifier: BSD-2-Clause
"""BoD superframe records in physical units, as CSV rows.

A row per superframe record, columns (:data:`COLUMNS`, in this order):

* ``sf``: superframe number since the BoD block (re)started.
* ``terminal``: whose record it is: a record a terminal a superframe where the profile declares
  terminals (their index in its ``[[terminal]]`` tables, those with frames first; docs/bod.md,
  "Terminals"), else 0, the channel's one terminal. The columns after it are that terminal's.
* ``cycle``: box clock cycle the superframe began, ``bod_start`` + sf x superframe cycles
  (a superframe is bod_slots x bod_slot_cycles), on the clock of the box's other timestamps
  (e.g. the stats' ``snapshot_cycle``). Across a timeline's BoD steps the superframe's length
  and slot bytes change from one superframe to the next (:func:`superframe_segments`).
* ``time_s``: seconds from the start of superframe 0 to the start of this one.
* ``rbdc_req_kbps``: the RBDC rate the terminal requested in this superframe, kbit/s of slot
  payload.
* ``vbdc_req_bytes``: the VBDC volume the terminal requested in this superframe, bytes of slot
  payload.
* ``background_slots``: slots the other terminals took (background demand served).
* ``granted_cra``, ``granted_rbdc``, ``granted_vbdc``, ``granted_fca``: slots granted for this
  superframe, by type; ``granted_slots``: their sum.
* ``used_slots``: granted slots that carried at least one byte.
* ``granted_kbps``, ``used_kbps``: those two as kbit/s of slot payload.
* ``backlog_bytes``: bytes queued (frame and overhead, not yet sent) at the superframe's start.
"""

from __future__ import annotations

import csv
import io
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Sequence

from satemu.base.records import BodRecord
from satemu.base.regmap import BOD_RATE_ONE

__all__ = ["COLUMNS", "csv_text", "records_to_rows", "write_csv", "superframe_segments", "superframe_at"]

COLUMNS = ["sf", "terminal", "cycle", "time_s", "rbdc_req_kbps", "vbdc_req_bytes", "background_slots",
           "granted_cra", "granted_rbdc", "granted_vbdc", "granted_fca", "granted_slots",
           "used_slots", "granted_kbps", "used_kbps", "backlog_bytes"]


def superframe_segments(regs, start: int, commits: Sequence = (),
                        superframes: int | Iterable[BodRecord] = 1
                        ) -> list[tuple[int, int, int, int]]:
    """The superframes 0 .. ``superframes`` - 1 of a BoD channel whose superframe 0 began at
    cycle ``start`` with the profile ``regs``, as stretches of one shape: (first superframe,
    cycles from superframe 0's start to its start, superframe cycles, slot bytes). A later commit
    (``satemu.model.channel.Commit``: a timeline's step) gives its shape to the first
    superframe that begins after its cycle, as the BoD block takes it (satemu.model.bod).
    ``superframes`` may instead be the records: every superframe up to the last one's."""
    if not isinstance(superframes, int):
        superframes = 1 + max((r.sf for r in superframes), default=0)
    pending = sorted(((c.cycle, c.regs) for c in commits), key=lambda c: c[0])
    out: list[tuple[int, int, int, int]] = []
    r, t, k, i = regs, start, 0, 0
    while k < superframes:
        while i < len(pending) and pending[i][0] < t:
            r = pending[i][1]
            i += 1
        cycles = max(1, r.bod_slots * r.bod_slot_cycles)
        if not out or out[-1][2:] != (cycles, r.bod_slot_bytes):
            out.append((k, t - start, cycles, r.bod_slot_bytes))
        n = superframes - k
        if i < len(pending):            # up to the first superframe after the next commit
            n = min(n, -(-(pending[i][0] + 1 - t) // cycles))
        k, t = k + n, t + n * cycles
    return out


def superframe_at(segments: Sequence, sf: int) -> tuple[int, int, int]:
    """Superframe ``sf``'s (cycles from superframe 0's start, cycles, slot bytes), from
    :func:`superframe_segments`."""
    first, offset, cycles, slot_bytes = next(s for s in reversed(segments) if s[0] <= sf)
    return offset + (sf - first) * cycles, cycles, slot_bytes


def records_to_rows(records: Iterable[BodRecord], start: int, superframe_cycles: int,
                    f_clk: int, slot_bytes: int, segments: Sequence | None = None) -> list[dict]:
    """One row per record (columns :data:`COLUMNS`): slots as they are, the cycle the
    superframe began (superframe 0 began at cycle ``start``, each lasts ``superframe_cycles``
    of the ``f_clk`` clock), time from the start of superframe 0, and rates in kbit/s of slot
    payload (``slot_bytes`` per slot). ``segments`` (:func:`superframe_segments`), when given,
    holds each superframe's own start, length and slot bytes across a timeline's BoD steps."""
    segments = segments or [(0, 0, superframe_cycles, slot_bytes)]

    def row(r):
        offset, cycles, nbytes = superframe_at(segments, r.sf)
        kbps_per_slot = Fraction(nbytes * 8 * f_clk, cycles * 1000)

        def kbps(slots):
            return round(float(slots * kbps_per_slot), 3)

        return {"sf": r.sf, "terminal": r.terminal, "cycle": start + offset,
                "time_s": round(float(Fraction(offset, f_clk)), 6),
                "rbdc_req_kbps": kbps(Fraction(r.rbdc_req, BOD_RATE_ONE)),
                "vbdc_req_bytes": r.vbdc_req * nbytes, "background_slots": r.bg,
                "granted_cra": r.g_cra, "granted_rbdc": r.g_rbdc, "granted_vbdc": r.g_vbdc,
                "granted_fca": r.g_fca, "granted_slots": r.granted, "used_slots": r.used,
                "granted_kbps": kbps(r.granted), "used_kbps": kbps(r.used),
                "backlog_bytes": r.backlog}

    return [row(r) for r in records]


def csv_text(rows: Sequence[dict]) -> str:
    """The rows as CSV with a header line, columns in :data:`COLUMNS` order."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def write_csv(rows: Sequence[dict], path) -> Path:
    """The rows as CSV (``csv_text``) in file ``path``."""
    path = Path(path)
    path.write_text(csv_text(rows), encoding="utf-8")
    return path
