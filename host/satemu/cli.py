# SPDX-License-Identifier: BSD-2-Clause
"""The ``satemu`` command line: a thin layer over the profile and device APIs."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import tempfile
from dataclasses import replace
from fractions import Fraction

import time
from pathlib import Path

from . import __version__
from .boards import BOARDS as SHOW_BOARDS, DEFAULT_BOARD
from .checkout import CheckoutError, use_checkout
from .device import Device, DeviceError
from .flash import BOARDS as FLASH_BOARDS, FlashError
from .params import ConfigError
from .profile import ProfileError, builtin_profiles, load_profile
from .protocol import (CHANNEL_FORWARD, CHANNEL_NAMES, CHANNEL_RETURN, Capability, Status,
                       TimelineFault, TimelineRun)
from .regmap import BOD_ENABLE, BOD_RATE_ONE
from .quic.packets import MAX_UDP_PAYLOAD
from .quic.settings import DEFAULT_INITIAL_RTT_MS
from .units import UnitError, format_rate, format_size, format_time
from .validate import Hardware

TAPS = ("satemu-a", "satemu-b")     # `satemu sim start --tap`: the TAPs of ports A and B
U32_MAX, U64_MAX = (1 << 32) - 1, (1 << 64) - 1
DAY = 86400.0


class UsageError(Exception):
    """A command line that cannot be carried out as given (an option missing, empty, out of range
    or contradicting another): ``main`` prints it as one line and exits with status 2, as
    argparse does for its own usage errors."""


def whole(lo: int, hi: int, what: str):
    """An argparse ``type``: a whole number in ``lo .. hi``, else ArgumentTypeError (argparse's
    one-line usage error, exit status 2) saying what and which range. Digits beyond 30 are
    refused unread (never in range)."""
    def read(text: str) -> int:
        t = text.strip()
        value = int(t) if re.fullmatch(r"[+-]?[0-9]{1,30}", t) else None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {what}, a whole number in "
                                             f"{lo} .. {hi}")
        return value
    read.__name__ = what
    return read


def seconds(lo: float, hi: float, what: str):
    """An argparse ``type``: a finite number of seconds above ``lo`` and at most ``hi``, else
    ArgumentTypeError (one line, exit status 2) saying what and which range."""
    def read(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and lo < value <= hi):
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: {what}, seconds above {lo:.10g} and "
                                             f"at most {hi:.10g}")
        return value
    read.__name__ = what
    return read


def given(what: str):
    """An argparse ``type``: text that is not empty (nor only blanks), else ArgumentTypeError (one
    line, exit status 2) saying what: an empty value would otherwise pass for the option left
    out (``--out ""`` for the default directory, ``--seeds ""`` for ``--seed``'s one)."""
    def read(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{text!r}: {what}, not empty")
        return text
    read.__name__ = what
    return read


def _output_dir(path: Path, option: str) -> Path:
    """``path`` as the directory a run writes into, made (with its parents) and shown writable by
    creating a file in it, before anything runs whose results would go there; UsageError (one
    line) if it is not a directory or cannot be written."""
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{option} {path}: exists and is not a directory; name a directory "
                             f"for the results")
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".satemu-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    return path


def _output_file(path: Path, option: str) -> Path:
    """``path`` as a file a command writes at its end, checked first: not a directory, its
    directory made if need be, and the file opened for writing (an existing one is left as it is
    until the command replaces it; a new one is removed again); UsageError (one line) if not."""
    try:
        if path.is_dir():
            raise UsageError(f"{option} {path}: a directory; name a file")
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_NONBLOCK        # NONBLOCK: a FIFO without a reader refuses
        if os.path.lexists(path):
            os.close(os.open(path, flags | os.O_APPEND | os.O_CREAT))
        else:
            os.close(os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666))
            os.unlink(path)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    return path


def cmd_profiles(args) -> int:
    profiles = builtin_profiles()
    width = max(map(len, profiles))
    for name, p in profiles.items():
        print(f"{name:<{width}}  {p.description}")
    return 0


SHOW_OVERRIDES = (("f_clk", "--f-clk"), ("mem_words", "--mem-words"), ("mem_wpc", "--mem-wpc"))


def show_hardware(args) -> tuple[Hardware, list[str]]:
    """``satemu show``'s hardware: the ``--board``'s, with the options given over it; and the
    lines that say so."""
    board = SHOW_BOARDS[args.board]
    given = {key: getattr(args, key) for key, _ in SHOW_OVERRIDES if getattr(args, key) is not None}
    hw = replace(board.hardware, **given)
    over = ("; given " + ", ".join(f"{opt} {given[key]}" for key, opt in SHOW_OVERRIDES
                                   if key in given)) if given else ""
    def per_channel(values):
        if values[0] == values[1]:
            return f"{values[0]}"
        return " and ".join(f"{v} ({name})" for v, name in zip(values, CHANNEL_NAMES))

    wpcs = [hw.wpc(ch) for ch in range(len(CHANNEL_NAMES))]
    paces = [hw.channel_params(ch).mem_pace for ch in range(len(CHANNEL_NAMES))]
    wpc = (f"{per_channel(wpcs)} words per 65536 cycles guaranteed" if any(wpcs)
           else "throughput not limited")
    if any(paces):
        wpc += f", frames falling due together leave at {per_channel(paces)} cycles a word"
    return hw, [f"board: {args.board} ({board.title}), {hw.f_clk / 1e6:g} MHz, ports at "
                f"{format_rate(hw.port_bps)}{over}",
                f"       delay line per channel: {format_size(hw.mem_words * 8)}, {wpc}",
                f"       timelines: " + (f"up to {hw.timeline_entries} entries (a field of a "
                                         f"channel each)" if hw.timeline_entries else "none")]


