# SPDX-License-Identifier: BSD-2-Clause
"""The result files of one QUIC transfer: result.json, packets.csv and the plots."""

from __future__ import annotations

import json
from pathlib import Path

from satemu.report.metrics import origin_cycle, seconds, summarize
from satemu.report.plots import plot_transfer

__all__ = ["write_packets_csv", "write_transfer"]


def write_packets_csv(t, path) -> Path:
    """One row per sent datagram: ``time_s,direction,size,ack_only`` (size in frame bytes,
    ack_only 0/1), in the order the records were made."""
    path = Path(path)
    origin = origin_cycle(t)
    lines = ["time_s,direction,size,ack_only"]
    for r in t.sent:
        lines.append(f"{seconds(t, r.cycle, origin):.9f},{r.direction},{r.size},"
                     f"{int(bool(r.ack_only))}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_transfer(t, outdir) -> dict:
    """result.json (indent 2, sorted keys), packets.csv and the plots into ``outdir``; returns
    the summary."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    summary = summarize(t)
    text = json.dumps(summary, indent=2, sort_keys=True, allow_nan=False, default=str)
    (outdir / "result.json").write_text(text + "\n", encoding="utf-8")
    write_packets_csv(t, outdir / "packets.csv")
    plot_transfer(t, outdir)
    return summary
