# SPDX-License-Identifier: BSD-2-Clause
"""A scenario's results: each flow's times, goodput and return-link cost, each terminal's
share of the return pool, and the fairness across them (result.json, flows.csv,
objects.csv, packets.csv with each datagram's flow)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

__all__ = ["jain", "summarize_scenario", "write_scenario", "plot_scenario",
           "scenario_sweep_markdown", "first_against_others"]

SCENARIO_PLOTS = ("flows_goodput", "objects")


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
    """Each terminal's share of the return pool over the run, from the BoD records, and what
    its flows' hosts sent toward port B."""
    terms = run.scenario.profile.terminals
    if terms is None or run.bod is None:
        return None
    b = run.bod
    superframe_s = b["superframe_cycles"] / b.get("f_clk", run.f_clk)   # a box's, in real time
    sent = {}
    for p in run.sent:
        if p.direction == "return":
            who = run.flows[p.flow].spec.terminal
            n, size = sent.get(who, (0, 0))
            sent[who] = (n + 1, size + p.size)
    rows = []
    for index, t in enumerate(terms.terminals):
        recs = [r for r in b["records"] if r.get("terminal", 0) == index]
        granted = {k: sum(r[f"g_{k}"] for r in recs) for k in ("cra", "rbdc", "vbdc", "fca")}
        used = sum(r["used"] for r in recs)
        backlog = (sum(r["backlog"] for r in recs) / len(recs)) if recs else 0
        # Little's law over the run: the mean backlog over the mean rate the slots carried
        # it away (slot bytes a used slot); an estimate, not each frame's own wait.
        rate = used * b["slot_bytes"] / (len(recs) * superframe_s) if recs else 0
        rows.append({
            "terminal": t.name, "index": index, "synthetic": t.synthetic,
            "superframes": len(recs),
            "return_packets": sent.get(t.name, (0, 0))[0],
            "return_bytes": sent.get(t.name, (0, 0))[1],
            "rbdc_requested": sum(r["rbdc_req"] for r in recs),
            "vbdc_requested": sum(r["vbdc_req"] for r in recs),
            "granted": granted, "granted_slots": sum(granted.values()),
            "used_slots": used, "backlog_mean_bytes": backlog,
            "queueing_delay_s_est": backlog / rate if rate else None,
            # the channels' own counters of its frames, both ways (none for a synthetic one)
            "counters": {d: c.get(str(index)) for d, c in (run.terminal_stats or {}).items()
                         if str(index) in c} or None,
        })
    return rows


