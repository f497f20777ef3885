# SPDX-License-Identifier: BSD-2-Clause
"""BoD superframe records in physical units, as CSV rows.

A row per superframe record, columns (:data:`COLUMNS`, in this order):

* ``sf``: superframe number since the BoD block (re)started.
* ``cycle``: box clock cycle the superframe began, ``bod_start`` + sf x superframe cycles
  (a superframe is bod_slots x bod_slot_cycles), on the clock of the box's other timestamps
  (e.g. the stats' ``snapshot_cycle``).
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
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Sequence

from .bod_model import BodRecord
from .regmap import BOD_RATE_ONE

__all__ = ["COLUMNS", "records_to_rows", "write_csv"]

COLUMNS = ["sf", "cycle", "time_s", "rbdc_req_kbps", "vbdc_req_bytes", "background_slots",
           "granted_cra", "granted_rbdc", "granted_vbdc", "granted_fca", "granted_slots",
           "used_slots", "granted_kbps", "used_kbps", "backlog_bytes"]


def records_to_rows(records: Iterable[BodRecord], start: int, superframe_cycles: int,
                    f_clk: int, slot_bytes: int) -> list[dict]:
    """One row per record (columns :data:`COLUMNS`): slots as they are, the cycle the
    superframe began (superframe 0 began at cycle ``start``, each lasts ``superframe_cycles``
    of the ``f_clk`` clock), time from the start of superframe 0, and rates in kbit/s of slot
    payload (``slot_bytes`` per slot)."""
    superframe_s = Fraction(superframe_cycles, f_clk)
    kbps_per_slot = slot_bytes * 8 / superframe_s / 1000

    def kbps(slots):
        return round(float(slots * kbps_per_slot), 3)

    return [{"sf": r.sf, "cycle": start + r.sf * superframe_cycles,
             "time_s": round(float(r.sf * superframe_s), 6),
             "rbdc_req_kbps": kbps(Fraction(r.rbdc_req, BOD_RATE_ONE)),
             "vbdc_req_bytes": r.vbdc_req * slot_bytes, "background_slots": r.bg,
             "granted_cra": r.g_cra, "granted_rbdc": r.g_rbdc, "granted_vbdc": r.g_vbdc,
             "granted_fca": r.g_fca, "granted_slots": r.granted, "used_slots": r.used,
             "granted_kbps": kbps(r.granted), "used_kbps": kbps(r.used),
             "backlog_bytes": r.backlog}
            for r in records]


def write_csv(rows: Sequence[dict], path) -> Path:
    """The rows as CSV with a header line, columns in :data:`COLUMNS` order."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return path
