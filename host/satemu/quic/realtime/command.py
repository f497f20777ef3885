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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                 description="Real-time QUIC bulk endpoints and a capture")
    sub = ap.add_subparsers(dest="command", required=True)

    def quic_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--port", type=int, default=SERVER.port, help="server UDP port")
        p.add_argument("--ack", default="default", help="ACK policy: default, ratio:N, "
                       "adaptive or ack-frequency:N")
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
