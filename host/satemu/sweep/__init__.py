# SPDX-License-Identifier: BSD-2-Clause
"""Sweeps of QUIC downloads: points as pure functions of their parameters, run in parallel."""

# points: the plan; records: a finished point on disk, which resuming checks; worker: a point
# run in any process, on that process's own board; pool and dask: the two parallel executors
# (dask also probes a scheduler before trusting it); run: the sweep, its progress and records.

from satemu.sweep.dask import DASK_TIMEOUT, GREETING_MAX, check_scheduler
from satemu.sweep.points import (CCS, PRESETS, TRACE_FIELDS, Point, derived_name, parse_sets, plan,
    split_values)
from satemu.sweep.records import CAPTURE, FIGURES, RECORD, record_of, row_of
from satemu.sweep.run import Outcome, run_sweep
from satemu.sweep.worker import BOARD, WorkerBoard, release_board, run_point

__all__ = ["Point", "plan", "run_point", "run_sweep", "release_board", "split_values",
           "parse_sets", "record_of", "RECORD", "CCS", "PRESETS"]
