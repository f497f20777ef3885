# SPDX-License-Identifier: BSD-2-Clause
"""``satemu serve``: the lab console, an HTTP API and a web page over one or more boxes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from satemu.cli.args import given, seconds
from satemu.cli.errors import UsageError

DEFAULT_LISTEN = "127.0.0.1:8470"


def default_data() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "satemu" / "console"


def add_serve(sub) -> None:
    serve = sub.add_parser("serve", help="the lab console: an HTTP API and a web page over "
                                         "boxes, their live state and profiles")
    serve.add_argument("--box", action="append", default=[], metavar="NAME=URL",
                       type=given("NAME=URL"),
                       help="a box to serve: a serial device, rfc2217://HOST:PORT or "
                            "socket://HOST:PORT (a simulated board); repeatable")
    serve.add_argument("--sim", action="append", default=[], metavar="NAME",
                       type=given("a box name"),
                       help="a simulated board the console starts (built first if need be) "
                            "and stops; repeatable")
    serve.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                       type=given("HOST:PORT"),
                       help="where to listen (default %(default)s: this machine only)")
    serve.add_argument("--data", type=Path, metavar="DIR",
                       help="the console's folder: its token's hash, saved profiles and the "
                            f"files they name (default {default_data()})")
    serve.add_argument("--new-token", action="store_true",
                       help="make a new token (changes need it), print it once and exit; its "
                            "hash replaces the folder's")
    serve.add_argument("--closed-reads", action="store_true",
                       help="reading needs the token too (default: anyone who reaches the "
                            "address may watch)")
    serve.add_argument("--poll", type=seconds(0.02, 10, "a period"), default=0.1, metavar="S",
                       help="how often each box is read (default %(default)s s)")
    serve.set_defaults(func=cmd_serve)


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {text[:60]!r}: HOST:PORT, such as {DEFAULT_LISTEN}")
    return host.strip("[]"), int(port)


def _boxes(args, poll: float) -> dict:
    from satemu.quic.engine import engine_class
    from satemu.serve.app import NAME
    from satemu.serve.boxes import Box
    boxes = {}
    specs = [(spec.partition("=")[0], spec.partition("=")[2], False) for spec in args.box]
    specs += [(name, None, True) for name in args.sim]
    for name, url, sim in specs:
        if not NAME.fullmatch(name):
            raise UsageError(f"box name {name[:60]!r}: letters, digits, '.', '_' and '-'")
        if name in boxes:
            raise UsageError(f"box {name}: named twice")
        if not sim and not url:
            raise UsageError(f"--box {name}: give NAME=URL")
        board = engine_class("board") if sim else None
        boxes[name] = Box(name, url, sim=sim, poll_s=poll,
                          launcher=(lambda b=board: b.launch(lifeline=True)) if sim else None,
                          killer=board.kill if sim else None)
    return boxes


def cmd_serve(args) -> int:
    from satemu.serve.auth import TokenError, Tokens, new_token
    data = args.data or default_data()
    if args.new_token:
        token = new_token(data)
        print(f"the console's token (shown once; its hash is in {data}):")
        print(token)
        return 0
    host, port = _listen(args.listen)
    try:
        tokens = Tokens.from_folder(data)
    except TokenError as e:
        raise UsageError(str(e)) from None
    if not args.box and not args.sim:
        raise UsageError("no box to serve: give --box NAME=URL or --sim NAME")
    import threading

    import uvicorn

    from satemu.serve.app import Console, create_app
    boxes = _boxes(args, args.poll)
    console = Console(boxes, data, tokens, open_reads=not args.closed_reads)
    for box in boxes.values():
        if box.sim:                     # in the background: the page shows it starting
            threading.Thread(target=_start_quietly, args=(box,), daemon=True).start()
    print(f"satemu console at http://{host}:{port}/ serving {', '.join(boxes)}"
          + ("" if tokens.configured else "; no token yet, so read-only (satemu serve "
                                         "--new-token)"), file=sys.stderr, flush=True)
    try:
        uvicorn.run(create_app(console), host=host, port=port, log_level="warning")
    finally:
        for box in boxes.values():
            box.close()
        console.experiments.close()
    return 0


def _start_quietly(box) -> None:
    from satemu.serve.boxes import BoxError
    try:
        box.start()
    except BoxError as e:
        box.error = str(e)
