# SPDX-License-Identifier: BSD-2-Clause
"""The verbs that talk to a box over its UART: ``satemu load``, ``stats``, ``bod-trace`` and
``capture``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from satemu.base.params import TERMINAL_COUNTERS
from satemu.box.control import load_into, read_bod, terminal_counters, timeline_words
from satemu.box.device import Device, DeviceError
from satemu.link.profile import load_profile
from satemu.base.protocol import CHANNEL_FORWARD, CHANNEL_RETURN, Capability
from satemu.cli.args import DAY, U32_MAX, given, output_file, seconds, whole
from satemu.cli.errors import UsageError


def port_args(p) -> None:
    """The options of every verb that talks to a box: its URL and the wait for an answer."""
    p.add_argument("--port", required=True, metavar="URL", type=given("the box's URL"),
                   help="the box: a serial device, socket://HOST:PORT (simulated board) or "
                        "rfc2217://HOST:PORT")
    p.add_argument("--timeout", type=seconds(0, DAY, "a timeout"), default=5.0, metavar="S",
                   help="seconds to wait for each answer (default %(default)s)")


def add_load(sub) -> None:
    load = sub.add_parser("load", help="load a profile into a box and commit it")
    load.add_argument("profile", type=given("a profile"),
                      help="a built-in profile name or a TOML file")
    load.add_argument("--reseed", action="store_true", help="restart the loss PRNGs from the seeds")
    load.add_argument("--start-in", type=seconds(0, DAY, "a time"), default=1.0, metavar="S",
                      help="a profile with a timeline: start it S seconds of box time after "
                           "it is stored (default %(default)s)")
    load.add_argument("--start-cycle", type=whole(0, (1 << 63) - 1, "a cycle"), metavar="N",
                      help="... or at the box's cycle N")
    port_args(load)
    load.set_defaults(func=cmd_load)


def cmd_load(args) -> int:
    p = load_profile(args.profile)          # a bad file fails here, before the box is asked
    with Device(args.port, timeout=args.timeout) as dev:
        report = load_into(dev, p, reseed=args.reseed, start_in=args.start_in,
                           start_cycle=args.start_cycle, start_name="--start-cycle")
    for line in report.lines(args.port):
        print(line)
    return 0


def add_stats(sub) -> None:
    stats = sub.add_parser("stats", help="read a box's counters")
    stats.add_argument("--watch", type=seconds(0, DAY, "a period"), nargs="?", const=1.0,
                       metavar="S",
                       help="repeat every S seconds (default 1)")
    port_args(stats)
    stats.set_defaults(func=cmd_stats)


STAT_ROWS = [("rx_frames", "frames in"), ("rx_bytes", "bytes in"), ("tx_frames", "frames out"),
             ("tx_bytes", "bytes out"), ("drop_loss", "dropped: loss"),
             ("drop_queue", "dropped: queue full"), ("drop_mem", "dropped: memory full"),
             ("drop_runt", "dropped: runt"), ("drop_oversize", "dropped: oversize"),
             ("drop_error", "dropped: bad FCS"), ("drop_overrun", "dropped: overrun"),
             ("drop_preamble", "dropped: no preamble"), ("late", "late"),
             ("queue_frames_now", "queue frames"), ("queue_frames_hwm", "queue frames, max"),
             ("queue_bytes_hwm", "queue bytes, max"), ("mem_words_hwm", "delay-line words, max")]


def _discards(errors: dict) -> str:
    """A deframer's discards (protocol.LINK_STATS_FIELDS after ``requests``), in words."""
    names = {"cobs": "bad COBS", "short": "short", "length": "bad length", "crc": "bad CRC",
             "overlong": "overlong"}
    counts = [f"{errors[key]} {label}" for key, label in names.items() if errors[key]]
    return ", ".join(counts) if counts else "none"


def cmd_stats(args) -> int:
    with Device(args.port, timeout=args.timeout) as dev:
        info = dev.hello()
        while True:
            fwd, ret = dev.get_stats(CHANNEL_FORWARD), dev.get_stats(CHANNEL_RETURN)
            cycle = max(fwd["snapshot_cycle"], ret["snapshot_cycle"])
            print(f"at cycle {cycle} ({cycle / info['f_clk']:.3f} s of box time)")
            print(f"  {'':<24}{'forward':>16}{'return':>16}")
            for key, label in STAT_ROWS:
                print(f"  {label:<24}{fwd[key]:>16}{ret[key]:>16}")
            if info["capabilities"] & Capability.TERMINALS:
                _terminal_lines(dev)
            if info["capabilities"] & Capability.TIMELINE:
                print(f"  {timeline_words(dev.timeline_status(), info['f_clk'])}")
            link = dev.link_stats()
            print(f"  control link: {link['requests']} requests answered; discarded by the "
                  f"box: {_discards(link)}; by this host: {_discards(dev.deframer.errors)}")
            if not args.watch:
                return 0
            time.sleep(args.watch)


# A terminal's counters, as `satemu stats` shows them: rx, tx, then its drops by cause.
TERMINAL_DROPS = [n for n in TERMINAL_COUNTERS if n.startswith("drop_")]


