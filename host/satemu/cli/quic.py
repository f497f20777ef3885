# SPDX-License-Identifier: BSD-2-Clause
"""``satemu quic``: one QUIC download across the simulated board or the model in virtual time,
or in real time between two interfaces."""

from __future__ import annotations

from pathlib import Path

from satemu.box.device import DeviceError
from satemu.link.profile import load_profile
from satemu.cli.args import given, output_dir
from satemu.cli.errors import UsageError
from satemu.cli.sim import simulated_board
from satemu.cli.transfer import (check_ack, check_receiver, endpoint_settings, read_size, transfer,
    transfer_args)


def add_quic(sub) -> None:
    quic = sub.add_parser("quic", help="a QUIC download across the simulated board, in its "
                                       "virtual time, with results and plots")
    quic.add_argument("--profile", type=given("a profile"),
                      help="a built-in profile name or a TOML file (simulated board)")
    quic.add_argument("--scenario", metavar="FILE", type=given("a scenario file"),
                      help="several flows in one run, each on a terminal of the scenario's "
                      "profile with its own stacks, ACK policy, settings, seed, start and "
                      "workload (a TOML file: docs/scenarios.md); in place of --profile")
    quic.add_argument("--size", default="1MB", help="bytes to download, e.g. 100KB, 10MB")
    quic.add_argument("--ack", default="default", help="the client's ACK policy: default, "
                      "ratio:N, adaptive, ack-frequency:N, chromium, picoquic, quicly:N or neqo[:R] "
                      "(default %(default)s)")
    transfer_args(quic)
    quic.add_argument("--compare", action="store_true",
                      help="after the transfer on the board, run it on the model engine and "
                      "compare the two frame for frame (OUT/compare.json)")
    quic.add_argument("--qlog", action="store_true",
                      help="also write the aioquic endpoints' qlog (virtual timestamps) under "
                      "OUT/qlog (quinn's endpoints write none)")
    rt = quic.add_argument_group("real time (a board, or anything between two interfaces)")
    rt.add_argument("--realtime", action="store_true",
                    help="run the endpoints in real time in two network namespaces (needs root)")
    rt.add_argument("--client-if", metavar="IF", type=given("an interface"),
                    help="the interface wired to port A")
    rt.add_argument("--server-if", metavar="IF", type=given("an interface"),
                    help="the interface wired to port B")
    rt.add_argument("--client-cmd", metavar="TEMPLATE", type=given("a command"),
                    help="an external client instead of "
                    "ours: a shell command with {server_ip} {server_port} {client_ip} {size} "
                    "{outdir}")
    rt.add_argument("--server-cmd", metavar="TEMPLATE", type=given("a command"),
                    help="an external server, likewise")
    rt.add_argument("--netem", metavar="SPEC", type=given("a netem specification"),
                    help="also a netem qdisc on both interfaces, "
                    "e.g. 'delay 10ms' (testing without a box)")
    quic.set_defaults(func=cmd_quic)


def _print_outcome(head: str, t, s: dict) -> None:
    """A transfer's result in a line (how one that did not complete ended: the summary's
    ``outcome``, as a sweep prints it), then its packets in another."""
    ended = s.get("outcome") or t.error or "time limit"
    print(f"{head}: " + (f"done in {s['completion_s']:.3f} s, {s['goodput_mbps']:.2f} Mbit/s "
                         f"goodput" if t.completed else f"NOT completed ({ended})"))
    share = s["return_share_pct"]
    print(f"  forward {s['forward_packets']} packets, {s['forward_bytes']} bytes; return "
          f"{s['return_packets']} packets, {s['return_bytes']} bytes "
          f"({share:.2f}% of forward), {s['ack_only_packets']} ACK-only" if share is not None
          else "  no forward bytes")


