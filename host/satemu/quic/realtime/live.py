# SPDX-License-Identifier: BSD-2-Clause
"""A scenario's endpoints on UDP sockets in real time: the sans-I/O clients or servers the
co-simulation drives (satemu.quic.scenario.flow_pairs), driven by the wall clock instead."""

# One process drives one side of some of a scenario's connections: ``clients`` (a host's flows,
# in its namespace) or ``servers`` (every flow's, behind port B). The endpoints are the very
# objects satemu.quic.cosim.CoSim drives, on either stack, with the same surface: start(now),
# receive(data, now), handle_timer(now), transmit(now) -> [(datagram, info)], timer(now). Time
# ``now`` is CLOCK_MONOTONIC from the run's origin, in seconds: every process of a run shares the
# origin (the ``go`` file), so their times, and the captures' stamps, are on one clock.
#
# A step, as in CoSim, involves only the connections that acted (a datagram in, a timer due, a
# start): their datagrams go out at once, then their timers are read again. A client socket is
# bound to its connection's address; a server socket (one per server address) hands a datagram
# to the connection its source address belongs to, and counts one from nowhere as unrouted.

from __future__ import annotations

import errno
import json
import selectors
import socket
import struct
import time
from pathlib import Path
from typing import Callable, Optional

from satemu.quic.aio import _enlarge_buffers
from satemu.quic.cosim import pairs_finished

__all__ = ["LiveSide", "read_plan", "POLL_S"]

POLL_S = 0.05           # the longest a step waits, so a stop is seen at once
MAX_DATAGRAM = 65535


def read_plan(path: "str | Path") -> list:
    """The flows (satemu.quic.scenario.FlowSpec) of a run's plan file (JSON: ``flows``, each
    FlowSpec.to_plan())."""
    from satemu.quic.scenario import FlowSpec
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return [FlowSpec.from_plan(d) for d in doc["flows"]]


