# SPDX-License-Identifier: BSD-2-Clause
"""The run's children: python -m satemu.quic.realtime {serve,fetch,capture}."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Optional

from satemu.quic.aio import fetch_bulk, serve_bulk
from satemu.quic.afpacket import capture
from satemu.quic.netns import RealtimeError
from satemu.quic.packets import SERVER
from satemu.quic.settings import EndpointSettings
from satemu.quic.realtime.supervise import MODULE


def _write_json(path: str, record: dict) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(record) + "\n", encoding="utf-8")
    tmp.replace(path)


def _settings(args: argparse.Namespace) -> EndpointSettings:
    try:
        return EndpointSettings.from_dict(json.loads(args.settings)) if args.settings \
            else EndpointSettings()
    except (ValueError, TypeError) as e:
        raise RealtimeError(f"--settings: {e}") from None


def _cmd_serve(args: argparse.Namespace) -> int:
    async def run() -> dict:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        ready = (lambda _addr: Path(args.ready).touch()) if args.ready else None
        return await serve_bulk(args.bind, args.port, ack=args.ack,
                                settings=_settings(args), stop=stop, ready=ready)

    record = asyncio.run(run())
    if args.stats:
        _write_json(args.stats, record)
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    record = asyncio.run(fetch_bulk(args.connect, args.port, args.size, ack=args.ack,
                                    settings=_settings(args), local_port=args.local_port,
                                    timeout=args.timeout, keylog=args.keylog))
    if args.result:
        _write_json(args.result, record)
    if not record["completed"]:
        print(f"fetch: {record['error']}", file=sys.stderr)
    return 0 if record["completed"] else 1


def _cmd_capture(args: argparse.Namespace) -> int:
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    capture(args.interface, args.out, args.ready, should_stop=lambda: bool(stop))
    return 0


GO_TIMEOUT_S = 60.0          # a flows child waits this long for the run's origin


def _cmd_flows(args: argparse.Namespace) -> int:
    """One side of a scenario's connections in real time (satemu.quic.realtime.live)."""
    import contextlib
    import time
    from satemu.quic.realtime.live import LiveSide, read_plan
    from satemu.quic.scenario import flow_pairs
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    specs = read_plan(args.plan)
    wanted = {int(x) for x in args.flows.split(",")} if args.flows else set(range(len(specs)))
    with contextlib.ExitStack() as files:
        keylog = files.enter_context(open(args.keylog, "w", encoding="ascii")) \
            if args.keylog else None
        pairs, _flows = flow_pairs(specs, 1_000_000_000, keylog, seeded=False)
        mine = [i for i, p in enumerate(pairs) if p.flow in wanted]
        side = LiveSide(pairs, mine, args.role)
        try:
            if args.ready:
                Path(args.ready).write_text("ready\n", encoding="utf-8")
            deadline = time.monotonic() + GO_TIMEOUT_S
            while not Path(args.go).exists():
                if stop or time.monotonic() > deadline:
                    raise RealtimeError("the run did not start (no origin)")
                time.sleep(0.002)
            side.start(int(Path(args.go).read_text(encoding="ascii")))
            done = (lambda: Path(args.done).write_text("done\n", encoding="utf-8")) \
                if args.done else None
            side.run(lambda: bool(stop), args.until, done)
        finally:
            side.close()
        if keylog is not None:
            for i in mine:
                if pairs[i].client.stack == "quinn":
                    keylog.write(pairs[i].client.endpoint.key_log().decode())
    _write_json(args.out, side.record())
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                 description="Real-time QUIC bulk endpoints and a capture")
    sub = ap.add_subparsers(dest="command", required=True)

    def quic_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--port", type=int, default=SERVER.port, help="server UDP port")
        p.add_argument("--ack", default="default", help="ACK policy: default, ratio:N, "
                       "adaptive, ack-frequency:N, chromium, picoquic, quicly:N or neqo[:R]")
        p.add_argument("--settings", metavar="JSON", help="the endpoint settings "
                       "(satemu.quic.settings.EndpointSettings as a JSON object; default: its "
                       "defaults)")

    serve = sub.add_parser("serve", help="serve one bulk download, then exit")
    serve.add_argument("--bind", default=SERVER.ipv4)
    quic_args(serve)
    serve.add_argument("--stats", metavar="FILE", help="write the server's record here")
    serve.add_argument("--ready", metavar="FILE", help="create FILE once listening")
    serve.set_defaults(func=_cmd_serve)
    fetch = sub.add_parser("fetch", help="download --size bytes; exit 0 when complete")
    fetch.add_argument("--connect", default=SERVER.ipv4)
    quic_args(fetch)
    fetch.add_argument("--size", type=int, required=True)
    fetch.add_argument("--local-port", type=int, default=0, help="client UDP port (0: any)")
    fetch.add_argument("--timeout", type=float, default=120.0, metavar="S")
    fetch.add_argument("--result", metavar="FILE", help="write the client's record here")
    fetch.add_argument("--keylog", metavar="FILE", help="write the connection's TLS secrets "
                       "here (SSLKEYLOGFILE lines)")
    fetch.set_defaults(func=_cmd_fetch)
    flows = sub.add_parser("flows", help="one side of a scenario's connections, until "
                           "SIGTERM")
    flows.add_argument("--role", choices=("client", "server"), required=True)
    flows.add_argument("--plan", required=True, help="the run's flows (JSON)")
    flows.add_argument("--flows", help="the flows whose side this is (indices, e.g. 0,2; "
                       "default: all)")
    flows.add_argument("--go", required=True, help="the file that gives the run's origin "
                       "(CLOCK_MONOTONIC ns) once it exists")
    flows.add_argument("--until", type=float, required=True, metavar="S",
                       help="stop at this many seconds from the origin")
    flows.add_argument("--out", required=True, help="write this side's record here")
    flows.add_argument("--ready", help="create this file once the sockets are bound")
    flows.add_argument("--done", help="create this file once every client here is done")
    flows.add_argument("--keylog", help="write the clients' TLS secrets here")
    flows.set_defaults(func=_cmd_flows)
    cap = sub.add_parser("capture", help="record the frames on an interface until SIGTERM")
    cap.add_argument("--if", dest="interface", required=True)
    cap.add_argument("--out", required=True)
    cap.add_argument("--ready", help="create this file once capturing")
    cap.set_defaults(func=_cmd_capture)
    return ap


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (RealtimeError, OSError) as e:
        print(f"{MODULE} {args.command}: {e}", file=sys.stderr)
        return 2
