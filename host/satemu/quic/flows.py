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

from aioquic.h3.connection import H3_ALPN, ErrorCode, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.events import HandshakeCompleted, StreamDataReceived, StreamReset

from satemu.quic.ackpolicy import AckPolicy, PolicyConnection
from satemu.quic.bulk import BulkServer, _Peer, make_configs, payload_bytes
from satemu.quic.determinism import SERVER_NAME
from satemu.quic.packets import Endpoint
from satemu.quic.workload import FlowTimes, Request, Requests

__all__ = ["AioquicFlowClient", "H3FlowClient", "H3Server", "flow_client", "flow_server"]

# HTTP/3 (aioquic's H3Connection): a request is a HEADERS frame (:method GET or PUT, :path
# /<size>; a PUT's content-length) and, for a PUT, its body in DATA frames; the answer is
# HEADERS (:status 200, content-length) and the body: the payload, or "OK <size>\n" for a PUT.
# The server maps each message onto satemu.quic.bulk.BulkAnswers, whose checks it keeps: the
# request line it would have read, then the body, and its answers back into HTTP/3 (_H3Streams).


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

        self.app.begin(now, self.open_stream)

    def open_stream(self, data: bytes, fin: bool, _request: Request) -> int:
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_stream_data(sid, data, end_stream=fin)
        return sid

    def on_event(self, event: Any, now: float) -> None:
        super().on_event(event, now)
        if isinstance(event, HandshakeCompleted):
            self.handshake_at = now
        elif isinstance(event, StreamReset):
            self.app.reset(event.stream_id)
        elif isinstance(event, StreamDataReceived):
            self.app.data(event.stream_id, event.data, event.end_stream, now)


class H3FlowClient(AioquicFlowClient):
    """An aioquic client running ``requests`` as HTTP/3 messages."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.h3 = H3Connection(self.conn)

    def open_stream(self, _data: bytes, _fin: bool, request: Request) -> int:
        sid = self.conn.get_next_available_stream_id()
        headers = [(b":method", request.method.encode()), (b":scheme", b"https"),
                   (b":authority", SERVER_NAME.encode()), (b":path", f"/{request.size}".encode())]
        put = request.method == "PUT"
        if put:
            headers.append((b"content-length", str(request.size).encode()))
        self.h3.send_headers(sid, headers, end_stream=not put)
        if put:
            self.h3.send_data(sid, payload_bytes(0, request.size), end_stream=True)
        return sid

    def on_event(self, event: Any, now: float) -> None:
        if not isinstance(event, StreamDataReceived):
            super().on_event(event, now)
            return
        for h in self.h3.handle_event(event):
            if isinstance(h, HeadersReceived):
                status = dict(h.headers).get(b":status")
                if status != b"200":
                    self.conn.reset_stream(h.stream_id, ErrorCode.H3_REQUEST_CANCELLED)
                    self.app.reset(h.stream_id)
                elif h.stream_ended:
                    self.app.data(h.stream_id, b"", True, now)
            elif isinstance(h, DataReceived):
                self.app.data(h.stream_id, h.data, h.stream_ended, now)


class _H3Streams:
    """What BulkAnswers calls on a connection (``send_stream_data``, ``reset_stream``), turned
    into HTTP/3: a stream's first answer goes after HEADERS with :status 200 and its length."""

    def __init__(self, h3: H3Connection, conn: Any) -> None:
        self.h3, self.conn = h3, conn

    def send_stream_data(self, sid: int, data: bytes, end_stream: bool = False) -> None:
        self.h3.send_headers(sid, [(b":status", b"200"),
                                   (b"content-length", str(len(data)).encode())])
        self.h3.send_data(sid, data, end_stream=end_stream)

    def reset_stream(self, sid: int, error_code: int) -> None:
        self.conn.reset_stream(sid, ErrorCode.H3_MESSAGE_ERROR)


class H3Server(BulkServer):
    """BulkServer's application, the requests and answers as HTTP/3 messages."""

    h3 = None

    def on_event(self, event: Any, now: float) -> None:
        if not isinstance(event, StreamDataReceived):
            super().on_event(event, now)
            return
        if self.h3 is None:
            self.h3 = H3Connection(self.conn)
        streams = _H3Streams(self.h3, self.conn)
        for h in self.h3.handle_event(event):
            sid = h.stream_id
            if isinstance(h, HeadersReceived):
                fields = dict(h.headers)
                path = fields.get(b":path", b"")
                line = fields.get(b":method", b"?") + b" " + path[1:] + b"\n" \
                    if path.startswith(b"/") else b"?\n"
                self.answer(streams, StreamDataReceived(line, h.stream_ended, sid))
            elif isinstance(h, DataReceived):
                self.answer(streams, StreamDataReceived(h.data, h.stream_ended, sid))


def _alpn(cfg, protocol: str):
    if protocol == "h3":
        cfg.alpn_protocols = H3_ALPN
    return cfg


def flow_client(stack: str, settings, requests: list[Request], parallel: bool, policy,
                seed: int, local: Endpoint, remote: Endpoint, server_stack: str, keylog=None,
                protocol: str = "plain"):
    """The client of one connection of a flow, on ``stack``; an aioquic client writes its TLS
    secrets to ``keylog`` (a text file object) if given (quinn's: ``endpoint.key_log()``).
    ``protocol`` ``h3``: HTTP/3 messages (aioquic only)."""
    if stack == "aioquic":
        cfg, _ = make_configs(settings, server=server_stack == "aioquic")
        cfg.secrets_log_file = keylog
        cls = H3FlowClient if protocol == "h3" else AioquicFlowClient
        return cls(_alpn(cfg, protocol), requests, parallel, policy, local, remote)
    if protocol == "h3":
        raise ValueError("HTTP/3 runs on aioquic only")
    from satemu.quic.quinn import QuinnFlowClient
    return QuinnFlowClient(settings, requests, parallel, policy, seed, local, remote)


def flow_server(stack: str, settings, policy, seed: int, local: Endpoint, remote: Endpoint,
                protocol: str = "plain"):
    """The server of one connection of a flow, on ``stack`` (its policy: ``ack-frequency:N``
    asks the client for it; every other policy is the client's own); ``protocol`` ``h3``:
    HTTP/3 messages (aioquic only)."""
    policy = AckPolicy.parse(policy)
    server_policy = policy if policy.asks_peer else "default"
    if stack == "aioquic":
        _, cfg = make_configs(settings)
        cls = H3Server if protocol == "h3" else BulkServer
        return cls(_alpn(cfg, protocol), policy=server_policy, local=local, remote=remote)
    if protocol == "h3":
        raise ValueError("HTTP/3 runs on aioquic only")
    from satemu.quic.quinn import QuinnServer
    return QuinnServer(settings, policy=server_policy, seed=seed, local=local, remote=remote)
