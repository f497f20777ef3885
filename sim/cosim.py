# SPDX-License-Identifier: BSD-2-Clause
"""Virtual-time co-simulation: two sans-I/O QUIC endpoints exchange real Ethernet/IPv4/UDP frames
across the simulated board, in lock-step with its clock.

The client (terminal) sits on port A, the server (gateway) on port B. The board runs until the
next instant at which an endpoint may act: a frame has finished leaving a port (it is delivered
to the endpoint on that port), or an endpoint's timer is due. The endpoints act at that cycle,
and the datagrams they produce go onto their port's wire from that cycle on, back to back at the
wire's rate (as a host's NIC sends them). The board never runs past such an instant, so the
endpoints see the link exactly as the RTL shapes, queues, drops and delays it.

Time: cycle ``c`` is ``(c - origin) / f_clk`` seconds on the endpoints' clock, where ``origin``
is the cycle the transfer started. A datagram is delivered in the cycle after the last beat of
its frame left the port.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from satemu.ether import to_wire
from satemu.quic.packets import build_frame, parse_frame
from satemu.transfer import Delivery, PacketRecord, Transfer
from sim.frames import PORT_A, PORT_B, EthPorts

IDLE_STEP = 1 << 22          # how far the board may run when no endpoint has a timer (cycles)


@dataclass
class CoSim:
    """Drives ``client`` (on port A) and ``server`` (on port B), objects with the surface of
    ``satemu.quic.bulk.BulkClient``/``BulkServer``: ``transmit(now)``, ``timer(now)``,
    ``handle_timer(now)``, ``receive(data, now)``, and ``local``/``remote`` addressing."""

    eth: EthPorts
    f_clk: int
    client: object
    server: object
    sent: list[PacketRecord] = field(default_factory=list)
    delivered: list[Delivery] = field(default_factory=list)
    undecodable: int = 0
    origin: int = 0
    now_cycle: int = 0
    steps: int = 0

    def time(self, cycle: int) -> float:
        return (cycle - self.origin) / self.f_clk

    def cycle_of(self, t: float) -> int:
        return self.origin + max(0, math.ceil(round(t * self.f_clk, 6)))

    def start(self) -> None:
        """Enter lock-step at the board's present cycle and start the client."""
        self.now_cycle = self.origin = self.eth.run(self.eth.now() + 1)
        self._seen = {ch: len(self.eth.traffic.egress[ch]) for ch in (0, 1)}
        self._ip_id = {PORT_A: 0, PORT_B: 0}
        self.client.start(self.time(self.now_cycle))
        self._transmit()

    def _transmit(self) -> None:
        now = self.time(self.now_cycle)
        for peer, port, direction in ((self.client, PORT_A, "return"),
                                      (self.server, PORT_B, "forward")):
            for data, info in peer.transmit(now):
                self._ip_id[port] = (self._ip_id[port] + 1) & 0xFFFF
                frame = build_frame(peer.local, peer.remote, data, self._ip_id[port])
                self.eth.send(port, to_wire(frame), self.now_cycle)
                self.sent.append(PacketRecord(self.now_cycle, direction, len(frame), len(data),
                                              bool(info.ack_only)))

    def step(self) -> None:
        """Run the board to the next instant an endpoint may act, and let the endpoints act."""
        now = self.time(self.now_cycle)
        due = {id(p): p.timer(now) for p in (self.client, self.server)}
        timers = [self.cycle_of(t) for t in due.values() if t is not None]
        limit = max(min(timers) if timers else self.now_cycle + IDLE_STEP, self.now_cycle + 1)
        self.now_cycle = self.eth.run(limit)
        self.steps += 1
        now = self.time(self.now_cycle)
        # Frames that left a port: port A's (forward channel) to the client, port B's to the server.
        for ch, peer, direction in ((0, self.client, "forward"), (1, self.server, "return")):
            out = self.eth.traffic.egress[ch]
            for e in out[self._seen[ch]:]:
                frame, ok = e.frame, e.wire_ok
                try:
                    _src, _dst, payload = parse_frame(frame)
                except ValueError:
                    ok = False
                if not ok:
                    self.undecodable += 1
                    continue
                self.delivered.append(Delivery(self.now_cycle, direction, len(frame)))
                peer.receive(payload, now)
            self._seen[ch] = len(out)
        for peer in (self.client, self.server):
            t = due[id(peer)]
            if t is not None and self.cycle_of(t) <= self.now_cycle:
                peer.handle_timer(now)
        self._transmit()

    def run(self, done: Callable[[], bool], max_seconds: float,
            progress: Callable[["CoSim"], None] | None = None, every: float = 1.0) -> bool:
        """Step until ``done()`` or ``max_seconds`` of virtual time; returns ``done()``.
        ``progress`` is called about every ``every`` wall seconds."""
        self.start()
        end = self.origin + round(max_seconds * self.f_clk)
        last = time.monotonic()
        while not done() and self.now_cycle < end:
            self.step()
            if progress and time.monotonic() - last >= every:
                last = time.monotonic()
                progress(self)
        return done()

    def drain(self, dev, timeout: float = 600.0) -> None:
        """After the transfer: the endpoints stop; the board runs freely until every frame they
        sent has left it or been dropped (by its own counters, read over the UART), and the
        frames still in flight are recorded as delivered, though no endpoint reads them."""
        from satemu import protocol as P
        from satemu.params import FATE_COUNTER
        self.eth.release()
        deadline = time.monotonic() + timeout
        sent = {d: sum(p.direction == d for p in self.sent) for d in ("forward", "return")}
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
        self.eth.wait({}, want, timeout=max(1.0, deadline - time.monotonic()))
        for ch, direction in ((0, "forward"), (1, "return")):
            for e in self.eth.traffic.egress[ch][self._seen[ch]:]:
                self.delivered.append(Delivery(e.wire + (len(e.data) + 7) // 8, direction,
                                               len(e.frame)))
            self._seen[ch] = len(self.eth.traffic.egress[ch])

    def close(self) -> None:
        self.eth.release()


