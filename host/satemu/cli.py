# SPDX-License-Identifier: BSD-2-Clause
"""The ``satemu`` command line: a thin layer over the profile and device APIs."""

from __future__ import annotations

import argparse
import os
import sys
from fractions import Fraction

import time
from pathlib import Path

from . import __version__
from .device import Device, DeviceError
from .profile import Hardware, ProfileError, builtin_profiles, load_profile
from .protocol import CHANNEL_FORWARD, CHANNEL_RETURN
from .units import format_size, format_time

REPO = Path(__file__).resolve().parents[2]


def cmd_profiles(args) -> int:
    profiles = builtin_profiles()
    width = max(map(len, profiles))
    for name, p in profiles.items():
        print(f"{name:<{width}}  {p.description}")
    return 0


def cmd_show(args) -> int:
    hw = Hardware(f_clk=args.f_clk, mem_words=args.mem_words)
    p = load_profile(args.profile)
    regs = p.check(hw)
    print(f"{p.name}: {p.description}" if p.description else p.name)
    if p.source:
        print(f"  source: {p.source}")
    for name, ch in p.channels():
        r = regs[name]
        per_byte = Fraction(r.rate_q) + Fraction(r.rate_num, r.rate_den)
        print(f"  {name:<8} {ch.describe(hw)}")
        frac = f" + {r.rate_num}/{r.rate_den}" if r.rate_num else ""
        shaping = f"{r.rate_q}{frac} cycles per byte" if per_byte else "not shaped"
        print(f"           at {hw.f_clk / 1e6:g} MHz: {shaping}, delay {r.delay} cycles "
              f"({format_time(Fraction(max(r.delay, hw.params.latency_floor), hw.f_clk))} "
              f"departure to egress)")
        need = ch.budget_words(hw)
        print(f"           delay line: at most {format_size(need * 8)} of "
              f"{format_size(hw.mem_words * 8)} ({100 * need / hw.mem_words:.1f}%)")
    return 0


def cmd_load(args) -> int:
    p = load_profile(args.profile)          # a bad file fails here, before the box is asked
    with Device(args.port, timeout=args.timeout) as dev:
        info = dev.hello()
        hw = Hardware(f_clk=info["f_clk"], mem_words=info["mem_words"], params=dev.params())
        regs = p.check(hw)
        dev.set_profile(CHANNEL_FORWARD, regs["forward"])
        dev.set_profile(CHANNEL_RETURN, regs["return"])
        dev.commit(reseed=args.reseed)
    print(f"loaded {p.name} into {args.port} and committed both channels")
    for name, ch in p.channels():
        print(f"  {name:<8} {ch.describe()}")
    return 0


STAT_ROWS = [("rx_frames", "frames in"), ("rx_bytes", "bytes in"), ("tx_frames", "frames out"),
             ("tx_bytes", "bytes out"), ("drop_loss", "dropped: loss"),
             ("drop_queue", "dropped: queue full"), ("drop_mem", "dropped: memory full"),
             ("drop_runt", "dropped: runt"), ("drop_oversize", "dropped: oversize"),
             ("drop_error", "dropped: bad FCS"), ("drop_overrun", "dropped: overrun"),
             ("drop_preamble", "dropped: no preamble"), ("late", "late"),
             ("queue_frames_now", "queue frames"), ("queue_frames_hwm", "queue frames, max"),
             ("queue_bytes_hwm", "queue bytes, max"), ("mem_words_hwm", "delay-line words, max")]


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
            if not args.watch:
                return 0
            time.sleep(args.watch)


def cmd_sim(args) -> int:
    import sys
    sys.path.insert(0, str(REPO))
    from sim import board
    if args.action == "start":
        try:
            state = board.start(port=args.port)
        except board.BoardError as e:
            raise DeviceError(str(e)) from None
        print(f"simulated board running at {state['url']} (pid {state['pid']}, "
              f"clock {state['hello']['f_clk'] / 1e6:g} MHz)")
        print(state["url"])
    elif args.action == "stop":
        print("simulated board stopped" if board.stop() else "no simulated board was running")
    else:
        state = board.status()
        print(f"running at {state['url']} (pid {state['pid']})" if state else "not running")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="satemu", description="FPGA-backed satellite link emulator")
    ap.add_argument("--version", action="version", version=f"satemu {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("profiles", help="list the built-in link profiles").set_defaults(func=cmd_profiles)
    show = sub.add_parser("show", help="show a profile and what it means for the hardware")
    show.add_argument("profile", help="a built-in profile name or a TOML file")
    show.add_argument("--f-clk", type=int, default=Hardware.f_clk, metavar="HZ",
                      help="system clock the registers count in (default %(default)s)")
    show.add_argument("--mem-words", type=int, default=Hardware.mem_words, metavar="N",
                      help="delay-line memory per channel, in 64-bit words (default %(default)s)")
    show.set_defaults(func=cmd_show)

    def port_args(p):
        p.add_argument("--port", required=True, metavar="URL",
                       help="the box: a serial device, socket://HOST:PORT (simulated board) or "
                            "rfc2217://HOST:PORT")
        p.add_argument("--timeout", type=float, default=5.0, metavar="S",
                       help="seconds to wait for each answer (default %(default)s)")
    load = sub.add_parser("load", help="load a profile into a box and commit it")
    load.add_argument("profile", help="a built-in profile name or a TOML file")
    load.add_argument("--reseed", action="store_true", help="restart the loss PRNGs from the seeds")
    port_args(load)
    load.set_defaults(func=cmd_load)
    stats = sub.add_parser("stats", help="read a box's counters")
    stats.add_argument("--watch", type=float, nargs="?", const=1.0, metavar="S",
                       help="repeat every S seconds (default 1)")
    port_args(stats)
    stats.set_defaults(func=cmd_stats)
    sim = sub.add_parser("sim", help="start, stop or check the simulated board")
    sim.add_argument("action", choices=["start", "stop", "status"])
    sim.add_argument("--port", type=int, help="TCP port for its UART (default: a free one)")
    sim.set_defaults(func=cmd_sim)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ProfileError, DeviceError) as e:
        print(f"satemu: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:            # output piped into a command that stopped reading
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
