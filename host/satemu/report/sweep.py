# SPDX-License-Identifier: BSD-2-Clause
"""A sweep's results: results.csv and results.json, its plots and its section of report.md."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Sequence

from satemu.report.plots import _figure, _headroom, _save
from satemu.report.tables import format_bytes

__all__ = ["write_results", "plot_return_bytes", "plot_goodput_vs_return_rate",
           "plot_return_pps_vs_return_rate", "plot_vs_return_rate", "sweep_markdown"]


def write_results(rows: Sequence[dict], out, failed: Sequence[dict] = ()) -> tuple[Path, Path]:
    """``out``/results.csv (one row per run, the union of the rows' columns in first-seen
    order) and ``out``/results.json (the rows, and the points that failed)."""
    out = Path(out)
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    csv_path, json_path = out / "results.csv", out / "results.json"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, restval="", lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow({k: "" if v is None else v for k, v in row.items()})
    json_path.write_text(json.dumps({"rows": list(rows), "failed": list(failed)}, indent=2,
                                    default=str) + "\n", encoding="utf-8")
    return csv_path, json_path


def _group(row: dict) -> str:
    """What a row shares with the rows it is compared with: all but policy and seed."""
    parts = [row["profile"], format_bytes(row["size"])]
    if row["cc"] != "reno":
        parts.append(row["cc"])
    if row.get("stacks", "aioquic/aioquic") != "aioquic/aioquic":
        parts.append(row["stacks"])
    if row.get("max_datagram", 1472) != 1472:
        parts.append(f"{row['max_datagram']} B")
    return ", ".join(parts)


def plot_return_bytes(rows: Sequence[dict], path) -> Path:
    """Return bytes per ACK policy, a bar per profile and size (the mean over seeds)."""
    policies = list(dict.fromkeys(r["ack"] for r in rows))
    groups = list(dict.fromkeys(_group(r) for r in rows))
    values = defaultdict(list)
    for r in rows:
        values[_group(r), r["ack"]].append(r["return_bytes"])
    fig, ax = _figure()
    width = 0.8 / max(len(groups), 1)
    top = 0.0
    for i, g in enumerate(groups):
        xs, ys = [], []
        for j, ack in enumerate(policies):
            if values[g, ack]:
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(mean(values[g, ack]) / 1000)
        ax.bar(xs, ys, width, label=g)
        top = max([top, *ys])
    ax.set_xticks(range(len(policies)), policies)
    ax.set_xlabel("ACK policy")
    ax.set_ylabel("return bytes (KB, frames without FCS)")
    ax.set_title("Return-link load by ACK policy")
    _headroom(ax, top)
    ax.legend(fontsize="small", ncols=2)
    return _save(fig, Path(path))


# The parameters a sweep's row is keyed by, apart from the return rate and the seed, as they
# name a line of a plot against the return rate (only those that vary among the rows do).
_LINE_KEYS = (("ack", "ACK {}"), ("cc", "{}"), ("stacks", "{}"), ("max_datagram", "{} B"),
              ("initial_window", "IW {}"), ("initial_rtt_ms", "initial RTT {} ms"),
              ("max_ack_delay_ms", "max_ack_delay {} ms"), ("stream_window", "stream window {}"),
              ("conn_window", "connection window {}"))


def _line_label(row: dict, varying: Sequence[str]) -> str:
    parts = [fmt.format(row.get(k)) for k, fmt in _LINE_KEYS if k in varying]
    others = [o for o in row.get("overrides", "").split(";")
              if o and not o.startswith("return.rate=")]
    if "base" in varying:
        parts.append(", ".join([row["base_profile"], format_bytes(row["size"])] + others))
    return ", ".join(parts)


def plot_vs_return_rate(rows: Sequence[dict], path, figure: str, ylabel: str,
                        title: str) -> Path | None:
    """``figure`` (a results.csv column) against the return link's rate, a line per
    combination of the other parameters that vary (ACK policy, controller, stacks, datagram
    size, ...), the mean over seeds; None when the return rate takes fewer than two values."""
    rated = [r for r in rows if r.get("return_rate_bps") and r.get(figure) is not None]
    if len({r["return_rate_bps"] for r in rated}) < 2:
        return None
    varying = [k for k, _ in _LINE_KEYS if len({str(r.get(k)) for r in rated}) > 1]
    if len({_line_label(r, ["base"]) for r in rated}) > 1:
        varying.append("base")
    lines = defaultdict(lambda: defaultdict(list))
    for r in rated:
        lines[_line_label(r, varying) or r["ack"]][r["return_rate_bps"]].append(r[figure])
    fig, ax = _figure()
    top = 0.0
    for label, points in lines.items():
        xs = sorted(points)
        ys = [mean(points[x]) for x in xs]
        ax.plot([x / 1e6 for x in xs], ys, marker="o", label=label)
        top = max([top, *ys])
    ax.set_xscale("log")
    rates = sorted({r["return_rate_bps"] / 1e6 for r in rated})
    ax.set_xticks(rates, [f"{x:g}" for x in rates])
    ax.minorticks_off()
    ax.set_xlabel("return link rate (Mbit/s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _headroom(ax, top)
    ax.legend(fontsize="small")
    return _save(fig, Path(path))


def plot_goodput_vs_return_rate(rows: Sequence[dict], path) -> Path | None:
    """Forward goodput against the return link's rate (:func:`plot_vs_return_rate`)."""
    return plot_vs_return_rate(rows, path, "goodput_mbps", "forward goodput (Mbit/s)",
                               "Forward goodput against return rate")


def plot_return_pps_vs_return_rate(rows: Sequence[dict], path) -> Path | None:
    """Return packets per second against the return link's rate (:func:`plot_vs_return_rate`)."""
    return plot_vs_return_rate(rows, path, "return_pps", "return packets per second",
                               "Return packet rate against return rate")


def sweep_markdown(rows: Sequence[dict], failed: Sequence[dict], out) -> list[str]:
    """The sweep's section of report.md: its plots (written into ``out``), the results files
    and the points that failed."""
    out = Path(out)
    lines = ["", "## Sweep", "",
             f"{len(rows)} runs; one row each, keyed by all their parameters, in "
             "[results.csv](results.csv) and [results.json](results.json)."]
    if rows:
        plot_return_bytes(rows, out / "sweep_return_bytes.png")
        lines += ["", "![return bytes by ACK policy](sweep_return_bytes.png)"]
        if plot_goodput_vs_return_rate(rows, out / "sweep_goodput_vs_return_rate.png"):
            lines += ["", "![forward goodput against return rate]"
                          "(sweep_goodput_vs_return_rate.png)"]
        if plot_return_pps_vs_return_rate(rows, out / "sweep_return_pps_vs_return_rate.png"):
            lines += ["", "![return packets per second against return rate]"
                          "(sweep_return_pps_vs_return_rate.png)"]
    if failed:
        lines += ["", "Failed (a rerun retries them):", ""]
        lines += [f"* {f['label']}: {f['error']}" + (f" (log: `{f['log']}`)" if f["log"] else "")
                  for f in failed]
    return lines