def run_transfer(url: str, eth_port: int, profile, size: int, ack: str = "default",
                 cc: str = "reno", seed: int = 0, max_seconds: float = 600.0,
                 max_ack_delay_ms: float = 25.0, initial_rtt_ms: float = 333.0,
                 progress: Callable[[CoSim], None] | None = None, qlog_dir=None) -> Transfer:
    """Load ``profile`` through the firmware (as ``satemu load`` does), then download ``size``
    bytes from the server (port B) to the client (port A) across the running simulated board."""
    from dataclasses import asdict
    from satemu import protocol as P
    from satemu.device import Device
    from satemu.profile import load_profile
    from satemu.quic.ackpolicy import AckPolicy
    from satemu.quic.bulk import BulkClient, BulkServer, make_configs
    from satemu.quic.determinism import deterministic

    policy = AckPolicy.parse(ack)
    server_policy = policy if policy.kind == "ack-frequency" else "default"
    link = load_profile(profile)
    with Device(url) as dev:             # as `satemu load PROFILE --reseed` does
        info = dev.hello()
        dev.load(link, reseed=True)
        dev.reset_stats()
    t0 = time.monotonic()
    with EthPorts(eth_port) as eth, deterministic(seed):
        client_cfg, server_cfg = make_configs(cc=cc, max_ack_delay_ms=max_ack_delay_ms,
                                              initial_rtt_ms=initial_rtt_ms,
                                              qlog=qlog_dir is not None)
        client = BulkClient(client_cfg, size, policy=policy)
        server = BulkServer(server_cfg, policy=server_policy)
        sim = CoSim(eth, info["f_clk"], client, server)
        try:
            sim.run(lambda: client.done or client.error is not None, max_seconds, progress)
            wall = time.monotonic() - t0
            with Device(url) as dev:
                sim.drain(dev)
                board = {"forward": dev.get_stats(P.CHANNEL_FORWARD),
                         "return": dev.get_stats(P.CHANNEL_RETURN)}
                bod = _bod_trace(dev, link)
        finally:
            sim.close()
    if qlog_dir is not None:
        import json
        from pathlib import Path
        Path(qlog_dir).mkdir(parents=True, exist_ok=True)
        for name, cfg in (("client", client_cfg), ("server", server_cfg)):
            (Path(qlog_dir) / f"{name}.qlog").write_text(json.dumps(cfg.quic_logger.to_dict()))
    used = None
    if server.conn is not None:
        used = server.conn._loss.max_ack_delay * 1000.0      # what the sender's recovery assumes
    return Transfer(
        profile=link.name, size=size, ack=str(policy), cc=cc, seed=seed, f_clk=info["f_clk"],
        completed=client.done,
        completion_s=(client.completed_at - client.started_at) if client.done else None,
        handshake_s=(client.handshake_at - client.started_at) if client.handshake_at else None,
        sent=sim.sent, delivered=sim.delivered,
        client_stats=asdict(client.conn.stats),
        server_stats=asdict(server.conn.stats) if server.conn else {},
        board_stats=board, undecodable=sim.undecodable,
        max_ack_delay_advertised_ms=max_ack_delay_ms, max_ack_delay_used_ms=used,
        wall_s=wall, virtual_s=sim.time(sim.now_cycle), error=client.error, bod=bod)


def _bod_trace(dev, link) -> dict | None:
    """The BoD ring of the return channel after a transfer (None when it is not BoD-served)."""
    from satemu.bod_model import superframe_cycles
    from satemu.params import ChannelRegs
    from satemu import protocol as P
    if link.ret.bod is None:
        return None
    regs = ChannelRegs(**dev.get_profile(P.CHANNEL_RETURN))
    trace = dev.bod_trace()
    return {"start": trace.start, "superframe_cycles": superframe_cycles(regs),
            "slot_bytes": regs.bod_slot_bytes, "records": [vars(r) for r in trace.records],
            "lost": trace.lost}
