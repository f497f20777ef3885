# SPDX-License-Identifier: BSD-2-Clause
"""The ``board`` engine of the co-simulation: QUIC across the simulated board in Verilator.

The lock-step driver is ``satemu.quic.cosim.CoSim``; here the profile is loaded through the
firmware over the UART, the wire is the board's (``sim.frames.EthPorts``), and the counters and
the BoD ring are the board's own, read over the UART after the transfer.
"""

from __future__ import annotations

import io
import time
from typing import Callable

from satemu.quic.cosim import CoSim, bod_dict, endpoints, make_transfer, write_run_capture
from satemu.transfer import Transfer
from sim.frames import EthPorts

# A timeline starts 1/TIMELINE_LEAD s of box time after its entries are stored: time enough for
# START's answer over the simulated UART.
TIMELINE_LEAD = 20


def drain(sim: CoSim, dev, timeout: float = 600.0) -> None:
    """After the transfer: the endpoints stop; the board runs freely until every frame they
    sent has left it or been dropped (by its own counters, read over the UART), and the
    frames still in flight are recorded as delivered, though no endpoint reads them."""
    from satemu import protocol as P
    from satemu.params import FATE_COUNTER
    sim.eth.release()
    deadline = time.monotonic() + timeout
    sent = {d: sum(p.direction == d for p in sim.sent) for d in ("forward", "return")}
    while True:
        stats = {"forward": dev.get_stats(P.CHANNEL_FORWARD),
                 "return": dev.get_stats(P.CHANNEL_RETURN)}
        settled = all(
            s["rx_frames"] + s["drop_overrun"] + s["drop_preamble"] == sent[d] and
            s["rx_frames"] == s["tx_frames"] + sum(s[k] for k in FATE_COUNTER.values())
            for d, s in stats.items())
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    want = {0: stats["forward"]["tx_frames"], 1: stats["return"]["tx_frames"]}
    decided = {0: stats["forward"]["rx_frames"], 1: stats["return"]["rx_frames"]}
    sim.eth.wait({}, want, timeout=max(1.0, deadline - time.monotonic()), fates=decided)
    sim.record_rest()


def run_transfer(url: str, eth_port: int, profile, size: int, ack: str = "default",
                 seed: int = 0, max_seconds: float = 600.0, settings=None, stacks="aioquic",
                 progress: Callable[[CoSim], None] | None = None, qlog_dir=None,
                 pcap=None) -> Transfer:
    """Load ``profile`` through the firmware (as ``satemu load`` does), then download ``size``
    bytes from the server (port B) to the client (port A) across the running simulated board;
    ``pcap``: where to write the run's capture (satemu.quic.cosim.write_run_capture)."""
    from satemu import protocol as P
    from satemu.device import Device
    from satemu.profile import load_profile

    from satemu.quic.settings import EndpointSettings

    settings = settings or EndpointSettings()
    link = load_profile(profile)
    timeline, commits = None, ()
    with Device(url) as dev:             # as `satemu load PROFILE --reseed` does
        info = dev.hello()
        dev.load(link, reseed=True, stop_timeline=True)
        if link.timeline is not None:
            # Started a moment after it is stored, in box time: the transfer starts at about
            # the same cycle, and the run records where it did.
            from satemu.timeline import compile_timeline, timeline_dict
            compiled = compile_timeline(link, dev.hardware())
            start = dev.load_timeline(compiled.entries, compiled.period,
                                      lead=info["f_clk"] // TIMELINE_LEAD)
            timeline = timeline_dict(link, compiled, start, info["f_clk"])
            commits = compiled.commits(start, "return",
                                       compiled.laps_within(round(max_seconds * info["f_clk"])))
        dev.reset_stats()
    t0 = time.monotonic()
    keylog = io.StringIO() if pcap is not None else None
    with EthPorts(eth_port) as eth, \
            endpoints(size, ack, seed, settings, stacks, qlog_dir, keylog) as (client, server,
                                                                              policy):
        sim = CoSim(eth, info["f_clk"], client, server, capture=pcap is not None)
        try:
            sim.run(lambda: client.done or client.error is not None, max_seconds, progress)
            wall = time.monotonic() - t0
            with Device(url) as dev:
                drain(sim, dev)
                board = {"forward": dev.get_stats(P.CHANNEL_FORWARD),
                         "return": dev.get_stats(P.CHANNEL_RETURN)}
                bod = _bod_trace(dev, link, sim.origin, commits)
        finally:
            sim.eth.release()
    t = make_transfer(sim, link, size, policy, settings, seed, info["f_clk"], board, bod,
                      wall, "board")
    if pcap is not None:
        t.capture = write_run_capture(sim, pcap, keylog.getvalue(), "board", link.name, board)
    t.timeline = timeline
    return t


def _bod_trace(dev, link, origin: int, commits=()) -> dict | None:
    """The BoD ring of the return channel after a transfer (None when it is not BoD-served);
    ``commits``: a timeline's steps on the return channel, which may change its superframes."""
    if link.ret.bod is None:
        return None
    regs = link.check(dev.hardware())["return"]      # as loaded, before any step
    trace = dev.bod_trace()
    return bod_dict(trace.start, origin, regs, trace.records, trace.lost, commits)