def cmd_show(args) -> int:
    hw, board = show_hardware(args)
    p = load_profile(args.profile)
    if args.plot:
        if p.timeline is None:
            raise UsageError(f"--plot draws a profile's timeline: {p.name} has none")
        _output_file(Path(args.plot), "--plot")
    regs = p.check(hw)
    print(f"{p.name}: {p.description}" if p.description else p.name)
    if p.source:
        print(f"  source: {p.source}")
    for line in board:
        print(f"  {line}")
    for name, ch in p.channels():
        r = regs[name]
        per_byte = Fraction(r.rate_q) + Fraction(r.rate_num, r.rate_den)
        print(f"  {name:<8} {ch.describe(hw, name)}")
        frac = f" + {r.rate_num}/{r.rate_den}" if r.rate_num else ""
        shaping = f"{r.rate_q}{frac} cycles per byte" if per_byte else "not shaped"
        if r.bod:
            shaping = "BoD grants"
        print(f"           at {hw.f_clk / 1e6:g} MHz: {shaping}, delay {r.delay} cycles "
              f"({format_time(Fraction(max(r.delay, hw.params.latency_floor), hw.f_clk))} "
              f"departure to egress)")
        if r.bod:
            print(f"           {r.bod_slots} slots of {r.bod_slot_cycles} cycles; CRA {r.bod_cra}, "
                  f"RBDC max {r.bod_rbdc_max} (slots/superframe x {BOD_RATE_ONE}), "
                  f"VBDC max {r.bod_vbdc_max} slots")
        need = ch.budget_words(hw, name)
        print(f"           delay line: at most {format_size(need * 8)} of "
              f"{format_size(hw.mem_words * 8)} ({100 * need / hw.mem_words:.1f}%)")
        wpc = ch.traffic_wpc(hw, name)
        have = (f" of {hw.wpc(name)} guaranteed ({100 * wpc / hw.wpc(name):.1f}%)"
                if hw.wpc(name)
                else " (not limited)")
        print(f"           delay-line throughput: up to {wpc} words per 65536 cycles{have}")
    if p.timeline is not None:
        _show_timeline(p, hw, args)
    return 0


def _show_timeline(p, hw: Hardware, args) -> None:
    """``satemu show``'s timeline: every step checked against the board, then listed (and
    plotted with ``--plot``)."""
    from .timeline import compile_timeline
    c = compile_timeline(p, hw)
    t = p.timeline
    repeat = f", repeating every {format_time(t.repeat)}" if t.repeat else ", once"
    print(f"  timeline: {len(c.steps)} steps, {len(c.entries)} of the board's "
          f"{hw.timeline_entries} entries{repeat}")
    for source in t.sources:
        print(f"    trace {source}")
    lines = t.describe()
    shown = lines if args.steps is None else lines[:args.steps]
    for line in shown:
        print(f"    {line}")
    if len(shown) < len(lines):
        print(f"    ... {len(lines) - len(shown)} more steps (--steps N shows more)")
    if args.plot:
        from .report.timeline_plot import plot_timeline
        plot_timeline(p, c, hw.f_clk, Path(args.plot))
        print(f"  plot: {args.plot}")


def cmd_load(args) -> int:
    from .timeline import compile_timeline
    p = load_profile(args.profile)          # a bad file fails here, before the box is asked
    with Device(args.port, timeout=args.timeout) as dev:
        info = dev.hello()
        compiled = None
        if p.timeline is not None:
            compiled = compile_timeline(p, dev.hardware())   # every step checked first
        dev.load(p, reseed=args.reseed, stop_timeline=True)  # a running timeline stops
        print(f"loaded {p.name} into {args.port}: the whole profile is in force on both channels")
        for name, ch in p.channels():
            print(f"  {name:<8} {ch.describe()}")
        if compiled is None:
            return 0
        f_clk = info["f_clk"]
        start = dev.load_timeline(compiled.entries, compiled.period, args.start_cycle,
                                  lead=round(Fraction(args.start_in) * f_clk))
    repeat = (f", repeating every {format_time(Fraction(compiled.period, f_clk))}"
              if compiled.period else ", once")
    print(f"timeline: {len(compiled.steps)} steps ({len(compiled.entries)} entries of the box's "
          f"{dev.hardware().timeline_entries}), from cycle {start}{repeat}")
    return 0


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
            if info["capabilities"] & Capability.TIMELINE:
                print(f"  {_timeline_line(dev.timeline_status(), info['f_clk'])}")
            link = dev.link_stats()
            print(f"  control link: {link['requests']} requests answered; discarded by the "
                  f"box: {_discards(link)}; by this host: {_discards(dev.deframer.errors)}")
            if not args.watch:
                return 0
            time.sleep(args.watch)


