# SPDX-License-Identifier: BSD-2-Clause
"""The bulk download over PolicyConnection, sans-I/O in virtual time, and its configurations."""

# Everything here is sans-I/O: the caller owns the clock and passes ``now`` (seconds, float) into
# every call; nothing reads the wall clock. A driver (see IdealLink in
# tests/host/test_quic_endpoints.py) does: on arrival, receive() then transmit(); when timer()
# falls due, handle_timer() then transmit(); after either, re-read timer().

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Optional

from aioquic.buffer import Buffer
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.congestion.base import K_GRANULARITY
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import (ConnectionTerminated, HandshakeCompleted, StreamDataReceived,
                                 StreamReset)
from aioquic.quic.packet import QuicPacketType, pull_quic_header
from cryptography.hazmat.primitives import serialization

from satemu.quic.ackpolicy import AckPolicy, DatagramInfo, EndpointConfiguration, PolicyConnection
from satemu.quic.determinism import SERVER_NAME, VirtualTimeLogger, server_certificate
from satemu.quic.packets import CLIENT, SERVER, Endpoint
from satemu.quic.settings import EndpointSettings

__all__ = ["ALPN", "BulkClient", "BulkServer", "TimedDownload", "make_configs",
           "payload_bytes", "take_payload"]

ALPN = "satemu"


# ---------------------------------------------------------------------------------------------
# configurations

def make_configs(settings: Optional[EndpointSettings] = None, *, qlog: bool = False,
                 server: bool = True,
                 **changes: Any) -> tuple[EndpointConfiguration, EndpointConfiguration]:
    """(client, server) aioquic configurations for one connection across the link, from
    ``settings`` (:class:`~satemu.quic.settings.EndpointSettings`; its defaults if None) with
    ``changes`` (field=value) applied. The defaults' 64 MiB flow-control windows are over three
    times a 600 ms x 250 Mbit/s bandwidth-delay product (18.75 MB), so flow control never
    limits a transfer; aioquic's own 1 MiB would. A setting aioquic cannot take as the server
    (a controller it lacks) raises ValueError, unless ``server`` is False: only the client's
    configuration is then used, and it runs Reno in place of a controller aioquic lacks."""
    settings = (settings or EndpointSettings()).but(**changes)
    settings.check_stack("aioquic", server=server)
    mad = settings.max_ack_delay_ms / 1000.0
    common = dict(alpn_protocols=[ALPN],
                  congestion_control_algorithm=settings.client_cc("aioquic"),
                  max_data=settings.conn_window, max_stream_data=settings.stream_window,
                  max_datagram_size=settings.max_datagram,
                  initial_rtt=settings.initial_rtt_ms / 1000.0,
                  initial_window=settings.initial_window,
                  max_ack_delay=mad, min_ack_delay=min(K_GRANULARITY, mad))
    cert, key = server_certificate()
    client = EndpointConfiguration(is_client=True, server_name=SERVER_NAME,
                                   cadata=cert.public_bytes(serialization.Encoding.PEM),
                                   quic_logger=VirtualTimeLogger() if qlog else None, **common)
    server = EndpointConfiguration(is_client=False, certificate=cert, private_key=key,
                                   quic_logger=VirtualTimeLogger() if qlog else None, **common)
    return client, server


# ---------------------------------------------------------------------------------------------
# bulk transfer application

_PATTERN = bytes(range(256))
# A request line longer than this without its newline is refused.
MAX_REQUEST = 64


def payload_bytes(offset: int, length: int) -> bytes:
    """Bytes ``offset .. offset + length`` of the transfer payload (a repeating 0..255 ramp)."""
    start = offset % len(_PATTERN)
    reps = (start + length + len(_PATTERN) - 1) // len(_PATTERN)
    return (_PATTERN * reps)[start:start + length]


