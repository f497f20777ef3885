# SPDX-License-Identifier: BSD-2-Clause
"""A flow's endpoints on either stack: clients that run a workload (satemu.quic.workload) over
one connection (quinn's: satemu.quic.quinn.QuinnFlowClient), and the servers that answer them.

The clients have the surface of satemu.quic.bulk's BulkClient (``start``, ``transmit``,
``timer``, ``handle_timer``, ``receive``, ``done``, ``error``, ``started_at``,
``handshake_at``, ``completed_at``), so satemu.quic.cosim.CoSim drives them as it drives a
download; ``app`` holds each object's times.
"""

from __future__ import annotations

from typing import Any

from aioquic.quic.events import HandshakeCompleted, StreamDataReceived, StreamReset

from satemu.quic.ackpolicy import AckPolicy, PolicyConnection
from satemu.quic.bulk import BulkServer, _Peer, make_configs
from satemu.quic.packets import Endpoint
from satemu.quic.workload import FlowTimes, Request, Requests

__all__ = ["AioquicFlowClient", "flow_client", "flow_server"]


class AioquicFlowClient(FlowTimes, _Peer):
    """A client on aioquic running ``requests`` (in parallel, or each after the one before)."""

    def __init__(self, configuration, requests: list[Request], parallel: bool,
                 policy: "str | AckPolicy", local: Endpoint, remote: Endpoint) -> None:
        self.app = Requests(requests, parallel)
        self.local, self.remote = local, remote
        self.conn = PolicyConnection(configuration, policy=policy)

    def start(self, now: float) -> None:
        self.started_at = now
        self.conn.connect(self.remote.addr, now)

        def open_stream(data: bytes, fin: bool) -> int:
            sid = self.conn.get_next_available_stream_id()
            self.conn.send_stream_data(sid, data, end_stream=fin)
            return sid
        self.app.begin(now, open_stream)

    def on_event(self, event: Any, now: float) -> None:
        super().on_event(event, now)
        if isinstance(event, HandshakeCompleted):
            self.handshake_at = now
        elif isinstance(event, StreamReset):
            self.app.reset(event.stream_id)
        elif isinstance(event, StreamDataReceived):
            self.app.data(event.stream_id, event.data, event.end_stream, now)


def flow_client(stack: str, settings, requests: list[Request], parallel: bool, policy,
                seed: int, local: Endpoint, remote: Endpoint, server_stack: str, keylog=None):
    """The client of one connection of a flow, on ``stack``; an aioquic client writes its TLS
    secrets to ``keylog`` (a text file object) if given (quinn's: ``endpoint.key_log()``)."""
    if stack == "aioquic":
        cfg, _ = make_configs(settings, server=server_stack == "aioquic")
        cfg.secrets_log_file = keylog
        return AioquicFlowClient(cfg, requests, parallel, policy, local, remote)
    from satemu.quic.quinn import QuinnFlowClient
    return QuinnFlowClient(settings, requests, parallel, policy, seed, local, remote)


def flow_server(stack: str, settings, policy, seed: int, local: Endpoint, remote: Endpoint):
    """The server of one connection of a flow, on ``stack`` (its policy: ``ack-frequency:N``
    asks the client for it; every other policy is the client's own)."""
    policy = AckPolicy.parse(policy)
    server_policy = policy if policy.kind == "ack-frequency" else "default"
    if stack == "aioquic":
        _, cfg = make_configs(settings)
        return BulkServer(cfg, policy=server_policy, local=local, remote=remote)
    from satemu.quic.quinn import QuinnServer
    return QuinnServer(settings, policy=server_policy, seed=seed, local=local, remote=remote)