def _timeline_line(t: dict, f_clk: int) -> str:
    """TIMELINE_STATUS in words: the run's state and the step in force."""
    state = TimelineRun(t["state"]).name.lower()
    if t["state"] == TimelineRun.IDLE and not t["applied"]:
        return "timeline: none running"
    since = (f", the last since cycle {t['in_force_cycle']} "
             f"({t['in_force_cycle'] / f_clk:.3f} s)" if t["applied"] else "")
    late = f", {t['late']} late" if t["late"] else ", none late"
    lap = f" (lap {t['lap'] + 1})" if t["period"] else ""
    out = (f"timeline: {state}, {t['applied']} steps taken{lap}{since}{late}; next entry "
           f"{t['next']} of {t['entries']}")
    if t["state"] == TimelineRun.FAILED:
        verdict = Status(t["verdict"]).name if t["verdict"] in Status._value2member_map_ else ""
        out += (f"; stopped at entry {t['fault_entry']}: {TimelineFault(t['fault']).name}"
                + (f" ({verdict})" if t["fault"] == TimelineFault.PROFILE else ""))
    return out


def cmd_bod_trace(args) -> int:
    from .bod_trace import records_to_rows, write_csv
    from .report.plots import plot_demand_grant
    _output_file(Path(args.out), "--out")          # before the box's records are read
    if args.plot:
        _output_file(Path(args.plot), "--plot")
    with Device(args.port, timeout=args.timeout) as dev:
        info = dev.hello()
        if not info["capabilities"] & Capability.BOD:
            raise DeviceError(f"{args.port} has no Bandwidth-on-Demand hardware")
        prof = dev.get_profile(CHANNEL_RETURN)
        if not prof["bod_flags"] & BOD_ENABLE:
            raise DeviceError("BoD is off on the return channel: load a profile with a "
                              "[return.bod] table first (e.g. satemu load geo-testbed-bod)")
        trace = dev.bod_trace(first=args.from_sf)
        timeline = dev.timeline_status() if info["capabilities"] & Capability.TIMELINE else None
        segments = None
        if args.profile is not None:
            segments = _bod_segments(load_profile(args.profile), dev.hardware(), trace,
                                     timeline)
    superframe_cycles = prof["bod_slots"] * prof["bod_slot_cycles"]
    superframe = Fraction(superframe_cycles, info["f_clk"])
    rows = records_to_rows(trace.records, trace.start, superframe_cycles, info["f_clk"],
                           prof["bod_slot_bytes"], segments)
    if segments is None and timeline and timeline["applied"]:
        print("note: a timeline ran; if its steps changed the superframe or the slot bytes, "
              "give --profile with it, or the rows take the shape in force now for every "
              "superframe", file=sys.stderr)
    if trace.records:
        print(f"read superframes {trace.records[0].sf} .. {trace.records[-1].sf} of "
              f"{trace.count} recorded (a superframe is {format_time(superframe)})")
    else:
        print(f"no records from superframe {args.from_sf} on; {trace.count} recorded so far")
    print(f"  superframe 0 began at cycle {trace.start} "
          f"({trace.start / info['f_clk']:.3f} s of box time)")
    if trace.lost:
        print(f"  {trace.lost_count} superframes were overwritten in the box's ring before they "
              f"were read: " + ", ".join(f"{a} .. {b - 1}" for a, b in trace.lost))
    print(f"wrote {write_csv(rows, args.out)}")
    if args.plot:
        title = f"BoD on the return channel: demand and grants ({args.port})"
        print(f"wrote {plot_demand_grant(rows, args.plot, title)}")
    return 0


def _bod_segments(link, hw, trace, timeline):
    """The superframes' shapes (satemu.bod_trace.superframe_segments) from profile ``link`` as
    loaded, and its timeline's steps when one ran since the block started."""
    from .bod_trace import superframe_segments
    regs = link.check(hw)["return"]
    if not regs.bod:
        raise UsageError(f"--profile {link.name}: its return channel has no BoD")
    commits = ()
    if link.timeline is not None and timeline and timeline["start"] >= trace.start:
        from .timeline import compile_timeline
        commits = compile_timeline(link, hw).commits(timeline["start"], "return",
                                                     timeline["lap"] + 1)
    return superframe_segments(regs, trace.start, commits, trace.records)


def _merge_spec(text: str) -> tuple[int, Path]:
    """``--merge PORT=FILE`` (PORT: A or B) as (port number, path)."""
    from .board_model import PORT_A, PORT_B
    port, sep, path = text.partition("=")
    if not sep or port.strip().upper() not in ("A", "B") or not path:
        raise UsageError(f"--merge {text[:60]!r}: PORT=FILE, PORT A or B (the port the host's "
                         "interface is cabled to), FILE a pcapng capture of it")
    return (PORT_A if port.strip().upper() == "A" else PORT_B), Path(path)