class LiveSide:
    """The ``role`` side ("client" or "server") of the connections ``pairs`` (CoSim pairs,
    indices into the run's list ``mine``), driven in real time on UDP sockets. Construction
    binds the sockets (OSError if an address cannot be bound)."""

    def __init__(self, pairs: list, mine: list[int], role: str) -> None:
        self.pairs, self.mine, self.role = pairs, sorted(mine), role
        self.origin_ns = 0
        self.sel = selectors.DefaultSelector()
        self.socks: dict[tuple, socket.socket] = {}
        self.routes: dict[tuple, int] = {}          # (local, remote) -> pair
        self.log: dict[int, list] = {i: [] for i in self.mine}   # [ns, UDP bytes, ACK-only]
        self.unrouted = 0
        self.send_errors = 0
        self._timers: dict[int, float | None] = {}
        self._acted: set[int] = set()
        for i in self.mine:
            ep = self._ep(i)
            local = ep.local.addr
            if local not in self.socks:
                if role == "client" and any(self._ep(j).local.addr == local
                                            for j in self.mine if j != i):
                    raise OSError(errno.EADDRINUSE, f"two clients at {local[0]}:{local[1]}")
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                _enlarge_buffers(s)
                s.bind(local)
                s.setblocking(False)
                self.socks[local] = s
                self.sel.register(s, selectors.EVENT_READ, local)
            self.routes[local, ep.remote.addr] = i

    def _ep(self, i: int):
        p = self.pairs[i]
        return p.client if self.role == "client" else p.server

    def now(self) -> float:
        return (time.monotonic_ns() - self.origin_ns) / 1e9

    # ---- the run -------------------------------------------------------------------------

    def start(self, origin_ns: int) -> None:
        self.origin_ns = origin_ns
        while (wait := origin_ns - time.monotonic_ns()) > 0:     # no endpoint acts before it
            time.sleep(wait / 1e9)
        if self.role == "server":
            self._acted.update(self.mine)       # their timers (none before a client's Initial)
        self._start_due()
        self._transmit()

    def _start_due(self) -> None:
        if self.role != "client":
            return
        now = self.now()
        for i in self.mine:
            p = self.pairs[i]
            if p.started:
                continue
            if p.after is not None:
                if not self.pairs[p.after].client.done:
                    continue
            elif p.start > round(now * 1e9):
                continue
            p.started = True
            self._acted.add(i)
            with p.acting():
                p.client.start(now)

    def _transmit(self) -> None:
        now = self.now()
        for i in sorted(self._acted):
            p, ep = self.pairs[i], self._ep(i)
            with p.acting():
                out = ep.transmit(now)
            sock, dest = self.socks[ep.local.addr], ep.remote.addr
            # The pair's ECN field, per datagram (pairs on one socket may differ).
            tos = [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", p.ecn))] if p.ecn else []
            for data, info in out:
                try:
                    sock.sendmsg([data], tos, 0, dest)
                except OSError:         # a full socket buffer, no route: the datagram is lost
                    self.send_errors += 1
                    continue
                self.log[i].append([time.monotonic_ns(), len(data), bool(info.ack_only)])
            with p.acting():
                self._timers[i] = ep.timer(now)
        self._acted.clear()

    def _next_wake(self) -> float:
        """The seconds until the next timer or start is due (at most POLL_S)."""
        now = self.now()
        due = [t for t in self._timers.values() if t is not None]
        if self.role == "client":
            due += [self.pairs[i].start / 1e9 for i in self.mine
                    if not self.pairs[i].started and self.pairs[i].after is None]
        return min([POLL_S, *(t - now for t in due)]) if due else POLL_S

    def step(self) -> None:
        """Wait for a datagram, a timer or a start (at most POLL_S), and let the endpoints
        concerned act."""
        wait = self._next_wake()
        for key, _mask in self.sel.select(max(0.0, wait)):
            local, sock = key.data, key.fileobj
            while True:
                try:
                    data, addr = sock.recvfrom(MAX_DATAGRAM)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:             # an ICMP error queued on the socket
                    continue
                i = self.routes.get((local, addr))
                if i is None or (self.role == "client" and not self.pairs[i].started):
                    self.unrouted += 1
                    continue
                p = self.pairs[i]
                with p.acting():
                    self._ep(i).receive(data, self.now())
                self._acted.add(i)
        now = self.now()
        for i, t in list(self._timers.items()):
            if t is not None and t <= now:
                p = self.pairs[i]
                with p.acting():
                    self._ep(i).handle_timer(now)
                self._acted.add(i)
        self._start_due()
        self._transmit()

    def finished(self) -> bool:
        """Every client here is done or failed (or waits for one that failed)."""
        return pairs_finished(self.pairs, self.mine)

    def run(self, stop: Callable[[], bool], until: float,
            on_finished: Optional[Callable[[], None]] = None) -> None:
        """Step until ``stop()`` or ``until`` seconds from the origin; ``on_finished`` is called
        once when the clients here are all done or failed (a client process goes on answering
        its peers until it is stopped: a late ACK still reaches the server)."""
        told = False
        while not stop() and self.now() < until:
            self.step()
            if not told and self.role == "client" and self.finished():
                told = True
                if on_finished is not None:
                    on_finished()

    def close(self) -> None:
        self.sel.close()
        for s in self.socks.values():
            s.close()

    # ---- the record ----------------------------------------------------------------------

    def record(self) -> dict:
        """This side's connections: each one's times (s from the origin), objects, counters
        and datagrams sent ([monotonic ns, UDP bytes, ACK-only])."""
        conns = []
        for i in self.mine:
            p, ep = self.pairs[i], self._ep(i)
            c = {"pair": i, "flow": p.flow, "stats": ep.stats_dict(),
                 "datagrams": self.log[i]}
            if self.role == "client":
                c.update(started=p.started, started_at=ep.started_at,
                         handshake_at=ep.handshake_at, done=ep.done, error=ep.error,
                         objects=[o.to_dict() for o in ep.app.objects])
            conns.append(c)
        return {"role": self.role, "origin_ns": self.origin_ns, "unrouted": self.unrouted,
                "send_errors": self.send_errors, "connections": conns}
