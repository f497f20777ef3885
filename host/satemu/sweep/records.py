# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's records on disk: a finished point's files and its key, which resuming checks."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path

from satemu.link.profile import load_profile, parse_profile
from satemu.sweep.points import Point

RECORD = "point.json"           # in a point's run directory: its key and figures, once done
CAPTURE = "capture.pcapng"      # in a point's run directory, with --pcap
# The summary's figures each row of results.csv carries (satemu.report.metrics.summarize).
FIGURES = ("completed", "error", "outcome", "completion_s", "goodput_mbps", "forward_packets",
           "forward_bytes", "return_packets", "return_bytes", "return_share_pct",
           "ack_only_packets", "ack_ratio", "return_pps", "consistent", "virtual_s", "wall_s",
           "speed")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def record_of(point: Point, out: Path) -> dict | None:
    """The record of ``point`` under ``out`` if it is done (same key), else None."""
    path = Path(out) / point.run_rel / RECORD
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("id") != point.id or record.get("key") != point.key():
        return None
    if not (path.parent / "result.json").exists():
        return None
    if point.pcap and not (path.parent / CAPTURE).exists():
        return None
    return record


def scenario_row(point, summary: dict) -> dict:
    """A scenario point's row of results.csv: its parameters, then the run's figures
    (satemu.report.flows.summarize_scenario); its flows' rows are in flows.csv."""
    row = {"point": point.id, "engine": point.engine, "scenario": point.base,
           "overrides": ";".join(f"{f}={v}" for f, v in point.overrides), "seed": point.seed}
    for field, value in point.overrides:
        row[field] = value
    flows = summary["flows"]
    goodputs = [f["goodput_mbps"] for f in flows if f["goodput_mbps"] is not None]
    row.update(completed=summary["completed"], flows=len(flows),
               flows_completed=sum(f["completed"] for f in flows),
               goodput_mbps_mean=sum(goodputs) / len(goodputs) if goodputs else None,
               goodput_jain=summary["fairness"]["goodput_jain"],
               slots_granted_jain=summary["fairness"]["slots_granted_jain"],
               return_bytes=sum(f["return_bytes"] for f in flows),
               return_packets=sum(f["return_packets"] for f in flows),
               virtual_s=summary["virtual_s"], wall_s=summary["wall_s"],
               run_dir=point.run_rel.as_posix())
    return row


def row_of(point: Point, summary: dict, link=None) -> dict:
    """The point's row of results.csv: its parameters, then the summary's figures."""
    if getattr(point, "kind", "") == "scenario":
        return scenario_row(point, summary)
    row = {"point": point.id, **{k: v for k, v in point.key().items() if k != "profile_sha"}}
    row["profile"] = point.name
    row["base_profile"] = point.base
    row["size_text"] = point.size_text
    for field, value in point.overrides:
        row[field] = value
    if link is not None:
        row["forward_rate_bps"] = float(link.forward.rate) if link.forward.rate else None
        row["return_rate_bps"] = float(link.ret.rate) if link.ret.rate else None
    for name in FIGURES:
        row[name] = (summary["consistency"]["consistent"] if name == "consistent"
                     else summary.get(name))
    row["run_dir"] = point.run_rel.as_posix()
    return row


def _store(point: Point, out: Path, outcome: dict) -> dict:
    """Write a finished point's files, then its record (atomically, last: it marks the point
    done)."""
    run = Path(out) / point.run_rel
    run.mkdir(parents=True, exist_ok=True)
    (run / RECORD).unlink(missing_ok=True)
    for name, data in outcome["files"].items():
        _write_atomic(run / name, data)
    link = None
    if getattr(point, "kind", "") != "scenario":
        link = parse_profile(point.toml, point.name) if point.toml \
            else load_profile(point.profile)
    record = {"id": point.id, "key": point.key(), "point": asdict(point) | {"toml": None},
              "row": row_of(point, outcome["summary"], link), "finished": time.time()}
    _write_atomic(run / RECORD, (json.dumps(record, indent=2, sort_keys=True, default=str)
                                 + "\n").encode())
    return record