def cmd_capture(args) -> int:
    """`satemu capture`: the box's frame log read over the UART into a pcapng (or, with
    --clear, the log started afresh)."""
    from .logcapture import merge_log_capture, read_box_log, write_log_capture
    from .protocol import CHANNEL_NAMES
    merges = dict(_merge_spec(m) for m in args.merge or ())
    for port, path in merges.items():
        if not path.is_file():
            raise UsageError(f"--merge: {path}: no such file")
    if not args.clear:
        _output_file(Path(args.out), "--out")      # before the log is read over the UART
    t0 = time.monotonic()
    with Device(args.port, timeout=args.timeout) as dev:
        info = dev.hello()
        ring = info.get("log_records", 0)
        if not info["capabilities"] & Capability.FRAME_LOG or not ring:
            raise DeviceError(f"{args.port} has no frame log: its gateware was built without "
                              "one (a build option; the Colorlight 5A-75B and the Versa-5G leave "
                              "it out, see docs/hardware.md)")
        if args.clear:
            dev.clear_log()
            print(f"cleared the frame log of both channels ({ring} records each)")
            return 0
        logs = read_box_log(dev, ring)
        f_clk = info["f_clk"]
    nbytes = sum(16 * (len(log.records) + log.stale) for log in logs.values())
    wall = time.monotonic() - t0
    comment = (f"satemu frame log of {args.port}: timestamps are the box's cycles since its "
               f"reset at {1e9 / f_clk:g} ns a cycle, a frame into a port at its arrival at the "
               "channel, one out of a port at its egress start")
    problems = [f"{CHANNEL_NAMES[ch]}: {p}" for ch, log in logs.items() for p in log.problems()]
    if problems:
        comment += "; PARTIAL: " + "; ".join(problems)
    if merges:
        try:
            summary = merge_log_capture(args.out, logs, f_clk, merges, comment)
        except (ValueError, OSError) as e:
            raise DeviceError(f"--merge: {e}") from None
    else:
        summary = write_log_capture(args.out, logs, f_clk, comment)
    records = sum(len(log.records) for log in logs.values())
    print(f"read {records} records of {sum(l.count for l in logs.values())} logged since the "
          f"last clear ({ring} records a channel's ring) in {wall:.1f} s "
          f"({nbytes / max(wall, 1e-9) / 1000:.1f} kB/s over the UART)")
    print(f"wrote {args.out}: " + ", ".join(f"{k} {n}" for k, n in summary["interfaces"].items()))
    for key, m in summary.get("merged", {}).items():
        print(f"  port {key}: {m['matched']} of the host's {m['host']} frames matched the box's "
              f"{m['box']}")
    if problems:
        print("the capture is PARTIAL: " + "; ".join(problems))
        return 1
    return 0


def cmd_sim(args) -> int:
    use_checkout("satemu sim")
    from sim import board
    if args.action == "start":
        try:
            state = board.start(port=args.port, taps=TAPS if args.tap else None)
        except board.BoardError as e:
            raise DeviceError(str(e)) from None
        print(f"simulated board running at {state['url']} (pid {state['pid']}, "
              f"clock {state['hello']['f_clk'] / 1e6:g} MHz; its Ethernet wire is on TCP port "
              f"{state['eth_port']})")
        if state.get("taps"):
            print(f"ports A and B bridged to the TAP interfaces {state['taps'][0]} and "
                  f"{state['taps'][1]} (real time: see 'satemu quic --realtime')")
        print(state["url"])
    elif args.action == "stop":
        print("simulated board stopped" if board.stop() else "no simulated board was running")
    else:
        state = board.status()
        print(f"running at {state['url']} (pid {state['pid']})" if state else "not running")
    return 0


@contextlib.contextmanager
def _simulated_board(args):
    """The simulated board to use, for the ``with`` block: the one ``--port``/``--eth-port``
    name, else the one ``satemu sim`` manages: restarted if it holds frames of an earlier run
    (one killed mid-transfer), started if need be (and then stopped afterwards, unless
    ``--keep``; it ends with this process whatever happens, unless ``--keep``, which leaves
    it running as ``satemu sim start`` would). With ``--engine model``, none: None."""
    if getattr(args, "engine", "board") == "model":
        if args.port or args.eth_port:
            raise UsageError("--port and --eth-port name a simulated board: not with "
                             "--engine model")
        yield None
        return
    use_checkout(f"satemu {args.command} on the simulated board")
    from sim import board
    if args.port:
        if not args.eth_port:
            raise DeviceError("--port names a simulated board: give its --eth-port too")
        with Device(args.port) as dev:
            hello = dev.hello()
        yield {"url": args.port, "eth_port": args.eth_port, "hello": hello}
        return
    try:
        running = board.clean()
    except board.BoardError as e:
        raise DeviceError(str(e)) from None
    if running:
        yield running
        return
    try:
        state = board.start(daemon=args.keep)
    except board.BoardError as e:
        raise DeviceError(str(e)) from None
    try:
        yield state
    finally:
        if not args.keep:
            board.stop()