class _Peer:
    """Shared driver surface: receive, transmit, timers; ``conn`` is the PolicyConnection."""

    conn: Optional[PolicyConnection]
    remote: Endpoint
    stack = "aioquic"

    def transmit(self, now: float) -> list[tuple[bytes, DatagramInfo]]:
        """Datagrams to send now (all to ``remote``), each with its :class:`DatagramInfo`."""
        if self.conn is None:
            return []
        datagrams = self.conn.datagrams_to_send(now)
        if any(addr != self.remote.addr for _data, addr in datagrams):
            # aioquic >= 1.7 may address a datagram elsewhere (a server's preferred address, a
            # path probe); this driver has the one link, and nothing here offers another path.
            raise RuntimeError("aioquic addressed a datagram away from the peer")
        return [(data, info) for (data, _addr), info in zip(datagrams,
                                                            self.conn.last_datagrams_info())]

    def timer(self, now: float) -> Optional[float]:
        """When :meth:`handle_timer` is next due (strictly after ``now``), or None."""
        return self.conn.next_timer(now) if self.conn is not None else None

    def handle_timer(self, now: float) -> None:
        if self.conn is not None:
            self.conn.handle_timer(now)
            self._events(now)

    def receive(self, data: bytes, now: float) -> None:
        self.conn.receive_datagram(data, self.remote.addr, now)
        self._events(now)

    def _events(self, now: float) -> None:
        while (event := self.conn.next_event()) is not None:
            self.on_event(event, now)

    def on_event(self, event: Any, now: float) -> None:
        if isinstance(event, ConnectionTerminated):
            self.terminated = event

    def stats_dict(self) -> dict:
        """The endpoint's counters (:class:`EndpointStats`), or {} before its connection."""
        return {"stack": self.stack, **asdict(self.conn.stats)} if self.conn is not None else {}

    def rtt_ms(self) -> Optional[float]:
        """The latest RTT sample of the connection's loss recovery (ms), None before one."""
        if self.conn is None or not self.conn._loss._rtt_initialized:
            return None
        return self.conn._loss._rtt_latest * 1000.0

    def max_ack_delay_used_ms(self) -> Optional[float]:
        """The peer's max_ack_delay as this endpoint's loss recovery assumes it (ms)."""
        return self.conn._loss.max_ack_delay * 1000.0 if self.conn is not None else None


class BulkAnswers:
    """The server's half of the application, whatever drives the connection (virtual time
    here, aioquic's asyncio API in satemu.quic.aio), a request on each client stream:

    * ``GET <size>\\n``: answered with ``size`` bytes of :func:`payload_bytes` and FIN;
    * ``PUT <size>\\n`` then ``size`` bytes of :func:`payload_bytes` and FIN (an upload):
      answered with ``OK <size>\\n`` and FIN once every byte came and was right.

    A bad request, or an upload whose body differs or ends short or long, resets the stream
    (code 1)."""

    def __init__(self) -> None:
        self.requests: dict[int, bytes] = {}
        self.served: dict[int, int] = {}        # stream -> bytes sent (-1: a bad request)
        self.uploads: dict[int, list[int]] = {}  # stream -> [size, bytes received so far]

    def answer(self, conn: QuicConnection, event: StreamDataReceived) -> bool:
        """Take a stream's data; True once the stream got its answer (in this call)."""
        sid = event.stream_id
        if sid in self.served:
            return False
        if sid in self.uploads:
            return self._body(conn, sid, event.data, event.end_stream)
        request = self.requests.get(sid, b"") + event.data
        self.requests[sid] = request
        if b"\n" not in request:
            if len(request) > MAX_REQUEST or event.end_stream:
                return self._refuse(conn, sid)
            return False
        line, rest = request.split(b"\n", 1)
        words = line.split()
        if len(words) != 2 or words[0] not in (b"GET", b"PUT") or not words[1].isdigit() \
                or len(words[1]) > 20:
            return self._refuse(conn, sid)
        size = int(words[1])
        if words[0] == b"PUT":
            self.uploads[sid] = [size, 0]
            del self.requests[sid]
            return self._body(conn, sid, rest, event.end_stream)
        self.served[sid] = size
        conn.send_stream_data(sid, payload_bytes(0, size), end_stream=True)
        return True

    def _refuse(self, conn: QuicConnection, sid: int) -> bool:
        conn.reset_stream(sid, error_code=1)
        self.served[sid] = -1
        return True

    def _body(self, conn: QuicConnection, sid: int, data: bytes, end: bool) -> bool:
        """An upload's body: checked as it comes; answered at its FIN."""
        size, got = self.uploads[sid]
        if got + len(data) > size or data != payload_bytes(got, len(data)):
            del self.uploads[sid]
            return self._refuse(conn, sid)
        self.uploads[sid][1] = got = got + len(data)
        if not end:
            return False
        del self.uploads[sid]
        if got != size:
            return self._refuse(conn, sid)
        self.served[sid] = 0
        conn.send_stream_data(sid, f"OK {size}\n".encode(), end_stream=True)
        return True