def _terminal_lines(dev) -> None:
    """Each terminal's counters (TERMINAL_STATS) on each channel with a table in force: a line
    a terminal (by its index in the profile's [[terminal]] tables, those with frames), and one
    for the frames of no terminal."""
    for name, rows in terminal_counters(dev).items():
        print(f"  {name} channel, by terminal:")
        for who, c in rows.items():
            drops = ", ".join(f"{n[5:]} {c[n]}" for n in TERMINAL_DROPS if c[n]) or "none"
            label = "no terminal's" if who == "none" else f"terminal {who}"
            print(f"    {label:<16} rx {c['rx_frames']} frames {c['rx_bytes']} B, tx "
                  f"{c['tx_frames']} frames {c['tx_bytes']} B, late {c['late']}; dropped: "
                  f"{drops}")


def add_bod_trace(sub) -> None:
    bod = sub.add_parser("bod-trace", help="read the return channel's BoD records (requests, "
                                           "grants, backlog per superframe) into a CSV")
    bod.add_argument("--out", default="bod-trace.csv", metavar="CSV", type=given("a file name"),
                     help="where to write the records (default %(default)s)")
    bod.add_argument("--plot", metavar="PNG", type=given("a file name"),
                     help="also plot demand against grants")
    bod.add_argument("--from", dest="from_sf", type=whole(0, U32_MAX, "a superframe number"),
                     default=0, metavar="SF",
                     help="the first superframe to read (default: the oldest the box holds)")
    bod.add_argument("--profile", metavar="PROFILE", type=given("a profile"),
                     help="the profile loaded (a built-in name or a file), whose timeline's "
                          "BoD steps give each superframe its length and slot bytes")
    port_args(bod)
    bod.set_defaults(func=cmd_bod_trace)


def cmd_bod_trace(args) -> int:
    from satemu.box.bod_trace import write_csv
    from satemu.report.plots import plot_demand_grant
    output_file(Path(args.out), "--out")          # before the box's records are read
    if args.plot:
        output_file(Path(args.plot), "--plot")
    link = load_profile(args.profile) if args.profile is not None else None
    with Device(args.port, timeout=args.timeout) as dev:
        try:
            got = read_bod(dev, args.from_sf, link)
        except ValueError as e:
            raise UsageError(f"--profile {e}") from None
    for line in got.lines():
        print(line, file=sys.stderr if line.startswith("note:") else sys.stdout)
    print(f"wrote {write_csv(got.rows, args.out)}")
    if args.plot:
        title = f"BoD on the return channel: demand and grants ({args.port})"
        print(f"wrote {plot_demand_grant(got.rows, args.plot, title)}")
    return 0


def add_capture(sub) -> None:
    cap = sub.add_parser("capture", help="read the box's frame log (every frame's arrival, "
                         "fate and egress, both channels) into a pcapng")
    cap.add_argument("--out", default="frame-log.pcapng", metavar="FILE",
                     type=given("a file name"),
                     help="the pcapng to write (default %(default)s)")
    cap.add_argument("--merge", action="append", metavar="PORT=FILE",
                     help="join a host capture of the interface cabled to port A or B (pcapng "
                     "with directions, e.g. satemu's sniffer's or dumpcap's): its frames get the "
                     "box's timestamps and fates; repeatable")
    cap.add_argument("--clear", action="store_true",
                     help="start the log afresh instead (both channels), e.g. before a run")
    port_args(cap)
    cap.set_defaults(func=cmd_capture)


def _merge_spec(text: str) -> tuple[int, Path]:
    """``--merge PORT=FILE`` (PORT: A or B) as (port number, path)."""
    from satemu.model.board import PORT_A, PORT_B
    port, sep, path = text.partition("=")
    if not sep or port.strip().upper() not in ("A", "B") or not path:
        raise UsageError(f"--merge {text[:60]!r}: PORT=FILE, PORT A or B (the port the host's "
                         "interface is cabled to), FILE a pcapng capture of it")
    return (PORT_A if port.strip().upper() == "A" else PORT_B), Path(path)


def cmd_capture(args) -> int:
    """`satemu capture`: the box's frame log read over the UART into a pcapng (or, with
    --clear, the log started afresh)."""
    from satemu.box.log_capture import capture_box_log, log_ring
    merges = dict(_merge_spec(m) for m in args.merge or ())
    for port, path in merges.items():
        if not path.is_file():
            raise UsageError(f"--merge: {path}: no such file")
    if not args.clear:
        output_file(Path(args.out), "--out")      # before the log is read over the UART
    with Device(args.port, timeout=args.timeout) as dev:
        if args.clear:
            _, ring = log_ring(dev, args.port)
            dev.clear_log()
            print(f"cleared the frame log of both channels ({ring} records each)")
            return 0
        cap = capture_box_log(dev, args.out, args.port, merges)
    print(f"read {cap.records} records of {cap.logged} logged since the last clear ({cap.ring} "
          f"records a channel's ring) in {cap.wall_s:.1f} s "
          f"({cap.uart_bytes / max(cap.wall_s, 1e-9) / 1000:.1f} kB/s over the UART)")
    print(f"wrote {args.out}: " + ", ".join(f"{k} {n}"
                                           for k, n in cap.summary["interfaces"].items()))
    for key, m in cap.summary.get("merged", {}).items():
        print(f"  port {key}: {m['matched']} of the host's {m['host']} frames matched the box's "
              f"{m['box']}")
    problems = cap.problems
    if problems:
        print("the capture is PARTIAL: " + "; ".join(problems))
        return 1
    return 0