def cmd_quic_realtime(args, size: int, ack: str) -> int:
    """`satemu quic --realtime`: the endpoints in two network namespaces, in real time, across
    whatever links the two interfaces (a board, a TAP bridge, a veth pair)."""
    from satemu.quic.netns import RealtimeError
    from satemu.quic.realtime import run_realtime
    from satemu.report.files import write_transfer
    if not (args.client_if and args.server_if):
        raise UsageError("--realtime needs --client-if and --server-if")
    settings, stacks = endpoint_settings(args)
    if stacks != ("aioquic", "aioquic"):
        raise UsageError("--realtime runs aioquic's endpoints (or --client-cmd/--server-cmd "
                         "ones); the quinn stack runs in the co-simulation's virtual time")
    out = output_dir(Path(args.out or f"satemu-quic-realtime-{args.size}-"
                           f"{ack.replace(':', '')}"), "--out")
    try:
        t = run_realtime(args.client_if, args.server_if, size, ack=ack, settings=settings,
                         client_cmd=args.client_cmd,
                         server_cmd=args.server_cmd, timeout=args.max_time, outdir=out,
                         netem=args.netem)
    except RealtimeError as e:
        raise DeviceError(str(e)) from None
    s = write_transfer(t, out)
    _print_outcome(f"real time, {args.client_if} <-> {args.server_if}, {args.size} down, "
                   f"ACK {t.ack}", t, s)
    print("  (packets and bytes from captures on both interfaces)")
    print(f"  wrote {out}/result.json, packets.csv, plots and realtime.json "
          f"(no box counters in real time: compare with 'satemu stats')")
    return 0 if t.completed else 1


def cmd_quic(args) -> int:
    from satemu.report.files import write_transfer
    if args.scenario:
        return cmd_scenario(args)
    size, ack = read_size(args.size), check_ack(args.ack)
    if args.realtime:
        return cmd_quic_realtime(args, size, ack)
    if not args.profile:
        raise UsageError("--profile is needed (the simulated board's link)")
    if args.compare and args.engine != "board":
        raise UsageError("--compare runs the transfer on the board, then on the model: "
                         "not with --engine model")
    load_profile(args.profile)                      # a bad profile fails before anything starts
    settings, stacks = endpoint_settings(args)     # and bad endpoint settings
    check_receiver(stacks[0], ack)
    if args.qlog and stacks == ("quinn", "quinn"):
        raise UsageError("--qlog: quinn's endpoints write no qlog here; with --stack "
                         "aioquic/quinn or quinn/aioquic the aioquic side writes its own")
    out = Path(args.out or f"satemu-quic-{Path(args.profile).stem}-{args.size}-{ack.replace(':', '')}")
    output_dir(out, "--out")                       # before the run, whose results go there
    with simulated_board(args) as state:
        t = transfer(state, args.profile, size, ack, args,
                      qlog_dir=out / "qlog" if args.qlog else None,
                      pcap=out / "capture.pcapng" if args.pcap else None)
    s = write_transfer(t, out)
    pair = stacks[0] if stacks[0] == stacks[1] else f"{stacks[0]} client, {stacks[1]} server"
    _print_outcome(f"{t.profile}, {args.size} down, ACK {ack}, {settings.cc}, {pair}, "
                   f"{settings.max_datagram} B datagrams, seed {args.seed}", t, s)
    lost = s["handshake_losses"]["declared"]
    if lost:
        print(f"  note: {lost} packets were declared lost during the handshake (by loss "
              f"detection or a probe timeout; result.json's handshake_losses)")
    what = "model" if t.engine == "model" else "emulator"
    print(f"  {what} counters {'agree' if s['consistency']['consistent'] else 'DISAGREE'} with "
          f"the endpoints; {t.virtual_s:.3f} s of link time in {t.wall_s:.1f} s on the "
          f"{t.engine} engine")
    if t.exactness and not t.exactness["exact"]:
        print("  note: a burst on a port was longer than the board's ingress FIFO absorbs; the "
              "board might have discarded frames there (overrun), the model assumes not")
    print(f"  wrote {out}/result.json, packets.csv and plots")
    if t.capture:
        c = t.capture
        print(f"  wrote {out / c['path']} (frames in and out of ports A and B: "
              + ", ".join(f"{k} {n}" for k, n in c["interfaces"].items())
              + f"; the TLS secrets inside, and in {c['keylog']})")
        if c["disagreements"]:
            print("  the capture DISAGREES with the box's counters: "
                  + "; ".join(c["disagreements"][:3]))
    same = True
    if args.compare:
        same = _compare_with_model(t, args, out)
    captured = not (t.capture and t.capture["disagreements"])
    return 0 if t.completed and s["consistency"]["consistent"] and same and captured else 1


