# SPDX-License-Identifier: BSD-2-Clause
"""The bulk download over quinn-proto (the satemu_quinn extension), sans-I/O in virtual time.

:class:`QuinnClient` and :class:`QuinnServer` have the surface of satemu.quic.bulk's
BulkClient/BulkServer, so satemu.quic.cosim.CoSim drives aioquic<->quinn and quinn<->quinn pairs
alike: ``transmit(now)``, ``timer(now)``, ``handle_timer(now)``, ``receive(data, now)``,
``local``/``remote``; the client's ``start(now)``, ``done``, ``error`` and times; the server's
``conn`` (None until the client's first Initial made the connection) and ``served``. The
application protocol is bulk.py's, byte for byte: ``GET <size>\\n`` on a client bidirectional
stream, answered with :func:`~satemu.quic.bulk.payload_bytes` and FIN, a bad request reset with
code 1.

Time is the caller's (seconds, float) and enters quinn as integer nanoseconds,
``round(now * 1e9)``. Everything random in quinn, rustls and the key exchange comes from the seed
(and the role), so a seed repeats every datagram byte for byte at the same instant.

ACK policies: quinn's receiver ACKs as RFC 9000 section 13.2 says (every second ack-eliciting
packet, or after its max_ack_delay of 25 ms) unless its peer asks otherwise with ACK_FREQUENCY
(draft-ietf-quic-ack-frequency; quinn always advertises min_ack_delay = 1 ms). So a quinn client
takes ``default``, ``ratio:2`` (both that behaviour) and ``ack-frequency:N`` (the same, until the
server's request arrives); a quinn server with ``ack-frequency:N`` asks its peer for threshold
N - 1, max_ack_delay = the settings' max_ack_delay_ms and reordering threshold 1, as satemu's
aioquic server does. ``ratio:N`` (N != 2) and ``adaptive`` are receiver policies that only
satemu's aioquic endpoint implements.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

from satemu.quic.ackpolicy import TIMER_RESOLUTION, AckPolicy
from satemu.quic.bulk import ALPN, BulkAnswers, TimedDownload
from satemu.quic.determinism import SERVER_NAME, server_certificate
from satemu.quic.packets import CLIENT, SERVER, Endpoint
from satemu.quic.settings import EndpointSettings, quinn_limits
from satemu.quic.workload import FlowTimes, Request, Requests

__all__ = ["QuinnClient", "QuinnDatagramInfo", "QuinnFlowClient", "QuinnServer", "quinn_policy"]

SEED_LIMIT = 1 << 64


@dataclass(frozen=True)
class QuinnDatagramInfo:
    """What one datagram from quinn carries (the part of ackpolicy.DatagramInfo quinn tells)."""

    size: int                   # UDP payload bytes
    ack_only: bool              # only ACK frames (and padding)


@dataclass(frozen=True)
class _StreamData:
    """The fields of aioquic's StreamDataReceived that bulk.py's BulkDownload/BulkAnswers read."""

    stream_id: int
    data: bytes
    end_stream: bool


class _Streams:
    """The two calls of an aioquic connection that BulkAnswers makes, on a quinn endpoint."""

    def __init__(self, endpoint: Any) -> None:
        self._endpoint = endpoint

    def send_stream_data(self, stream_id: int, data: bytes, end_stream: bool = False) -> None:
        self._endpoint.write(stream_id, data, end_stream)     # the body crosses into Rust once

    def reset_stream(self, stream_id: int, error_code: int) -> None:
        self._endpoint.reset(stream_id, error_code)


def _ns(now: float) -> int:
    return round(now * 1e9)


def _extension() -> Any:
    try:
        import satemu_quinn
    except ImportError as e:
        raise RuntimeError("the quinn stack needs the satemu_quinn extension: run make bootstrap "
                           "(scripts/build_quinn.sh builds and installs it)") from e
    return satemu_quinn


@functools.lru_cache(maxsize=1)
def _certificate_der() -> tuple[bytes, bytes]:
    """aioquic's server certificate and key (satemu.quic.determinism), as DER and PKCS#8 DER."""
    from cryptography.hazmat.primitives import serialization
    cert, key = server_certificate()
    return (cert.public_bytes(serialization.Encoding.DER),
            key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def quinn_policy(policy: "str | AckPolicy") -> AckPolicy:
    """The policy if a quinn endpoint can follow it, else ValueError (one line)."""
    policy = AckPolicy.parse(policy)
    if policy.reorder or policy.reordering != 1 or policy.immediate_ack:
        raise ValueError(f"ACK policy {policy}: its options (+reorder, +reordering:R, "
                         f"+immediate-ack) are aioquic's; a quinn endpoint takes default, ratio:2 "
                         f"or ack-frequency:N without them")
    if policy.kind in ("default", "ack-frequency", "neqo") \
            or (policy.kind == "ratio" and policy.n == 2):
        return policy
    raise ValueError(f"ACK policy {policy} is a receiver policy implemented in aioquic's endpoint "
                     "only; quinn's receiver follows RFC 9000 (ratio:2) or its peer's "
                     "ACK_FREQUENCY (default, ratio:2, ack-frequency:N, neqo)")


class _QuinnPeer:
    """The driver surface shared by client and server: one satemu_quinn.Endpoint."""

    local: Endpoint
    remote: Endpoint
    stack = "quinn"

    def __init__(self, role: str, settings: EndpointSettings, seed: int, local: Endpoint,
                 remote: Endpoint, ack_frequency: Optional[tuple[int, int, int]] = None) -> None:
        if not isinstance(settings, EndpointSettings):
            raise ValueError("settings must be an EndpointSettings")
        settings.check()
        settings.check_stack("quinn")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
            raise ValueError(f"seed {seed!r} is not an integer in 0..2^64-1")
        self.settings = settings
        self.seed = seed
        self.local, self.remote = local, remote
        self.terminated: Optional[str] = None
        cert, key = _certificate_der()
        self.endpoint = _extension().Endpoint(
            role, seed, f"{local.ipv4}:{local.port}", f"{remote.ipv4}:{remote.port}", cert,
            key if role == "server" else None,
            server_name=SERVER_NAME, alpn=ALPN.encode(), cc=settings.cc,
            initial_window_bytes=settings.initial_window_bytes(),
            initial_rtt_ns=round(settings.initial_rtt_ms * 1e6),
            max_datagram=settings.max_datagram, stream_window=settings.stream_window,
            conn_window=settings.conn_window,
            max_ack_delay_ns=round(settings.max_ack_delay_ms * 1e6),
            ack_frequency=ack_frequency, limits=quinn_limits())

    # ---- the driver surface (see satemu.quic.bulk) ------------------------------------------

    def transmit(self, now: float) -> list[tuple[bytes, QuinnDatagramInfo]]:
        """Datagrams to send now (all to ``remote``), each with its :class:`QuinnDatagramInfo`."""
        out = [(data, QuinnDatagramInfo(len(data), ack_only))
               for data, ack_only in self.endpoint.transmit(_ns(now))]
        self._events(now)
        return out

    def timer(self, now: float) -> Optional[float]:
        """When :meth:`handle_timer` is next due (strictly after ``now``), or None."""
        t = self.endpoint.timeout()
        if t is None:
            return None
        return max(t / 1e9, now + TIMER_RESOLUTION)

    def handle_timer(self, now: float) -> None:
        self.endpoint.handle_timeout(_ns(now))
        self._events(now)

    def receive(self, data: bytes, now: float) -> None:
        self.endpoint.receive(data, _ns(now))
        self._events(now)

    def _events(self, now: float) -> None:
        for event in self.endpoint.events():
            self.on_event(event, now)

    def on_event(self, event: tuple, now: float) -> None:
        if event[0] == "closed":
            self.terminated = event[1]

    # ---- what the transfer record wants -------------------------------------------------------

    def stats_dict(self) -> dict[str, Any]:
        """The extension's counters (``stack``: "quinn"), or {} before the connection exists."""
        return self.endpoint.stats() if self.endpoint.has_connection else {}

    def rtt_ms(self) -> Optional[float]:
        """The path's RTT estimate (quinn's smoothed RTT, ms), None before the connection."""
        return self.endpoint.stats()["rtt_ms"] if self.endpoint.has_connection else None

    def max_ack_delay_used_ms(self) -> Optional[float]:
        """The peer max_ack_delay this endpoint's loss recovery assumes: quinn-proto 0.11.19 keeps
        it private (peer's transport parameter, then an acknowledged ACK_FREQUENCY's), so None."""
        return None

    def handshake_losses(self) -> int:
        """Packets declared lost up to the handshake's completion (so far, if it has not)."""
        stats = self.endpoint.stats()
        lost = stats["handshake_lost_packets"]
        return stats["lost_packets"] if lost is None else lost


class QuinnServer(_QuinnPeer, BulkAnswers):
    """The gateway on quinn: answers ``GET <size>\\n`` on a client stream with ``size`` bytes and
    FIN. With ``ack-frequency:N`` it asks its peer for an ACK every N ack-eliciting packets."""

    def __init__(self, settings: EndpointSettings, policy: "str | AckPolicy" = "default",
                 seed: int = 0, local: Endpoint = SERVER, remote: Endpoint = CLIENT) -> None:
        BulkAnswers.__init__(self)
        self.policy = quinn_policy(policy)
        if self.policy.kind == "neqo":
            raise ValueError(f"ACK policy {self.policy}: neqo's rule is a sender's, run by an "
                             f"aioquic server; a quinn server asks for a fixed ack-frequency:N")
        request = None
        if self.policy.kind == "ack-frequency":
            # satemu's aioquic server asks the same (ackpolicy.PolicyConnection): threshold N - 1,
            # its max_ack_delay, reordering threshold 1. AckPolicy holds N to 1 .. ACK_N_MAX, so
            # the threshold is a QUIC varint, as the extension's Settings::check demands.
            request = (self.policy.n - 1, round(settings.max_ack_delay_ms * 1e6), 1)
        super().__init__("server", settings, seed, local, remote, ack_frequency=request)
        self.conn: Any = None
        self._streams = _Streams(self.endpoint)

    def receive(self, data: bytes, now: float) -> None:
        super().receive(data, now)
        if self.conn is None and self.endpoint.has_connection:
            self.conn = self.endpoint

    def on_event(self, event: tuple, now: float) -> None:
        super().on_event(event, now)
        if event[0] == "data":
            self.answer(self._streams, _StreamData(event[1], event[2], event[3]))


class QuinnClient(_QuinnPeer, TimedDownload):
    """The terminal on quinn: asks for ``size`` bytes on its first bidirectional stream and times
    their arrival."""

    def __init__(self, settings: EndpointSettings, size: int, policy: "str | AckPolicy" = "default",
                 seed: int = 0, local: Endpoint = CLIENT, remote: Endpoint = SERVER,
                 verify: bool = True) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"size {size!r} is not a byte count")
        self.policy = quinn_policy(policy)
        super().__init__("client", settings, seed, local, remote)
        self.conn: Any = self.endpoint
        self.size = size
        self.verify = verify

    def start(self, now: float) -> None:
        """Begin the handshake and queue the request (it leaves as soon as quinn may open a
        stream: with the client's first 1-RTT packet)."""
        self.started_at = now
        self.endpoint.connect(_ns(now))
        self.endpoint.open_bidi(f"GET {self.size}\n".encode(), True)
        self._events(now)

    def on_event(self, event: tuple, now: float) -> None:
        super().on_event(event, now)
        kind = event[0]
        if kind == "connected":
            self.handshake_at = now
        elif kind == "opened":
            if self.stream_id is None:
                self.stream_id = event[1]
        elif kind == "reset" and event[1] == self.stream_id:
            self.error = "server reset the stream"
        elif kind == "data" and event[1] == self.stream_id:
            self.arrived(_StreamData(*event[1:]), now)


class QuinnFlowClient(FlowTimes, _QuinnPeer):
    """A client on quinn running ``requests``; quinn names each stream it opens later
    (its ``opened`` events, in the order asked)."""

    def __init__(self, settings, requests: list[Request], parallel: bool,
                 policy: "str | AckPolicy", seed: int, local: Endpoint,
                 remote: Endpoint) -> None:
        self.policy = quinn_policy(policy)
        _QuinnPeer.__init__(self, "client", settings, seed, local, remote)
        self.conn = self.endpoint
        self.app = Requests(requests, parallel)

    def start(self, now: float) -> None:
        self.started_at = now
        self.endpoint.connect(_ns(now))
        self.app.begin(now, lambda data, fin, _request: self.endpoint.open_bidi(data, fin))
        self._events(now)

    def on_event(self, event: tuple, now: float) -> None:
        _QuinnPeer.on_event(self, event, now)
        kind = event[0]
        if kind == "connected":
            self.handshake_at = now
        elif kind == "opened":
            self.app.opened(event[1])
        elif kind == "reset":
            self.app.reset(event[1])
        elif kind == "data":
            self.app.data(event[1], event[2], event[3], now)