def _transfer(state, profile: str, size: int, ack: str, args, label: str = "", qlog_dir=None,
              pcap=None):
    """One QUIC download on the engine ``args.engine`` (the simulated board ``state``, or the
    model when ``state`` is None), with a progress line."""
    from .boards import BOARDS, DEFAULT_BOARD
    from .quic.cosim import run_transfer
    from .report.progress import ProgressLine
    f_clk = state["hello"]["f_clk"] if state else BOARDS[DEFAULT_BOARD].f_clk
    line = ProgressLine(size, f_clk=f_clk, every=5.0)
    last = {}

    def progress(sim):
        import time as _t
        now = _t.monotonic()
        rate = 0.0
        if last:
            rate = (sim.now_cycle - last["cycle"]) / max(now - last["wall"], 1e-9)
        last.update(cycle=sim.now_cycle, wall=now)
        line.update(sim.time(sim.now_cycle), sim.client.received, rate)

    if label:
        print(label, file=sys.stderr)
    settings, stacks = _endpoint_settings(args)
    t = run_transfer(args.engine, profile, size, ack=ack, seed=args.seed,
                     max_seconds=args.max_time, settings=settings, stacks=stacks,
                     progress=progress, qlog_dir=qlog_dir, board=state, pcap=pcap)
    line.update(t.virtual_s, t.size if t.completed else 0,
                t.virtual_s * t.f_clk / max(t.wall_s, 1e-9))        # the average, at the end
    line.finish()
    return t


def _endpoint_settings(args, **fixed):
    """(EndpointSettings, (client stack, server stack)) from the command line's endpoint
    options (``fixed`` replaces some, as a sweep does), each stack checked against them;
    UsageError (one line) for anything a stack cannot take."""
    from .quic.settings import SETTING_NAMES, EndpointSettings, parse_setting
    try:
        values = dict(parse_setting(name, getattr(args, name)) for name in SETTING_NAMES)
        values.update(fixed)
        stacks = values.pop("stacks")
        settings = EndpointSettings(**values)
        settings.check_stacks(stacks)
    except ValueError as e:
        raise UsageError(f"{e}") from None
    return settings, stacks


def _check_receiver(stack: str, ack: str) -> None:
    """UsageError (one line) if a client of ``stack`` cannot apply the ACK policy ``ack``."""
    if stack == "quinn":
        from .quic.quinn import quinn_policy
        try:
            quinn_policy(ack)
        except ValueError as e:
            raise UsageError(f"--ack: {e}") from None


def _size(text: str) -> int:
    from .units import parse_size
    bare = text.strip()
    try:
        value = (int(bare) if bare.isascii() and bare.isdigit() and len(bare) <= 30
                 else parse_size(text))
    except UnitError as e:
        raise UsageError(f"--size {text[:40]!r}: {e}") from None
    if value < 1 or value != int(value):
        raise UsageError(f"--size {text[:40]!r}: a whole number of bytes, at least 1")
    return int(value)