def _compare_with_model(t, args, out: Path) -> bool:
    """``satemu quic --compare``: the board's transfer ``t`` again on the model engine, compared
    frame for frame (satemu.quic.cosim.differences); writes OUT/compare.json."""
    import json
    from satemu.quic.cosim import differences
    from satemu.quic.engine import model_twin
    m = model_twin(t, args.profile, max_seconds=args.max_time)
    diff = differences(t, m)
    (out / "compare.json").write_text(json.dumps(
        {"equal": not diff, "differences": diff, "datagrams": len(t.sent),
         "deliveries": len(t.delivered), "bod_records": len(t.bod["records"]) if t.bod else 0,
         "board_wall_s": t.wall_s, "model_wall_s": m.wall_s,
         "model_exactness": m.exactness}, indent=2) + "\n")
    if diff:
        print(f"  the model engine DIFFERS from the board ({len(diff)} differences, "
              f"{out}/compare.json):")
        for line in diff[:5]:
            print(f"    {line}")
        return False
    bod = f", {len(t.bod['records'])} BoD records" if t.bod else ""
    print(f"  the model engine gives the same run, frame for frame: {len(t.sent)} datagrams "
          f"and {len(t.delivered)} deliveries at the same cycles, every counter{bod} "
          f"({m.wall_s:.2f} s against the board's {t.wall_s:.0f} s; {out}/compare.json)")
    return True


def _scenario_options(args) -> None:
    """UsageError (one line) for an option a scenario's flows carry themselves."""
    from satemu.quic.settings import SETTINGS
    if args.profile:
        raise UsageError("--scenario names its profile itself: not with --profile")
    for flag, on in (("--qlog", args.qlog), ("--client-cmd", args.client_cmd),
                     ("--server-cmd", args.server_cmd)):
        if on:
            raise UsageError(f"{flag}: not with --scenario (its flows run our endpoints)")
    if not args.realtime:
        for flag, on in (("--client-if", args.client_if), ("--server-if", args.server_if),
                         ("--netem", args.netem)):
            if on:
                raise UsageError(f"{flag}: only with --realtime")
    elif not (args.client_if and args.server_if):
        raise UsageError("--realtime needs --client-if and --server-if")
    elif args.compare or args.pcap:
        raise UsageError(f"{'--compare' if args.compare else '--pcap'}: not with --realtime "
                         "(a real-time run writes its captures itself)")
    elif args.engine != "board" or args.eth_port or args.keep:
        raise UsageError("--engine, --eth-port, --keep: not with --realtime (the box between "
                         "the interfaces carries the flows; --port names its UART)")
    given_here = [("--size", args.size != "1MB"), ("--ack", args.ack != "default"),
                  ("--seed", args.seed != 0)]
    given_here += [(s.option, getattr(args, s.name) != s.default()) for s in SETTINGS]
    for flag, on in given_here:
        if on:
            raise UsageError(f"{flag}: a scenario's flows carry their own (in its [[flow]] "
                             f"tables)")


