# SPDX-License-Identifier: BSD-2-Clause
"""``satemu experiment``: a sweep of QUIC downloads (satemu.sweep), in parallel and resumable,
with its results and report."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from satemu.box.device import DeviceError
from satemu.quic.engine import engine_class
from satemu.quic.settings import SETTINGS
from satemu.cli.args import U64_MAX, given, output_dir, whole
from satemu.cli.errors import UsageError
from satemu.cli.sim import simulated_board
from satemu.cli.transfer import check_ack, endpoint_settings, read_size, transfer_args

SETTINGS_BY_NAME = {s.name: s for s in SETTINGS}
# `satemu experiment`'s defaults for the options a preset (satemu.sweep.PRESETS) may set.
EXPERIMENT_DEFAULTS = {"profile": ["geo-testbed"], "sizes": "100KB",
                       "policies": "default,ratio:2,ratio:10,adaptive,ack-frequency:10",
                       "cc": SETTINGS_BY_NAME["cc"].default(),
                       "stack": SETTINGS_BY_NAME["stack"].default(), "engine": "board"}


def add_experiment(sub) -> None:
    exp = sub.add_parser("experiment", help="a sweep of QUIC downloads, in parallel and "
                         "resumable, with results.csv and a Markdown report",
                         conflict_handler="resolve")
    exp.add_argument("kind", choices=["ack-policy", "constrained-return", "scenario",
                                      "shared-return", "satcom-objects"],
                     help="ack-policy: the sweep the options give; constrained-return: the "
                     "constrained-return-link study's matrix (docs/profiles.md, \"Presets\"), "
                     "each of its options replaced by any given here; scenario: a scenario "
                     "(--scenario) swept over its fields (--set flow.N.KEY=..., a profile "
                     "field) and seeds; shared-return, satcom-objects: the scenario studies "
                     "(docs/scenarios.md, \"Presets\")")
    exp.add_argument("--scenario", metavar="FILE", type=given("a scenario"),
                     help="with 'scenario': a scenario file or built-in name")
    exp.add_argument("--profile", nargs="+", type=given("a profile"),
                     help="one or more profiles (default geo-testbed)")
    exp.add_argument("--sizes", type=given("sizes"), help="comma-separated sizes (default 100KB)")
    exp.add_argument("--policies", type=given("ACK policies"),
                     help="comma-separated ACK policies (default "
                     f"{EXPERIMENT_DEFAULTS['policies']})")
    transfer_args(exp)
    # The sweep's own --engine and --cc (conflict_handler="resolve" replaces transfer_args'):
    # checked by satemu.sweep.plan with a one-line error; --cc takes a list.
    exp.add_argument("--engine", type=given("an engine"),
                     help="what carries the link: 'board' (the simulated board in "
                     "Verilator) or 'model' (the reference models of the same path, far faster) "
                     "(default board)")
    exp.add_argument("--cc", metavar="CC[,CC...]", type=given("congestion controllers"),
                     help="the congestion controllers: reno, cubic, bbr (quinn only) "
                     "(default reno)")
    exp.add_argument("--seeds", metavar="S[,S...]", type=given("seeds"),
                     help="seeds to sweep (default: --seed's one)")
    exp.add_argument("--set", action="append", metavar="FIELD=V1[,V2...]",
                     help="sweep a profile field over values, in the profile's units, e.g. "
                     "return.rate=100kbit/s,1.5Mbit/s or forward.loss=0%%,1%%, or an endpoint "
                     "setting: endpoint.max_datagram=1280,1352, endpoint.initial_rtt=100,333, "
                     "endpoint.initial_window, endpoint.stream_window, endpoint.conn_window, "
                     "endpoint.max_ack_delay, endpoint.ecn=off,ect1, "
                     "endpoint.stack=aioquic,quinn,aioquic/quinn; "
                     "repeatable")
    exp.add_argument("--jobs", type=whole(1, 1024, "a number of processes"), metavar="N",
                     help="points run at once, each on its own engine in its own process "
                     "(default: the machine's cores; 1 with --port)")
    exp.add_argument("--dask", metavar="ADDRESS", type=given("a scheduler's address"),
                     help="run the points on a Dask scheduler, e.g. "
                     "tcp://host:8786, or 'local' for a LocalCluster of --jobs processes")
    exp.add_argument("--force", action="store_true",
                     help="run every point again, even those OUT already holds")
    # None marks an option the command line left alone: the kind's preset, else
    # EXPERIMENT_DEFAULTS, fills it in (cmd_experiment).
    exp.set_defaults(func=cmd_experiment, stack=None)


def cmd_experiment(args) -> int:
    """A sweep of QUIC downloads (satemu.sweep): profiles x --set values x sizes x ACK policies
    x congestion controls x seeds, each point run once, in parallel (--jobs, --dask), resumed
    from what OUT holds; results.csv/json, the table, report.md and its plots."""
    import json
    from satemu.base.boards import BOARDS
    from satemu.report.plots import PACKET_PLOT_NAMES, PLOT_NAMES
    from satemu.report.sweep import sweep_markdown, write_results
    from satemu.report.tables import experiment_markdown, format_table
    from satemu.sweep import PRESETS, parse_sets, plan, split_values
    if args.kind in ("scenario", "shared-return", "satcom-objects"):
        return cmd_scenario_sweep(args)
    if args.scenario:
        raise UsageError(f"--scenario: a sweep of scenarios is 'satemu experiment scenario', "
                         f"not {args.kind}")
    preset = PRESETS[args.kind]
    for option, default in EXPERIMENT_DEFAULTS.items():     # what the command line left alone
        if getattr(args, option) is None:
            setattr(args, option, preset.get(option, default))
    given = {text.partition("=")[0].strip() for text in args.set or ()}
    args.set = [t for t in preset.get("set", ()) if t.partition("=")[0] not in given] + \
        list(args.set or ())
    sizes = [(text, read_size(text)) for text in split_values(args.sizes)]
    policies = [check_ack(a) for a in split_values(args.policies)]
    try:
        seeds = ([whole(0, U64_MAX, "a seed")(s) for s in split_values(args.seeds)]
                 if args.seeds else [args.seed])
    except argparse.ArgumentTypeError:
        raise UsageError(f"--seeds {args.seeds[:40]!r}: whole numbers in 0 .. 2^64-1, such as "
                         "0,1,2") from None
    jobs = _jobs(args)
    # Every point, its profile parsed with its --set values and checked against the simulated
    # board's hardware, before anything starts.
    endpoint, stacks = endpoint_settings(args, cc="reno")     # --cc's list is an axis
    points = plan(args.engine, args.profile, sizes, policies, split_values(args.cc), seeds,
                  parse_sets(args.set), endpoint=endpoint, stacks=stacks,
                  max_time=args.max_time, hardware=BOARDS["sim"].hardware, pcap=args.pcap)
    if args.engine == "board" and not args.dask:     # the workers' engines are theirs
        engine_class("board")
    out = output_dir(Path(args.out or f"satemu-experiment-{args.kind}"), "--out")
    where = (f"on the Dask scheduler {args.dask}" if args.dask else
             f"on {jobs} worker processes" if jobs > 1 else "one after another")
    print(f"{len(points)} point{'' if len(points) == 1 else 's'}, {where}, into {out}",
          file=sys.stderr)
    outcome, failed = _run_points(args, points, out, jobs)
    rows, table = [], []
    for p in points:
        record = outcome.records[p]
        if record is None:
            continue
        rows.append(record["row"])
        s = json.loads((out / p.run_rel / "result.json").read_text())
        # Every plot the run drew: the four, the packets' where they had something to show,
        # the BoD demand and grants, the timeline.
        plots = [name for name in PLOT_NAMES + PACKET_PLOT_NAMES + ("demand_grant",
                                                                    "link_timeline")
                 if (out / p.run_rel / f"{name}.png").exists()]
        table.append((s, {name: str(p.run_rel / f"{name}.png") for name in plots}))
    write_results(rows, out, failed)
    if table:
        print(format_table(table))
    report = experiment_markdown(table, out / "report.md",
                                 "ACK policy on the return link: satemu experiment")
    with open(report, "a", encoding="utf-8") as f:
        f.write("\n".join(sweep_markdown(rows, failed, out)) + "\n")
    print(f"wrote {report}, {out / 'results.csv'} and {out / 'results.json'}"
          f" ({len(outcome.ran)} run now, {len(rows) - len(outcome.ran)} from before"
          + (f", {len(failed)} FAILED: run again to retry them)" if failed else ")"))
    return 0 if not failed and all(s["completed"] and s["consistency"]["consistent"]
                                   for s, _ in table) else 1


def _run_points(args, points, out: Path, jobs: int):
    """Run a sweep's points not done under ``out`` (satemu.sweep.run_sweep): on the board
    engine with one job, on the simulated board --port names or the one 'satemu sim' runs;
    with more, the board built once before the workers launch theirs. Returns the outcome and
    the points that failed, as results.json lists them."""
    from satemu.sweep import record_of, run_sweep
    pending = args.force or any(record_of(p, out) is None for p in points)
    if args.engine == "board" and not args.dask and jobs == 1 and pending:
        with simulated_board(args) as state:        # --port's, or the one 'satemu sim' runs
            outcome = run_sweep(points, out, jobs=1, force=args.force, board=state)
    else:
        if args.engine == "board" and not args.dask and pending:
            board = engine_class("board")
            try:
                board.build_board(verbose=True)     # once, before the workers launch theirs
            except board.BoardError as e:
                raise DeviceError(str(e)) from None
        outcome = run_sweep(points, out, jobs=jobs, dask=args.dask, force=args.force)
    failed = [{"point": p.id, "label": p.label(), "run_dir": p.run_rel.as_posix(),
               "error": error, "log": log} for p, (error, log) in outcome.failed.items()]
    return outcome, failed


def _jobs(args) -> int:
    if args.engine == "model" and (args.port or args.eth_port):
        raise UsageError("--port and --eth-port name a simulated board: not with "
                         "--engine model")
    if args.port and (args.dask or (args.jobs or 1) > 1):
        raise UsageError("--port names one simulated board, which runs the points one by "
                         "one: not with --jobs above 1 or --dask")
    return args.jobs or (1 if args.port else os.cpu_count() or 1)


def cmd_scenario_sweep(args) -> int:
    """`satemu experiment scenario|shared-return|satcom-objects`: a scenario (the study's, or
    --scenario's) at every combination of --set values and --seeds; results.csv (a row a
    run), flows.csv (a row a flow of each run), each run's results and plots, report.md."""
    from satemu.base.boards import BOARDS
    from satemu.report.flows import scenario_sweep_markdown
    from satemu.report.sweep import write_results
    from satemu.sweep import parse_sets, split_values
    from satemu.sweep.scenarios import SCENARIO_PRESETS, plan_scenarios
    preset = SCENARIO_PRESETS[args.kind]
    for flag, value in (("--profile", args.profile), ("--sizes", args.sizes),
                        ("--policies", args.policies), ("--cc", args.cc),
                        ("--stack", args.stack)):
        if value is not None:
            raise UsageError(f"{flag}: a scenario's flows carry their own; sweep them with "
                             f"--set flow.N.KEY=V1,V2")
    for s in SETTINGS:
        if s.name not in ("stack", "cc") and getattr(args, s.name) != s.default():
            raise UsageError(f"{s.option}: a scenario's flows carry their own; sweep it with "
                             f"--set flow.N.{s.name}=V1,V2")
    if args.kind == "scenario" and not args.scenario:
        raise UsageError("experiment scenario needs --scenario FILE (or a built-in name)")
    if args.kind != "scenario" and args.scenario:
        raise UsageError(f"--scenario: {args.kind} is its own scenario; give 'experiment "
                         f"scenario --scenario FILE' to sweep another")
    given = {text.partition("=")[0].strip() for text in args.set or ()}
    sets = [t for t in preset.get("set", ()) if t.partition("=")[0] not in given] + \
        list(args.set or ())
    try:
        seeds = ([whole(0, U64_MAX, "a seed")(x) for x in split_values(args.seeds)]
                 if args.seeds else None)
    except argparse.ArgumentTypeError:
        raise UsageError(f"--seeds {args.seeds[:40]!r}: whole numbers in 0 .. 2^64-1") \
            from None
    engine = args.engine or preset.get("engine", "board")
    args.engine = engine
    jobs = _jobs(args)
    points = plan_scenarios(engine, args.scenario or preset["scenario"], parse_sets(sets),
                            seeds, max_time=args.max_time, hardware=BOARDS["sim"].hardware,
                            pcap=args.pcap)
    if engine == "board" and not args.dask:
        engine_class("board")
    name = args.kind if args.kind != "scenario" else points[0].base
    out = output_dir(Path(args.out or f"satemu-experiment-{name}"), "--out")
    where = (f"on the Dask scheduler {args.dask}" if args.dask else
             f"on {jobs} worker processes" if jobs > 1 else "one after another")
    print(f"{len(points)} run{'' if len(points) == 1 else 's'} of {points[0].base}, {where}, "
          f"into {out}", file=sys.stderr)
    outcome, failed = _run_points(args, points, out, jobs)
    done = [(p, outcome.records[p]) for p in points if outcome.records[p] is not None]
    rows = [r["row"] for _, r in done]
    write_results(rows, out, failed)
    report = scenario_sweep_markdown([(p, out / p.run_rel) for p, _ in done], rows, failed, out,
                                     f"{points[0].base}: satemu experiment {args.kind}")
    print(f"wrote {report}, {out / 'results.csv'}, {out / 'flows.csv'} and "
          f"{out / 'results.json'} ({len(outcome.ran)} run now, {len(rows) - len(outcome.ran)} "
          f"from before" + (f", {len(failed)} FAILED: run again to retry them)" if failed
                            else ")"))
    return 0 if not failed and all(r["completed"] for r in rows) else 1