def _check_ack(text: str) -> str:
    """The ACK policy ``text`` in its canonical form; UsageError (one line, with N's range: the
    one every stack takes, satemu.quic.settings.ACK_N_MAX) if it is none."""
    from .quic.ackpolicy import AckPolicy
    try:
        return str(AckPolicy.parse(text))
    except ValueError as e:
        raise UsageError(f"--ack: {e}") from None


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
    from .quic.netns import RealtimeError
    from .quic.realtime import run_realtime
    from .report.files import write_transfer
    if not (args.client_if and args.server_if):
        raise UsageError("--realtime needs --client-if and --server-if")
    settings, stacks = _endpoint_settings(args)
    if stacks != ("aioquic", "aioquic"):
        raise UsageError("--realtime runs aioquic's endpoints (or --client-cmd/--server-cmd "
                         "ones); the quinn stack runs in the co-simulation's virtual time")
    out = _output_dir(Path(args.out or f"satemu-quic-realtime-{args.size}-"
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
    from .report.files import write_transfer
    size, ack = _size(args.size), _check_ack(args.ack)
    if args.realtime:
        return cmd_quic_realtime(args, size, ack)
    if not args.profile:
        raise UsageError("--profile is needed (the simulated board's link)")
    if args.compare and args.engine != "board":
        raise UsageError("--compare runs the transfer on the board, then on the model: "
                         "not with --engine model")
    load_profile(args.profile)                      # a bad profile fails before anything starts
    settings, stacks = _endpoint_settings(args)     # and bad endpoint settings
    _check_receiver(stacks[0], ack)
    if args.qlog and stacks == ("quinn", "quinn"):
        raise UsageError("--qlog: quinn's endpoints write no qlog here; with --stack "
                         "aioquic/quinn or quinn/aioquic the aioquic side writes its own")
    out = Path(args.out or f"satemu-quic-{Path(args.profile).stem}-{args.size}-{ack.replace(':', '')}")
    _output_dir(out, "--out")                       # before the run, whose results go there
    with _simulated_board(args) as state:
        t = _transfer(state, args.profile, size, ack, args,
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
    from .quic.cosim import differences, model_twin
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


# `satemu experiment`'s defaults for the options a preset (satemu.sweep.PRESETS) may set.
EXPERIMENT_DEFAULTS = {"profile": ["geo-testbed"], "sizes": "100KB",
                       "policies": "default,ratio:2,ratio:10,adaptive,ack-frequency:10",
                       "cc": "reno", "stack": "aioquic", "engine": "board"}


def cmd_experiment(args) -> int:
    """A sweep of QUIC downloads (satemu.sweep): profiles x --set values x sizes x ACK policies
    x congestion controls x seeds, each point run once, in parallel (--jobs, --dask), resumed
    from what OUT holds; results.csv/json, the table, report.md and its plots."""
    import json
    from .boards import BOARDS
    from .report.plots import PLOT_NAMES
    from .report.sweep import sweep_markdown, write_results
    from .report.tables import experiment_markdown, format_table
    from .sweep import PRESETS, parse_sets, plan, record_of, run_sweep, split_values
    preset = PRESETS[args.kind]
    for option, default in EXPERIMENT_DEFAULTS.items():     # what the command line left alone
        if getattr(args, option) is None:
            setattr(args, option, preset.get(option, default))
    given = {text.partition("=")[0].strip() for text in args.set or ()}
    args.set = [t for t in preset.get("set", ()) if t.partition("=")[0] not in given] + \
        list(args.set or ())
    sizes = [(text, _size(text)) for text in split_values(args.sizes)]
    policies = [_check_ack(a) for a in split_values(args.policies)]
    try:
        seeds = ([whole(0, U64_MAX, "a seed")(s) for s in split_values(args.seeds)]
                 if args.seeds else [args.seed])
    except argparse.ArgumentTypeError:
        raise UsageError(f"--seeds {args.seeds[:40]!r}: whole numbers in 0 .. 2^64-1, such as "
                         "0,1,2") from None
    if args.engine == "model" and (args.port or args.eth_port):
        raise UsageError("--port and --eth-port name a simulated board: not with "
                         "--engine model")
    if args.port and (args.dask or (args.jobs or 1) > 1):
        raise UsageError("--port names one simulated board, which runs the points one by "
                         "one: not with --jobs above 1 or --dask")
    jobs = args.jobs or (1 if args.port else os.cpu_count() or 1)
    # Every point, its profile parsed with its --set values and checked against the simulated
    # board's hardware, before anything starts.
    endpoint, stacks = _endpoint_settings(args, cc="reno")     # --cc's list is an axis
    points = plan(args.engine, args.profile, sizes, policies, split_values(args.cc), seeds,
                  parse_sets(args.set), endpoint=endpoint, stacks=stacks,
                  max_time=args.max_time, hardware=BOARDS["sim"].hardware, pcap=args.pcap)
    if args.engine == "board" and not args.dask:     # the workers' checkouts are theirs
        use_checkout("satemu experiment on the simulated board")
    out = _output_dir(Path(args.out or f"satemu-experiment-{args.kind}"), "--out")
    where = (f"on the Dask scheduler {args.dask}" if args.dask else
             f"on {jobs} worker processes" if jobs > 1 else "one after another")
    print(f"{len(points)} point{'' if len(points) == 1 else 's'}, {where}, into {out}",
          file=sys.stderr)
    pending = args.force or any(record_of(p, out) is None for p in points)
    if args.engine == "board" and not args.dask and jobs == 1 and pending:
        with _simulated_board(args) as state:        # --port's, or the one 'satemu sim' runs
            outcome = run_sweep(points, out, jobs=1, force=args.force, board=state)
    else:
        if args.engine == "board" and not args.dask and pending:
            from sim import board
            try:
                board.build_board(verbose=True)     # once, before the workers launch theirs
            except board.BoardError as e:
                raise DeviceError(str(e)) from None
        outcome = run_sweep(points, out, jobs=jobs, dask=args.dask, force=args.force)
    rows, table = [], []
    for p in points:
        record = outcome.records[p]
        if record is None:
            continue
        rows.append(record["row"])
        s = json.loads((out / p.run_rel / "result.json").read_text())
        plots = PLOT_NAMES + (("demand_grant",) if s["bod"] else ())
        table.append((s, {name: str(p.run_rel / f"{name}.png") for name in plots}))
    failed = [{"point": p.id, "label": p.label(), "run_dir": p.run_rel.as_posix(),
               "error": error, "log": log} for p, (error, log) in outcome.failed.items()]
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


def cmd_flash(args) -> int:
    import shlex
    from .flash import parse_hz, plan_flash, run_flash
    options = dict(cable=args.cable, ftdi_serial=args.ftdi_serial,
                   freq=parse_hz(args.freq) if args.freq is not None else None,
                   verify=args.verify, force=args.force)
    if args.dry_run:
        print(shlex.join(plan_flash(args.board, args.mode, args.bitstream, **options)))
        return 0
    status = run_flash(args.board, args.mode, args.bitstream, **options)
    if status:
        print(f"satemu: openFPGALoader failed (exit status {status})", file=sys.stderr)
    return status


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="satemu", description="FPGA-backed satellite link emulator")
    ap.add_argument("--version", action="version", version=f"satemu {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("profiles", help="list the built-in link profiles").set_defaults(func=cmd_profiles)
    show = sub.add_parser("show", help="show a profile and what it means for the hardware")
    show.add_argument("profile", type=given("a profile"),
                      help="a built-in profile name or a TOML file")
    show.add_argument("--board", choices=list(SHOW_BOARDS), default=DEFAULT_BOARD,
                      help="the board to check against, with its clock, memory, delay-line "
                           "throughput, line rate and channel parameters: " + "; ".join(
                               f"{name}: {b.title}" for name, b in SHOW_BOARDS.items())
                           + " (default %(default)s)")
    show.add_argument("--f-clk", type=whole(1, U32_MAX, "a clock in Hz"), metavar="HZ",
                      help="system clock the registers count in (default: the board's)")
    show.add_argument("--mem-words", type=whole(1, U32_MAX, "a number of words"), metavar="N",
                      help="delay-line memory per channel, in 64-bit words (default: the "
                           "board's)")
    show.add_argument("--mem-wpc", type=whole(0, U32_MAX, "words per 65536 cycles"),
                      metavar="N",
                      help="delay-line throughput per channel with both busy, in 64-bit words "
                           "per 65536 cycles; 0: not limited (default: the board's)")
    show.add_argument("--steps", type=whole(0, U32_MAX, "a number of steps"), default=40,
                      metavar="N", help="a timeline's steps to list (default %(default)s)")
    show.add_argument("--plot", metavar="FILE.png", type=given("a file name"),
                      help="a profile with a timeline: plot each channel's rate, delay and "
                           "loss over time into FILE.png")
    show.set_defaults(func=cmd_show)

    def port_args(p):
        p.add_argument("--port", required=True, metavar="URL", type=given("the box's URL"),
                       help="the box: a serial device, socket://HOST:PORT (simulated board) or "
                            "rfc2217://HOST:PORT")
        p.add_argument("--timeout", type=seconds(0, DAY, "a timeout"), default=5.0, metavar="S",
                       help="seconds to wait for each answer (default %(default)s)")
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
    stats = sub.add_parser("stats", help="read a box's counters")
    stats.add_argument("--watch", type=seconds(0, DAY, "a period"), nargs="?", const=1.0,
                       metavar="S",
                       help="repeat every S seconds (default 1)")
    port_args(stats)
    stats.set_defaults(func=cmd_stats)
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
    def transfer_args(p):
        p.add_argument("--engine", choices=["board", "model"], default="board",
                       help="what carries the link: 'board', the simulated board in Verilator "
                       "(the hardware path), or 'model', the reference models of the same path, "
                       "which equal it frame for frame and run far faster (default %(default)s)")
        p.add_argument("--cc", default="reno", type=given("a congestion controller"),
                       help="the congestion controller: reno, cubic, "
                       "or bbr (quinn only) (default %(default)s)")
        p.add_argument("--seed", type=whole(0, U64_MAX, "a seed"), default=0,
                       help="randomness of both endpoints (0 .. 2^64-1)")
        p.add_argument("--max-ack-delay", default="25", metavar="MS",
                       help="max_ack_delay both endpoints advertise (default %(default)s ms)")
        p.add_argument("--stack", default="aioquic", metavar="S|CLIENT/SERVER",
                       help="the QUIC stack of both endpoints, or of the client and the server, "
                       "e.g. quinn or aioquic/quinn: aioquic, quinn (default %(default)s)")
        p.add_argument("--max-datagram", default=str(MAX_UDP_PAYLOAD), metavar="BYTES",
                       help="the largest UDP payload an endpoint sends, 1200..1472 (1472 fills "
                       "a 1518-byte frame; quicly sends 1280, Chromium 1352) "
                       "(default %(default)s)")
        p.add_argument("--initial-window", default="default", metavar="PACKETS",
                       help="the initial congestion window in packets of --max-datagram bytes "
                       "(default: the stack's, 10 packets in aioquic, 12000 B in quinn)")
        p.add_argument("--initial-rtt", default=f"{DEFAULT_INITIAL_RTT_MS:g}", metavar="MS",
                       help="the RTT assumed before the first sample (default %(default)s ms, "
                       "RFC 9002's; aioquic's own is 100 ms, see docs/architecture.md)")
        p.add_argument("--stream-window", default="64MiB", metavar="BYTES",
                       help="flow-control credit per stream (default %(default)s)")
        p.add_argument("--conn-window", default="64MiB", metavar="BYTES",
                       help="flow-control credit per connection (default %(default)s)")
        p.add_argument("--max-time", type=seconds(0, 1e6, "a time limit"), default=600.0,
                       metavar="S",
                       help="give up after S seconds of link time (default %(default)s)")
        p.add_argument("--out", metavar="DIR", type=given("a directory"),
                       help="where to write results (made if need be, and checked before "
                       "anything runs)")
        p.add_argument("--pcap", action="store_true",
                       help="also write each run's capture.pcapng: the frames into and out of "
                       "both ports at their cycles, each with its fate, and the TLS secrets "
                       "that let Wireshark decrypt QUIC (also in keys.log beside it)")
        p.add_argument("--keep", action="store_true",
                       help="leave the simulated board running if this command started it")
        p.add_argument("--port", metavar="URL", type=given("a simulated board's URL"),
                       help="a running simulated board's UART "
                       "(default: the one 'satemu sim' manages, started if need be)")
        p.add_argument("--eth-port", type=whole(1, 65535, "a TCP port"), metavar="PORT",
                       help="with --port: that board's Ethernet-module TCP port")
    quic = sub.add_parser("quic", help="a QUIC download across the simulated board, in its "
                                       "virtual time, with results and plots")
    quic.add_argument("--profile", type=given("a profile"),
                      help="a built-in profile name or a TOML file (simulated board)")
    quic.add_argument("--size", default="1MB", help="bytes to download, e.g. 100KB, 10MB")
    quic.add_argument("--ack", default="default", help="the client's ACK policy: default, "
                      "ratio:N, adaptive or ack-frequency:N (default %(default)s)")
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
    exp = sub.add_parser("experiment", help="a sweep of QUIC downloads, in parallel and "
                         "resumable, with results.csv and a Markdown report",
                         conflict_handler="resolve")
    exp.add_argument("kind", choices=["ack-policy", "constrained-return"],
                     help="ack-policy: the sweep the options give; constrained-return: the "
                     "constrained-return-link study's matrix (docs/profiles.md, \"Presets\"), "
                     "each of its options replaced by any given here")
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
                     "endpoint.max_ack_delay, endpoint.stack=aioquic,quinn,aioquic/quinn; "
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
    sim = sub.add_parser("sim", help="start, stop or check the simulated board")
    sim.add_argument("action", choices=["start", "stop", "status"])
    sim.add_argument("--port", type=whole(1, 65535, "a TCP port"),
                     help="TCP port for its UART (default: a free one)")
    sim.add_argument("--tap", action="store_true",
                     help=f"bridge ports A and B to TAP interfaces {' and '.join(TAPS)} for "
                          "real-time traffic (root)")
    sim.set_defaults(func=cmd_sim)
    flash = sub.add_parser("flash", help="program a board's bitstream with openFPGALoader: into "
                                         "the FPGA's SRAM, or its SPI flash")
    flash.add_argument("--board", required=True, choices=sorted(FLASH_BOARDS),
                       help="the board; its programmer: " + "; ".join(
                           f"{name}: {b.programmer}" for name, b in sorted(FLASH_BOARDS.items())))
    mode = flash.add_mutually_exclusive_group()
    mode.add_argument("--sram", dest="mode", action="store_const", const="sram",
                      help="load into the FPGA's configuration SRAM, lost at power-off (default)")
    mode.add_argument("--spi", dest="mode", action="store_const", const="spi",
                      help="write the board's SPI configuration flash: the FPGA loads it at "
                           "every power-on")
    flash.add_argument("--bitstream", metavar="PATH", type=given("a file name"),
                       help="the .bit file (default: the one the "
                       "last `make bitstream BOARD=...` built, from bench/results/bitstream-"
                       "BOARD.json)")
    cables = ", ".join(f"{b.cable} for {name}" for name, b in sorted(FLASH_BOARDS.items()))
    flash.add_argument("--cable", metavar="NAME", type=given("a cable name"),
                       help="the programmer, by openFPGALoader's "
                       f"cable name (openFPGALoader --list-cables; default {cables})")
    flash.add_argument("--ftdi-serial", metavar="SERIAL", type=given("a serial number"),
                       help="the FTDI programmer with this "
                       "serial number, when several are plugged in")
    flash.add_argument("--freq", metavar="HZ", type=given("a frequency"),
                       help="the JTAG clock, e.g. 6000000 or 6M "
                       "(default: openFPGALoader's, 6 MHz)")
    flash.add_argument("--verify", action="store_true",
                       help="with --spi: read the flash back and compare")
    flash.add_argument("--force", action="store_true",
                       help="flash even a bitstream whose build report says it is not ok "
                            "(timing not met)")
    flash.add_argument("--dry-run", action="store_true",
                       help="print the openFPGALoader command and stop")
    flash.set_defaults(func=cmd_flash, mode="sram")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's). Its status: 0 on success, 2 after a
    one-line error on stderr for anything expected (a bad option, profile, file or box: no
    traceback; argparse's own usage errors exit with 2 too), 130 on Ctrl-C."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ProfileError, UnitError, ConfigError, DeviceError, FlashError,
            CheckoutError) as e:
        print(f"satemu: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:            # output piped into a command that stopped reading
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as e:               # a file or directory that cannot be read or written
        where = f"{e.filename}: " if e.filename else ""
        print(f"satemu: {where}{e.strerror or _one_line(e)}", file=sys.stderr)
        return 2


def _one_line(e: Exception) -> str:
    """An error's message on one line: its lines joined."""
    return "; ".join(line.strip() for line in str(e).splitlines() if line.strip()) or repr(e)


if __name__ == "__main__":
    sys.exit(main())
