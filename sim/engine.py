# SPDX-License-Identifier: BSD-2-Clause
"""The ``board`` engine: QUIC across the simulated board in Verilator, registered with the host
tool under ``satemu.engines`` (sim/pyproject.toml; ``satemu.quic.engine`` has the seam).

``satemu.quic.engine.run_transfer`` drives it: the profile is loaded through the firmware over
the UART (as ``satemu load PROFILE --reseed`` does), the wire is the board's
(``sim.frames.EthPorts``), and the counters and the BoD ring are the board's own, read over the
UART after the transfer. The class also carries the simulated board's lifecycle
(``sim.board``), for the verbs that start, stop and build it.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from satemu.base import protocol as P
from satemu.base.params import FATE_COUNTER
from satemu.box.device import Device
from satemu.quic.boxrun import load_link, read_bod, read_counters
from satemu.quic.cosim import CoSim
from satemu.quic.engine import Loaded, Outcome, run_transfer as run_on
from satemu.quic.transfer import Transfer
from sim import board as _board
from sim.frames import EthPorts

# How long a run waits for the frames an earlier one left in the board to leave it.
CLEAN_WAIT_S = 120.0
# A profile without BoD, which any board takes: loaded between a BoD run and the next.
PLAIN = 'name = "plain"\n[forward]\nrate = "1 Mbit/s"\n[return]\nrate = "1 Mbit/s"\n'


class BoardEngine:
    """The simulated board at UART ``url`` whose Ethernet module listens on ``eth_port``."""
    name = "board"
    # The simulated board's lifecycle (sim.board), for `satemu sim`, quic and experiment.
    BoardError = _board.BoardError
    start = staticmethod(_board.start)
    stop = staticmethod(_board.stop)
    status = staticmethod(_board.status)
    launch = staticmethod(_board.launch)
    kill = staticmethod(_board.kill)
    alive = staticmethod(_board.alive)
    build_board = staticmethod(_board.build_board)

    def __init__(self, url: str, eth_port: int):
        self.url, self.eth_port = url, eth_port

    @contextmanager
    def load(self, link, max_seconds: float):
        with Device(self.url) as dev:
            # A timeline starts a moment after it is armed with the load, in box time: the
            # transfer starts at about the same cycle, and the run records where it did.
            loaded = load_link(dev, link, max_seconds, before=lambda: make_clean(dev))
        self.regs, self.commits = loaded.regs, loaded.commits
        with EthPorts(self.eth_port) as eth:
            try:
                yield Loaded(eth, loaded.f_clk, loaded.timeline)
            finally:
                eth.release()

    def settle(self, sim: CoSim) -> Outcome:
        with Device(self.url) as dev:
            drain(sim, dev)
            stats, terminals = read_counters(dev, self.regs)
            return Outcome(stats, read_bod(dev, self.regs["return"], sim.origin, self.commits),
                           terminals=terminals)


def make_clean(dev, timeout: float = CLEAN_WAIT_S) -> None:
    """Before a run: the board as a fresh one would be, whatever became of the run before (a
    process killed mid-transfer leaves its frames in the channels and its requests in the BoD
    block). No timeline runs; with no client on its ports the board runs freely until both
    channels hold no frame; and a return channel that BoD serves is loaded once without BoD,
    so that the run's own load restarts the block (a layout commit) with no backlog."""
    from satemu.base.regmap import BOD_ENABLE
    from satemu.link.profile import parse_profile
    dev.stop_timeline()
    if not dev.wait_empty(timeout, poll=0.2):
        raise _board.BoardError(f"the simulated board still holds frames of an earlier "
                                f"run after {timeout:.0f} s; restart it (satemu sim stop)")
    if dev.get_profile(P.CHANNEL_RETURN)["bod_flags"] & BOD_ENABLE:
        dev.load(parse_profile(PLAIN, "plain"), settle=timeout)


def drain(sim: CoSim, dev, timeout: float = 600.0) -> None:
    """After the transfer: the endpoints stop; the board runs freely until every frame they
    sent, and every copy its duplication made, has left it or been dropped (by its own
    counters, read over the UART: rx_frames + duplicated = tx_frames + drops), and the
    frames still in flight are recorded as delivered, though no endpoint reads them."""
    sim.eth.release()
    deadline = time.monotonic() + timeout
    sent = {d: sum(p.direction == d for p in sim.sent) for d in ("forward", "return")}
    while True:
        stats = {"forward": dev.get_stats(P.CHANNEL_FORWARD),
                 "return": dev.get_stats(P.CHANNEL_RETURN)}
        settled = all(
            s["rx_frames"] + s["drop_overrun"] + s["drop_preamble"] == sent[d] and
            s["rx_frames"] + s["duplicated"] ==
            s["tx_frames"] + sum(s[k] for k in FATE_COUNTER.values())
            for d, s in stats.items())
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    want = {0: stats["forward"]["tx_frames"], 1: stats["return"]["tx_frames"]}
    decided = {0: stats["forward"]["rx_frames"], 1: stats["return"]["rx_frames"]}
    sim.eth.wait({}, want, timeout=max(1.0, deadline - time.monotonic()), fates=decided)
    sim.record_rest()


def run_transfer(url: str, eth_port: int, profile, size: int, **kwargs) -> Transfer:
    """``satemu.quic.engine.run_transfer`` on the board at ``url`` and ``eth_port``."""
    return run_on(BoardEngine(url, eth_port), profile, size, **kwargs)
