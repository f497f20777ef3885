# SPDX-License-Identifier: BSD-2-Clause
"""A scenario's results: each flow's times, goodput and return-link cost, each terminal's
share of the return pool, and the fairness across them (result.json, flows.csv,
objects.csv, packets.csv with each datagram's flow)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

__all__ = ["jain", "summarize_scenario", "write_scenario"]


def jain(values) -> float | None:
    """Jain's fairness index of ``values``: (sum x)^2 / (n sum x^2), 1 when all are equal,
    1/n when one takes everything; None for no values or all zero."""
    xs = [float(x) for x in values]
    sq = sum(x * x for x in xs)
    return None if not xs or sq == 0 else sum(xs) ** 2 / (len(xs) * sq)


def _flow(run, i: int) -> dict:
    f = run.flows[i]
    spec = f.spec
    sent = [p for p in run.sent if p.flow == i]
    fwd = [p for p in sent if p.direction == "forward"]
    ret = [p for p in sent if p.direction == "return"]
    start = float(spec.start)
    objects = f.objects()
    done = f.done
    completion = max(o["completed_s"] for o in objects) - start if done else None
    upload = spec.workload.kind == "upload"
    data, acks = (ret, fwd) if upload else (fwd, ret)
    ack_only = sum(p.ack_only for p in acks)
    for o in objects:
        for k in ("requested_s", "first_byte_s", "completed_s"):
            if o[k] is not None:
                o[k] = o[k] - start
        o["time_s"] = (o["completed_s"] - o["requested_s"]
                       if o["completed_s"] is not None else None)
    handshakes = [c.handshake_at - c.started_at for c in f.clients
                  if c.handshake_at is not None and c.started_at is not None]
    return {
        **spec.to_dict(),
        "completed": done, "error": f.error,
        "completion_s": completion,
        "handshake_s": handshakes[0] if handshakes else None,
        "bytes": spec.workload.total,
        "goodput_mbps": (spec.workload.total * 8 / completion / 1e6) if completion else None,
        "connections": len(f.clients),
        "forward_packets": len(fwd), "forward_bytes": sum(p.size for p in fwd),
        "return_packets": len(ret), "return_bytes": sum(p.size for p in ret),
        # the receiver's ACK-only packets, and the data packets each stands for
        "ack_only_packets": ack_only,
        "ack_ratio": (len(data) / ack_only) if ack_only else None,
        "return_share_pct": (100 * sum(p.size for p in ret) / sum(p.size for p in fwd)
                             if fwd else None),
        "objects": objects,
    }


def _terminals(run) -> list[dict] | None:
    """Each terminal's share of the return pool over the run, from the BoD records."""
    terms = run.scenario.profile.terminals
    if terms is None or run.bod is None:
        return None
    rows = []
    for index, t in enumerate(terms.terminals):
        recs = [r for r in run.bod["records"] if r.get("terminal", 0) == index]
        granted = {k: sum(r[f"g_{k}"] for r in recs) for k in ("cra", "rbdc", "vbdc", "fca")}
        rows.append({
            "terminal": t.name, "index": index, "synthetic": t.synthetic,
            "superframes": len(recs),
            "rbdc_requested": sum(r["rbdc_req"] for r in recs),
            "vbdc_requested": sum(r["vbdc_req"] for r in recs),
            "granted": granted, "granted_slots": sum(granted.values()),
            "used_slots": sum(r["used"] for r in recs),
            "backlog_mean_bytes": (sum(r["backlog"] for r in recs) / len(recs)) if recs else 0,
        })
    return rows


def summarize_scenario(run) -> dict:
    """The content of a scenario's result.json."""
    flows = [_flow(run, i) for i in range(len(run.flows))]
    terminals = _terminals(run)
    goodputs = [f["goodput_mbps"] for f in flows if f["goodput_mbps"] is not None]
    framed = [t["granted_slots"] for t in terminals or () if not t["synthetic"]]
    return {
        "scenario": run.scenario.name, "description": run.scenario.description,
        "profile": run.scenario.profile.name, "engine": run.engine, "f_clk": run.f_clk,
        "seed": run.scenario.seed,
        "completed": all(f["completed"] for f in flows),
        "flows": flows, "terminals": terminals,
        "fairness": {
            "goodput_jain": jain(goodputs) if len(goodputs) == len(flows) else None,
            "slots_granted_jain": jain(framed) if framed else None,
        },
        "board": {d: dict(v) for d, v in run.board_stats.items()},
        "undecodable": run.undecodable, "unrouted": run.unrouted,
        "virtual_s": run.virtual_s, "wall_s": run.wall_s,
        "exactness": run.exactness, "timeline": run.timeline, "capture": run.capture,
    }


FLOW_COLUMNS = ("name", "terminal", "stack", "ack", "cc", "workload", "bytes", "start_s",
                "completed", "completion_s", "goodput_mbps", "forward_packets",
                "forward_bytes", "return_packets", "return_bytes", "ack_only_packets",
                "ack_ratio")


def write_scenario(run, outdir) -> dict:
    """result.json, flows.csv (a row a flow), objects.csv (a row an object) and packets.csv
    (a row a datagram, with its flow) into ``outdir``; returns the summary."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    s = summarize_scenario(run)
    (outdir / "result.json").write_text(json.dumps(s, indent=2, sort_keys=True,
                                                   allow_nan=False, default=str) + "\n")
    with open(outdir / "flows.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FLOW_COLUMNS)
        for f in s["flows"]:
            stacks = f["stacks"]
            row = dict(f, stack=stacks["client"] if stacks["client"] == stacks["server"]
                       else f"{stacks['client']}/{stacks['server']}",
                       cc=f["settings"]["cc"], workload=f["workload"]["kind"])
            w.writerow([row[c] if row[c] is not None else "" for c in FLOW_COLUMNS])
    with open(outdir / "objects.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("flow", "index", "method", "size", "requested_s", "first_byte_s",
                    "completed_s", "time_s", "error"))
        for f in s["flows"]:
            for o in f["objects"]:
                w.writerow([f["name"]] + ["" if o[k] is None else o[k] for k in
                                          ("index", "method", "size", "requested_s",
                                           "first_byte_s", "completed_s", "time_s", "error")])
    names = [f.spec.name for f in run.flows]
    with open(outdir / "packets.csv", "w", newline="") as fh:
        fh.write("time_s,flow,direction,size,ack_only\n")
        for p in run.sent:
            fh.write(f"{(p.cycle - run.origin) / run.f_clk:.9f},{names[p.flow]},"
                     f"{p.direction},{p.size},{int(bool(p.ack_only))}\n")
    return s
