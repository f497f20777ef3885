# SPDX-License-Identifier: BSD-2-Clause
"""An ideal link for QUIC endpoint tests: two peers of any stack joined by a fixed delay, in
virtual time, without the board or its models."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from satemu.base.ether import WIRE_OVERHEAD
from satemu.quic.packets import build_frame, parse_frame


@dataclass
class Sent:
    time: float
    sender: str
    index: int            # per-sender datagram number
    frame: bytes
    data: bytes           # the UDP payload: the QUIC datagram
    ack_only: bool


@dataclass
class IdealLink:
    """Two QUIC peers (the surface satemu.quic.cosim.CoSim drives) joined by a fixed one-way
    ``delay``, run in virtual time on a heap of (time, seq, event).

    Each direction serialises frames at ``rate`` bit/s (frame plus preamble, FCS and gap; 0:
    at once). ``hold`` maps (sender, datagram index) to extra delay, to reorder one datagram;
    ``drop`` holds the (sender, datagram index) pairs the link loses.
    """

    client: object
    server: object
    delay: float = 0.020
    rate: float = 10e6
    hold: dict = field(default_factory=dict)
    drop: set = field(default_factory=set)
    sent: list = field(default_factory=list)
    arrivals: list = field(default_factory=list)    # (time, receiver, sender's index)

    def __post_init__(self):
        self._heap, self._seq = [], 0
        self._free = {"client": 0.0, "server": 0.0}
        self._count = {"client": 0, "server": 0}
        self._gen = {"client": 0, "server": 0}
        self._peers = {"client": self.client, "server": self.server}

    def _push(self, t, *event):
        heapq.heappush(self._heap, (t, self._seq, event))
        self._seq += 1

    def _send(self, name, now):
        peer = self._peers[name]
        other = "server" if name == "client" else "client"
        for data, info in peer.transmit(now):
            index = self._count[name]
            self._count[name] += 1
            frame = build_frame(peer.local, peer.remote, data, ip_id=index & 0xFFFF)
            self.sent.append(Sent(now, name, index, frame, data, info.ack_only))
            start = max(now, self._free[name])
            wire = (len(frame) + WIRE_OVERHEAD) * 8 / self.rate if self.rate else 0.0
            self._free[name] = start + wire
            if (name, index) not in self.drop:
                arrive = self._free[name] + self.delay + self.hold.get((name, index), 0.0)
                self._push(arrive, "arrive", other, frame, index)
        self._gen[name] += 1
        timer = peer.timer(now)
        if timer is not None:
            assert timer > now
            self._push(timer, "timer", name, self._gen[name])

    def run(self, until: float = 10.0) -> "IdealLink":
        """Until the client is done (or failed); asserts it finished by ``until`` without
        error."""
        self.client.start(0.0)
        self._send("client", 0.0)
        while self._heap and not self.client.done and self.client.error is None:
            t, _, event = heapq.heappop(self._heap)
            assert t <= until, "transfer did not finish in time"
            if event[0] == "arrive":
                _, name, frame, index = event
                peer = self._peers[name]
                src, dst, payload = parse_frame(frame)
                assert (src, dst) == (peer.remote, peer.local)
                self.arrivals.append((t, name, index))
                peer.receive(payload, t)
                self._send(name, t)
            else:
                _, name, gen = event
                if gen == self._gen[name]:
                    self._peers[name].handle_timer(t)
                    self._send(name, t)
        assert self.client.error is None, self.client.error
        assert self.client.done
        return self

    def of(self, sender):
        return [s for s in self.sent if s.sender == sender]