def _delay_ms(ns: list) -> dict:
    """Datagrams' one-way delays (ns) as their count, mean, median, 99th percentile and
    maximum in ms (nearest rank; None for no datagram)."""
    xs = sorted(ns)
    if not xs:
        return {"datagrams": 0, "mean_ms": None, "p50_ms": None, "p99_ms": None, "max_ms": None}

    def rank(q: float) -> float:
        return xs[max(0, -(-len(xs) * q // 100) - 1)] / 1e6
    return {"datagrams": len(xs), "mean_ms": sum(xs) / len(xs) / 1e6, "p50_ms": rank(50),
            "p99_ms": rank(99), "max_ms": xs[-1] / 1e6}


def _one_way(run, flows: list[int]) -> dict:
    """What the captures measured of ``flows``' datagrams each way: their one-way delays and
    how many were sent but never arrived (real time only)."""
    return {d: dict(_delay_ms([x for i in flows for x in run.delays[i][d]]),
                    lost=sum(run.delays[i]["lost"][d] for i in flows))
            for d in ("forward", "return")}


def summarize_scenario(run) -> dict:
    """The content of a scenario's result.json."""
    flows = [_flow(run, i) for i in range(len(run.flows))]
    measured = None
    if getattr(run, "delays", None) is not None:        # real time: from the captures
        for i, f in enumerate(flows):
            f["one_way"] = _one_way(run, [i])
        by_terminal: dict = {}
        for i, f in enumerate(run.flows):
            by_terminal.setdefault(f.spec.terminal or "port A", []).append(i)
        measured = {t: _one_way(run, fl) for t, fl in by_terminal.items()}
    terminals = _terminals(run)
    goodputs = [f["goodput_mbps"] for f in flows if f["goodput_mbps"] is not None]
    framed = [t["granted_slots"] for t in terminals or () if not t["synthetic"]]
    return {
        "scenario": run.scenario.name, "description": run.scenario.description,
        "profile": run.scenario.profile.name, "engine": run.engine, "f_clk": run.f_clk,
        "seed": run.scenario.seed,
        "completed": all(f["completed"] for f in flows),
        "flows": flows, "terminals": terminals, "measured_by_terminal": measured,
        "fairness": {
            "goodput_jain": jain(goodputs) if len(goodputs) == len(flows) else None,
            "slots_granted_jain": jain(framed) if framed else None,
        },
        "board": {d: dict(v) for d, v in run.board_stats.items()},
        "no_terminals_frames": {d: c.get("none") for d, c in
                                (run.terminal_stats or {}).items()} or None,
        "undecodable": run.undecodable, "unrouted": run.unrouted,
        "virtual_s": run.virtual_s, "wall_s": run.wall_s,
        "exactness": run.exactness, "timeline": run.timeline, "capture": run.capture,
    }


FLOW_COLUMNS = ("name", "terminal", "stack", "ack", "cc", "workload", "bytes", "start_s",
                "completed", "completion_s", "goodput_mbps", "forward_packets",
                "forward_bytes", "return_packets", "return_bytes", "ack_only_packets",
                "ack_ratio")


def _flow_row(f: dict) -> dict:
    """A flow of result.json as a row of flows.csv (FLOW_COLUMNS): its stacks, controller and
    workload's kind in a word each (``/h3`` after the kind: over HTTP/3)."""
    stacks, w = f["stacks"], f["workload"]
    return dict(f, stack=stacks["client"] if stacks["client"] == stacks["server"]
                else f"{stacks['client']}/{stacks['server']}", cc=f["settings"]["cc"],
                workload=w["kind"] + ("/h3" if w.get("protocol") == "h3" else ""))


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
            row = _flow_row(f)
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
    plot_scenario(run, outdir)
    names = [f.spec.name for f in run.flows]
    with open(outdir / "packets.csv", "w", newline="") as fh:
        fh.write("time_s,flow,direction,size,ack_only\n")
        for p in run.sent:
            fh.write(f"{(p.cycle - run.origin) / run.f_clk:.9f},{names[p.flow]},"
                     f"{p.direction},{p.size},{int(bool(p.ack_only))}\n")
    return s


def plot_scenario(run, outdir) -> list[Path]:
    """A scenario's PNGs: each flow's goodput over time, a line a flow (its data direction's
    delivered frame bytes); each object from its request to its completion, a bar an object,
    by flow; on a BoD return link, the pool's demand and grants above each terminal's grants."""
    from matplotlib import colormaps
    from satemu.report.metrics import bin_width, binned
    from satemu.report.plots import _figure, _headroom, _save, plot_demand_grant
    outdir = Path(outdir)
    cmap = colormaps["tab10"]
    paths = []
    ms, label = bin_width(run)
    bin_s = ms / 1000
    fig, ax = _figure()
    top = 0.0
    for i, f in enumerate(run.flows):
        way = "return" if f.spec.workload.kind == "upload" else "forward"
        series = [b * 8 / bin_s / 1e6 for b in binned(
            run, [d for d in run.delivered if d.flow == i and d.direction == way],
            lambda d: d.size)]
        ax.stairs(series, [k * bin_s for k in range(len(series) + 1)], color=cmap(i % 10),
                  label=f"{f.spec.name} ({way})", linewidth=1.5)
        top = max([top, *series])
    _headroom(ax, top)
    ax.set_title(f"Goodput by flow, per {label} ({run.scenario.name})")
    ax.set_xlabel("time since the run's first datagram (s)")
    ax.set_ylabel(f"delivered frame bytes (Mbit/s, {label} bins)")
    ax.legend(loc="upper right", fontsize="small")
    paths.append(_save(fig, outdir / "flows_goodput.png"))

    fig, ax = _figure()
    y, ticks = 0, []
    for i, f in enumerate(run.flows):
        for o in f.objects():
            end = o["completed_s"] if o["completed_s"] is not None else run.virtual_s
            start = o["requested_s"] if o["requested_s"] is not None else end
            ax.barh(y, end - start, left=start, color=cmap(i % 10),
                    alpha=1.0 if o["completed_s"] is not None else 0.3)
            ticks.append((y, f"{f.spec.name} #{o['index']} ({o['size'] / 1000:g} KB)"))
            y += 1
    ax.set_yticks([t for t, _ in ticks], [n for _, n in ticks], fontsize="x-small")
    ax.invert_yaxis()
    ax.set_title(f"Objects from request to completion ({run.scenario.name})")
    ax.set_xlabel("time since the run's start (s)")
    paths.append(_save(fig, outdir / "objects.png"))

    if run.bod:
        from satemu.base.records import BodRecord
        from satemu.box.bod_trace import records_to_rows
        b = run.bod
        rows = records_to_rows([BodRecord(**r) for r in b["records"]], b["start"],
                               b["superframe_cycles"], b.get("f_clk", run.f_clk), b["slot_bytes"],
                               b.get("segments"))
        labels = {}
        terms = run.scenario.profile.terminals
        if terms is not None:          # the synthetic terminals' grants as one band
            synthetic = {i for i, t in enumerate(terms.terminals) if t.synthetic}
            labels = {i: t.name for i, t in enumerate(terms.terminals)}
            if synthetic:
                group = max(synthetic)
                labels[group] = f"synthetic ({len(synthetic)})"
                merged, out = {}, []
                for r in rows:
                    if r["terminal"] not in synthetic:
                        out.append(r)
                    elif r["sf"] not in merged:
                        merged[r["sf"]] = dict(r, terminal=group)
                    else:
                        m = merged[r["sf"]]
                        for k, v in r.items():
                            if k not in ("sf", "terminal", "cycle", "time_s", "background_slots"):
                                m[k] += v
                rows = sorted(out + list(merged.values()), key=lambda r: (r["sf"], r["terminal"]))
        paths.append(plot_demand_grant(rows, outdir / "demand_grant.png",
                                       f"BoD return pool ({run.scenario.name})", labels))
    return paths


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def first_against_others(s: dict) -> dict:
    """What a run's first flow took and what the others got (the shared-return study's
    measure): its return packets and bytes and its terminal's slots; the other flows' mean
    goodput and mean object time; the slots granted to the other terminals with frames and to
    the synthetic ones."""
    first, others = s["flows"][0], s["flows"][1:]
    terms = s.get("terminals") or []
    mine = [t for t in terms if t["terminal"] == first["terminal"]]
    times = [o["time_s"] for f in others for o in f["objects"]]
    return {
        "first_return_packets": first["return_packets"],
        "first_return_bytes": first["return_bytes"],
        "first_terminal_slots_used": mine[0]["used_slots"] if mine else None,
        "others_goodput_mbps": _mean(f["goodput_mbps"] for f in others),
        "others_object_s": _mean(times) if times and None not in times else None,
        "other_terminals_slots": sum(t["granted_slots"] for t in terms
                                     if not t["synthetic"] and t["terminal"] !=
                                     first["terminal"]) if terms else None,
        "synthetic_slots": sum(t["granted_slots"] for t in terms if t["synthetic"])
        if terms else None,
    }


def _cell(v, spec=".3f") -> str:
    if v is None:
        return "-"
    return format(v, spec) if isinstance(v, float) else str(v)


def scenario_sweep_markdown(runs, rows, failed, out, title: str) -> Path:
    """A scenario sweep's flows.csv (a row a flow of each run) and report.md: a table of the
    runs (each flow's completion and goodput, the fairness), the first flow against the others
    (where its settings vary), links to each run's plots, the points that failed. ``runs``:
    (point, its run directory) of each run done."""
    out = Path(out)
    summaries = [(p, json.loads((d / "result.json").read_text())) for p, d in runs]
    columns = ["point", "overrides", "seed", "flow"] + [c for c in FLOW_COLUMNS if c != "name"]
    with open(out / "flows.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for p, s in summaries:
            for f in s["flows"]:
                row = dict(_flow_row(f), point=p.id, seed=p.seed, flow=f["name"],
                           overrides=";".join(f"{k}={v}" for k, v in p.overrides))
                w.writerow(["" if row[c] is None else row[c] for c in columns])
    lines = [f"# {title}", ""]
    if summaries:
        names = [f["name"] for f in summaries[0][1]["flows"]]
        lines += [f"{len(summaries)} runs of {summaries[0][0].base}; a row each in "
                  "[results.csv](results.csv), a row a flow in [flows.csv](flows.csv).", "",
                  "| run | " + " | ".join(f"{n}: s, Mbit/s" for n in names)
                  + " | Jain goodput | Jain slots |",
                  "|---|" + "---|" * (len(names) + 2)]
        for p, s in summaries:
            cells = [f"{_cell(f['completion_s'])}, {_cell(f['goodput_mbps'])}"
                     if f["completed"] else "NOT done" for f in s["flows"]]
            fair = s["fairness"]
            lines.append(f"| {_label(p)} | " + " | ".join(cells) + f" | "
                         f"{_cell(fair['goodput_jain'])} | {_cell(fair['slots_granted_jain'])} |")
        if len(names) > 1:
            lines += ["", f"## What {names[0]} takes from the others", "",
                      f"{names[0]}'s return packets and bytes and the slots its terminal used; the "
                      "other flows' mean goodput and mean object time; the slots granted to "
                      "the other terminals with frames and to the synthetic ones.", "",
                      "| run | return packets | return bytes | slots used | others' goodput "
                      "Mbit/s | others' object s | others' slots | synthetic slots |",
                      "|---|---|---|---|---|---|---|---|"]
            for p, s in summaries:
                c = first_against_others(s)
                lines.append(f"| {_label(p)} | " + " | ".join(_cell(c[k]) for k in (
                    "first_return_packets", "first_return_bytes", "first_terminal_slots_used",
                    "others_goodput_mbps", "others_object_s", "other_terminals_slots",
                    "synthetic_slots")) + " |")
        lines += ["", "## Each run's plots", ""]
        for p, s in summaries:
            rel = p.run_rel.as_posix()
            plots = list(SCENARIO_PLOTS) + (["demand_grant"] if s["terminals"] else [])
            lines.append(f"* {_label(p)}: " + ", ".join(f"[{n}]({rel}/{n}.png)" for n in plots))
    if failed:
        lines += ["", "Failed (a rerun retries them):", ""]
        lines += [f"* {f['label']}: {f['error']}" + (f" (log: `{f['log']}`)" if f["log"] else "")
                  for f in failed]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _label(p) -> str:
    """A run by its --set values, each shortened to 48 characters, and its seed."""
    parts = [f"{f}={v if len(v) <= 48 else v[:45] + '...'}" for f, v in p.overrides]
    return ", ".join(parts + [f"seed {p.seed}"])