def cmd_scenario(args) -> int:
    """`satemu quic --scenario FILE`: the scenario's flows across the simulated board or the
    model, results into OUT (result.json, flows.csv, objects.csv, packets.csv)."""
    from satemu.quic.scenario import ScenarioError, load_scenario, run_scenario, scenario_twin
    from satemu.report.flows import write_scenario
    _scenario_options(args)
    if args.compare and args.engine != "board":
        raise UsageError("--compare runs the scenario on the board, then on the model: "
                         "not with --engine model")
    try:
        sc = load_scenario(args.scenario)
        sc.check_time(args.max_time)
    except ScenarioError as e:
        raise UsageError(f"--scenario: {e}") from None
    out = output_dir(Path(args.out or f"satemu-scenario-{sc.name}"
                          + ("-realtime" if args.realtime else "")), "--out")
    pcap = out / "capture.pcapng" if args.pcap else None
    if args.realtime:
        from satemu.quic.netns import RealtimeError
        from satemu.quic.realtime.scenario import run_realtime_scenario
        try:
            run = run_realtime_scenario(args.client_if, args.server_if, sc,
                                        max_seconds=args.max_time, outdir=out,
                                        netem=args.netem, box=args.port)
        except RealtimeError as e:
            raise DeviceError(str(e)) from None
    else:
        with simulated_board(args) as state:
            run = run_scenario(args.engine, sc, max_seconds=args.max_time, board=state,
                               pcap=pcap)
    s = write_scenario(run, out)
    if args.realtime:
        print(f"{sc.name}: {len(sc.flows)} flows in real time, {args.client_if} <-> "
              f"{args.server_if} (profile {sc.profile.name} names the terminals), "
              f"{run.virtual_s:.3f} s")
    else:
        print(f"{sc.name}: {len(sc.flows)} flows across {sc.profile.name}, {run.virtual_s:.3f} "
              f"s of link time in {run.wall_s:.1f} s on the {run.engine} engine")
    for f in s["flows"]:
        state_ = (f"done in {f['completion_s']:.3f} s, {f['goodput_mbps']:.3f} Mbit/s"
                  if f["completed"] else f"NOT completed ({f['error'] or 'time limit'})")
        ratio = f"{f['ack_ratio']:.2f}" if f["ack_ratio"] is not None else "-"
        print(f"  {f['name']}: {f['terminal'] or 'port A'}, {f['stacks']['client']}, ACK "
              f"{f['ack']}, {_describe(sc, f['name'])}: {state_}; return {f['return_packets']} "
              f"packets, {f['return_bytes']} bytes, {ratio} data packets an ACK")
    fair = s["fairness"]
    if fair["goodput_jain"] is not None:
        print(f"  fairness (Jain): goodput {fair['goodput_jain']:.3f}" +
              (f", slots granted to terminals with frames {fair['slots_granted_jain']:.3f}"
               if fair["slots_granted_jain"] is not None else ""))
    box_ok = True
    if args.realtime:
        print(f"  wrote {out}/result.json, flows.csv, objects.csv, packets.csv, plots, "
              "client.pcapng and server.pcapng (the TLS secrets inside) and realtime.json")
        for t, m in (s["measured_by_terminal"] or {}).items():
            print(f"  {t}: one-way " + "; ".join(
                f"{d} p50 {m[d]['p50_ms']:.3f} ms, p99 {m[d]['p99_ms']:.3f} ms"
                + (f", {m[d]['lost']} lost" if m[d]["lost"] else "")
                for d in ("forward", "return") if m[d]["datagrams"]) + " (from the captures)")
        box_ok = _print_box_check(out)
    else:
        print(f"  wrote {out}/result.json, flows.csv, objects.csv, packets.csv and plots"
              + (f", {out}/capture.pcapng" if run.capture else ""))
    same = True
    if args.compare:
        from satemu.quic.cosim import differences
        m = scenario_twin(run, max_seconds=args.max_time)
        diff = differences(run, m)
        same = not diff
        print("  the model engine gives the same run, frame for frame" if same else
              f"  the model engine DIFFERS from the board: {diff[0]}")
    return 0 if s["completed"] and same and box_ok else 1


def _print_box_check(out: Path) -> bool:
    """A real-time scenario's box check (realtime.json's ``box_check``) in a line; False if the
    box's counts and the captures' disagree or the box could not be read."""
    import json
    check = json.loads((out / "realtime.json").read_text()).get("box_check")
    if check is None:
        print("  no box counters (give --port URL to load the box and read them)")
        return True
    if "error" in check:
        print(f"  {check['error']}")
        return False
    terms = "; ".join(f"{n} {r['box_received']}" for n, r in check.get("terminals", {}).items())
    print(f"  the box's counters {'agree' if check['agrees'] else 'DISAGREE'} with the "
          f"captures: {check['box_received']} return frames received, "
          f"{check['captured_out']} captured" + (f" (by terminal: {terms})" if terms else "")
          + ("" if check["emptied"] else "; the box still held frames when read"))
    return bool(check["agrees"])


def _describe(sc, name: str) -> str:
    return next(f.workload.describe() for f in sc.flows if f.name == name)


# `satemu experiment`'s defaults for the options a preset (satemu.sweep.PRESETS) may set.