def take_payload(d: Any, data: bytes, end: bool) -> Optional[bool]:
    """``data`` of a download ``d`` (its ``size``, bytes ``received`` so far, ``error``, and
    whether to ``verify`` them against :func:`payload_bytes`), ending it if ``end``: None
    until it ends, then True if every byte came and was right, else False (``error`` set)."""
    if d.verify and d.error is None and data != payload_bytes(d.received, len(data)):
        d.error = f"payload differs at offset {d.received}"
    d.received += len(data)
    if not end:
        return None
    if d.received == d.size and d.error is None:
        return True
    if d.error is None:
        d.error = f"stream ended after {d.received} of {d.size} bytes"
    return False


class BulkDownload:
    """The client's half of the bulk application: asks for ``size`` bytes on a new stream and
    checks what arrives against :func:`payload_bytes` (the first difference is the error)."""

    size: Optional[int] = None
    stream_id: Optional[int] = None
    received = 0
    error: Optional[str] = None
    verify = True

    def ask(self, conn: QuicConnection, size: int) -> None:
        self.size = size
        self.stream_id = conn.get_next_available_stream_id()
        conn.send_stream_data(self.stream_id, f"GET {size}\n".encode(), end_stream=True)

    def take(self, event: StreamDataReceived) -> Optional[bool]:
        """Data on our stream: None until it ends, then True if every byte came and was right,
        else False (with ``error`` set)."""
        return take_payload(self, event.data, event.end_stream)


class TimedDownload(BulkDownload):
    """:class:`BulkDownload` on a virtual clock: when the client started, finished its handshake,
    got the first byte and the last; whichever stack carries it."""

    started_at: Optional[float] = None
    handshake_at: Optional[float] = None
    first_byte_at: Optional[float] = None
    completed_at: Optional[float] = None

    @property
    def done(self) -> bool:
        return self.completed_at is not None

    def arrived(self, event: StreamDataReceived, now: float) -> None:
        """Data on our stream at ``now``: stamp the first byte, and completion when it ends."""
        if event.data and self.first_byte_at is None:
            self.first_byte_at = now
        if self.take(event):
            self.completed_at = now


class BulkServer(_Peer, BulkAnswers):
    """The gateway: answers ``GET <size>\\n`` on a client stream with ``size`` bytes and FIN."""

    def __init__(self, configuration: QuicConfiguration, policy: "str | AckPolicy" = "default",
                 local: Endpoint = SERVER, remote: Endpoint = CLIENT) -> None:
        BulkAnswers.__init__(self)
        self.configuration = configuration
        self.policy = AckPolicy.parse(policy)
        self.local, self.remote = local, remote
        self.conn = None
        self.terminated: Optional[ConnectionTerminated] = None

    def receive(self, data: bytes, now: float) -> None:
        if self.conn is None:
            try:
                header = pull_quic_header(Buffer(data=data),
                                          host_cid_length=self.configuration.connection_id_length)
            except ValueError:
                return                                  # not QUIC: nothing to answer
            if header.packet_type != QuicPacketType.INITIAL:
                return                                  # a connection starts with an Initial
            self.conn = PolicyConnection(
                self.configuration, policy=self.policy,
                original_destination_connection_id=header.destination_cid)
        super().receive(data, now)

    def on_event(self, event: Any, now: float) -> None:
        super().on_event(event, now)
        if isinstance(event, StreamDataReceived):
            self.answer(self.conn, event)


class BulkClient(_Peer, TimedDownload):
    """The terminal: asks for ``size`` bytes on stream 0 and times their arrival."""

    def __init__(self, configuration: QuicConfiguration, size: int,
                 policy: "str | AckPolicy" = "default", local: Endpoint = CLIENT,
                 remote: Endpoint = SERVER, verify: bool = True) -> None:
        self.size = size
        self.local, self.remote = local, remote
        self.verify = verify
        self.conn = PolicyConnection(configuration, policy=policy)
        self.terminated: Optional[ConnectionTerminated] = None

    def start(self, now: float) -> None:
        """Begin the handshake and queue the request (it leaves with the first 1-RTT packet)."""
        self.started_at = now
        self.conn.connect(self.remote.addr, now)
        self.ask(self.conn, self.size)

    def on_event(self, event: Any, now: float) -> None:
        super().on_event(event, now)
        if isinstance(event, HandshakeCompleted):
            self.handshake_at = now
        elif isinstance(event, StreamReset) and event.stream_id == self.stream_id:
            self.error = "server reset the stream"
        elif isinstance(event, StreamDataReceived) and event.stream_id == self.stream_id:
            self.arrived(event, now)
