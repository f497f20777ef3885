# SPDX-License-Identifier: BSD-2-Clause
"""``satemu sim``, and the simulated board's lifecycle for the verbs that run on it."""

from __future__ import annotations

import contextlib

from satemu.box.device import Device, DeviceError
from satemu.cli.args import whole
from satemu.cli.errors import UsageError
from satemu.quic.engine import engine_class

TAPS = ("satemu-a", "satemu-b")     # `satemu sim start --tap`: the TAPs of ports A and B


def add_sim(sub) -> None:
    sim = sub.add_parser("sim", help="start, stop or check the simulated board")
    sim.add_argument("action", choices=["start", "stop", "status"])
    sim.add_argument("--port", type=whole(1, 65535, "a TCP port"),
                     help="TCP port for its UART (default: a free one)")
    sim.add_argument("--tap", action="store_true",
                     help=f"bridge ports A and B to TAP interfaces {' and '.join(TAPS)} for "
                          "real-time traffic (root)")
    sim.set_defaults(func=cmd_sim)


def cmd_sim(args) -> int:
    board = engine_class("board")
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
def simulated_board(args):
    """The simulated board to use, for the ``with`` block: the one ``--port``/``--eth-port``
    name, else the one ``satemu sim`` manages, started if need be (and stopped afterwards,
    unless ``--keep``, if it was started here). With ``--engine model``, none: None."""
    if getattr(args, "engine", "board") == "model":
        if args.port or args.eth_port:
            raise UsageError("--port and --eth-port name a simulated board: not with "
                             "--engine model")
        yield None
        return
    board = engine_class("board")
    if args.port:
        if not args.eth_port:
            raise DeviceError("--port names a simulated board: give its --eth-port too")
        with Device(args.port) as dev:
            hello = dev.hello()
        yield {"url": args.port, "eth_port": args.eth_port, "hello": hello}
        return
    running = board.status()
    if running:
        yield running
        return
    try:
        state = board.start()
    except board.BoardError as e:
        raise DeviceError(str(e)) from None
    try:
        yield state
    finally:
        if not args.keep:
            board.stop()
