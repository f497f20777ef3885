# SPDX-License-Identifier: BSD-2-Clause
"""aioquic endpoints in virtual time: ACK policies, per-datagram accounting and a bulk transfer."""

# Everything here is sans-I/O: the caller owns the clock and passes ``now`` (seconds, float) into
# every call; nothing reads the wall clock. A driver (see IdealLink in
# tests/host/test_quic_endpoints.py) does: on arrival, receive() then transmit(); when timer()
# falls due, handle_timer() then transmit(); after either, re-read timer().
#
# aioquic internals this module relies on (pinned by tests/host/test_quic_endpoints.py):
#   * QuicConnection._payload_received(context, plain, ...) -> (is_ack_eliciting, is_probing),
#     called once per decrypted packet, before receive_datagram records the packet number in
#     space.ack_queue / space.largest_received_packet and arms space.ack_at.
#   * QuicPacketSpace.ack_at / largest_received_packet / discarded, QuicConnection._spaces and
#     _loss.spaces; an ACK is written by _write_ack_frame(builder, space, now), in the 1-RTT space
#     only once ack_at <= now (_write_application), which then sets ack_at to None.
#   * datagrams_to_send() reports each packet it built through self._loss.on_packet_sent(packet=,
#     space=) in datagram order; QuicSentPacket.is_ack_eliciting and .delivery_handlers (an ACK
#     frame registers self._on_ack_delivery).
#   * _serialize_transport_parameters() / _parse_transport_parameters(data, from_session_ticket)
#     carry the raw transport-parameter TLVs; the frame table is the name-mangled
#     _QuicConnection__frame_handlers {type: (handler(context, frame_type, buf), epochs)};
#     _write_connection_limits(builder, space) runs for every 1-RTT packet once the handshake is
#     complete; self._loss.max_ack_delay and self._loss._rtt_smoothed / _rtt_initialized.
#   * QuicLoggerTrace.log_event appends a dict with a "time" key to self._events;
#     QuicLogger keeps its traces in self._traces.

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import math
import os
import random
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from aioquic import tls as aioquic_tls
from aioquic.buffer import UINT_VAR_MAX_SIZE, Buffer, BufferReadError
from aioquic.quic import connection as aioquic_connection
from aioquic.quic import packet as aioquic_packet
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.congestion.base import K_GRANULARITY
from aioquic.quic.connection import QuicConnection, QuicConnectionError
from aioquic.quic.events import (ConnectionTerminated, HandshakeCompleted, StreamDataReceived,
                                 StreamReset)
from aioquic.quic.logger import QuicLogger, QuicLoggerTrace
from aioquic.quic.packet import QuicErrorCode, QuicFrameType, QuicPacketType, pull_quic_header
from aioquic.quic.packet_builder import QuicDeliveryState, QuicPacketBuilder, QuicSentPacket
from aioquic.tls import Epoch
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, x448, x25519
from cryptography.x509.oid import NameOID

from .packets import CLIENT, MAX_UDP_PAYLOAD, SERVER, Endpoint

__all__ = ["ALPN", "SERVER_NAME", "AckPolicy", "BulkClient", "BulkServer", "DatagramInfo",
           "EndpointConfiguration", "EndpointStats", "PolicyConnection", "VirtualTimeLogger",
           "VirtualTimeTrace", "deterministic", "make_configs", "payload_bytes",
           "server_certificate"]

ALPN = "satemu"
SERVER_NAME = "satemu-server"
MIB = 1 << 20

TP_MAX_ACK_DELAY = 0x0B                 # RFC 9000 section 18.2, milliseconds
TP_MIN_ACK_DELAY = 0xFF04DE1B           # draft-ietf-quic-ack-frequency, microseconds
FRAME_ACK_FREQUENCY = 0xAF              # draft-ietf-quic-ack-frequency
ACK_FREQUENCY_CAPACITY = 2 + 4 * UINT_VAR_MAX_SIZE
TIMER_RESOLUTION = 1e-6                 # a timer never fires at or before the instant it was read
ADAPTIVE_STARTUP_PACKETS = 100          # "adaptive": ACK 1:2 for this many packets, then 1:10

_ONE_RTT_EPOCHS = (Epoch.ONE_RTT, Epoch.ZERO_RTT)     # both land in the 1-RTT packet space


# ---------------------------------------------------------------------------------------------
# qlog in virtual time

class VirtualTimeTrace(QuicLoggerTrace):
    """A qlog trace stamped with the driver's virtual time (``now``) instead of time.time()."""

    def __init__(self, *, is_client: bool, odcid: bytes) -> None:
        super().__init__(is_client=is_client, odcid=odcid)
        self.now = 0.0

    def log_event(self, *, category: str, event: str, data: dict) -> None:
        super().log_event(category=category, event=event, data=data)
        self._events[-1]["time"] = self.encode_time(self.now)


class VirtualTimeLogger(QuicLogger):
    """An in-memory qlog logger whose traces are :class:`VirtualTimeTrace`."""

    def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
        trace = VirtualTimeTrace(is_client=is_client, odcid=odcid)
        self._traces.append(trace)
        return trace


# ---------------------------------------------------------------------------------------------
# certificate and configurations

CERT_NOT_BEFORE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
CERT_LIFETIME = datetime.timedelta(days=50 * 365)
_CERT_KEY_LABEL = b"satemu-server certificate key v1"


class DeterministicEcdsaKey(ec.EllipticCurvePrivateKey):
    """An EC private key whose ECDSA signatures are deterministic (RFC 6979).

    aioquic signs the TLS CertificateVerify with ``key.sign(data, ec.ECDSA(hash))``, which draws a
    random nonce; this wrapper turns that into deterministic signing so a server's handshake
    bytes repeat from run to run. Everything else is delegated to the wrapped key.
    """

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._key = key

    def sign(self, data: bytes, signature_algorithm: Any) -> bytes:
        if isinstance(signature_algorithm, ec.ECDSA):
            signature_algorithm = ec.ECDSA(signature_algorithm.algorithm,
                                           deterministic_signing=True)
        return self._key.sign(data, signature_algorithm)

    def exchange(self, algorithm: ec.ECDH, peer_public_key: ec.EllipticCurvePublicKey) -> bytes:
        return self._key.exchange(algorithm, peer_public_key)

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._key.public_key()

    def private_numbers(self) -> ec.EllipticCurvePrivateNumbers:
        return self._key.private_numbers()

    def private_bytes(self, encoding, format, encryption_algorithm) -> bytes:   # noqa: A002
        return self._key.private_bytes(encoding, format, encryption_algorithm)

    @property
    def curve(self) -> ec.EllipticCurve:
        return self._key.curve

    @property
    def key_size(self) -> int:
        return self._key.key_size

    def __copy__(self) -> "DeterministicEcdsaKey":
        return self

    def __deepcopy__(self, memo: dict) -> "DeterministicEcdsaKey":
        return self


@functools.lru_cache(maxsize=1)
def server_certificate() -> tuple[x509.Certificate, DeterministicEcdsaKey]:
    """The server's self-signed P-256 certificate and key: the same bytes on every run."""
    scalar = int.from_bytes(hashlib.sha256(_CERT_KEY_LABEL).digest(), "big") >> 1   # < P-256 n
    key = ec.derive_private_key(scalar, ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(0x5A7E40)
            .not_valid_before(CERT_NOT_BEFORE)
            .not_valid_after(CERT_NOT_BEFORE + CERT_LIFETIME)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME)]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256(), ecdsa_deterministic=True))
    return cert, DeterministicEcdsaKey(key)


@dataclass
class EndpointConfiguration(QuicConfiguration):
    """aioquic's configuration plus the ACK-delay settings aioquic itself hard-wires."""

    max_ack_delay: float = 0.025        # seconds: advertised (rounded up to whole ms), and the
                                        # bound on how long the ratio policies hold an ACK
    min_ack_delay: float = K_GRANULARITY  # seconds: advertised under the ack-frequency policy


def make_configs(cc: str = "reno", max_ack_delay_ms: float = 25.0, flow_window: int = 64 * MIB,
                 *, max_datagram_size: int = MAX_UDP_PAYLOAD, initial_rtt_ms: float = 100.0,
                 qlog: bool = False
                 ) -> tuple[EndpointConfiguration, EndpointConfiguration]:
    """(client, server) configurations for one connection across the link.

    ``flow_window`` sets both connection (max_data) and per-stream (max_stream_data) credit; the
    64 MiB default is over three times a 600 ms x 250 Mbit/s bandwidth-delay product (18.75 MB),
    so flow control never limits a transfer. ``max_datagram_size`` is the UDP payload size
    (1472 fills a 1518-byte Ethernet frame). ``initial_rtt_ms`` is aioquic's default (100 ms);
    RFC 9002 suggests 333 ms, which avoids spurious handshake PTOs on a GEO path.
    """
    if cc not in ("reno", "cubic"):
        raise ValueError(f"congestion control {cc!r}: aioquic has 'reno' and 'cubic'")
    if not 0 < max_ack_delay_ms < 1 << 14:
        raise ValueError(f"max_ack_delay {max_ack_delay_ms} ms is outside (0, 16384) ms")
    if flow_window < 1:
        raise ValueError("flow_window must be positive")
    common = dict(alpn_protocols=[ALPN], congestion_control_algorithm=cc,
                  max_data=flow_window, max_stream_data=flow_window,
                  max_datagram_size=max_datagram_size, initial_rtt=initial_rtt_ms / 1000.0,
                  max_ack_delay=max_ack_delay_ms / 1000.0,
                  min_ack_delay=min(K_GRANULARITY, max_ack_delay_ms / 1000.0))
    cert, key = server_certificate()
    client = EndpointConfiguration(is_client=True, server_name=SERVER_NAME,
                                   cadata=cert.public_bytes(serialization.Encoding.PEM),
                                   quic_logger=VirtualTimeLogger() if qlog else None, **common)
    server = EndpointConfiguration(is_client=False, certificate=cert, private_key=key,
                                   quic_logger=VirtualTimeLogger() if qlog else None, **common)
    return client, server


# ---------------------------------------------------------------------------------------------
# deterministic randomness

class _ModuleProxy:
    """Stands in for a module inside aioquic: the given attributes overridden, the rest passed."""

    def __init__(self, module: Any, **overrides: Any) -> None:
        self._module = module
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


class _KeyFactory:
    def __init__(self, generate: Any) -> None:
        self.generate = generate


@contextlib.contextmanager
def deterministic(seed: int) -> Iterator[random.Random]:
    """Make aioquic's connection set-up repeatable: every random byte it draws comes from ``seed``.

    Within the block, aioquic's modules (and only they) see a seeded ``os.urandom`` and seeded
    TLS key-share generation (X25519, X448 and the NIST curves); the server's signatures are
    deterministic already (:class:`DeterministicEcdsaKey`). Connections must be created, driven
    and finished inside the block, in the same order each run. Not thread-safe, not for
    production: the keys are predictable by design.
    """
    rng = random.Random(seed)

    def ec_key(curve: ec.EllipticCurve, backend: Any = None) -> ec.EllipticCurvePrivateKey:
        scalar = (int.from_bytes(rng.randbytes((curve.key_size + 7) // 8), "big")
                  % (1 << (curve.key_size - 1))) | 1              # 0 < scalar < curve order
        return ec.derive_private_key(scalar, curve)

    seeded_os = _ModuleProxy(os, urandom=rng.randbytes)
    patches = [
        (aioquic_connection, "os", seeded_os),    # connection IDs, reset tokens, path challenges
        (aioquic_packet, "os", seeded_os),        # version negotiation's first byte
        (aioquic_tls, "os", seeded_os),           # client/server random, session tickets
        (aioquic_tls, "x25519", _ModuleProxy(x25519, X25519PrivateKey=_KeyFactory(
            lambda: x25519.X25519PrivateKey.from_private_bytes(rng.randbytes(32))))),
        (aioquic_tls, "x448", _ModuleProxy(x448, X448PrivateKey=_KeyFactory(
            lambda: x448.X448PrivateKey.from_private_bytes(rng.randbytes(56))))),
        (aioquic_tls, "ec", _ModuleProxy(ec, generate_private_key=ec_key)),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    try:
        for module, name, value in patches:
            setattr(module, name, value)
        yield rng
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)


# ---------------------------------------------------------------------------------------------
# ACK policies

@dataclass(frozen=True)
class AckPolicy:
    """How the receiver of data paces its ACKs; parsed from "default", "ratio:N", "adaptive" or
    "ack-frequency:N"."""

    kind: str
    n: int = 2

    @classmethod
    def parse(cls, text: "str | AckPolicy") -> "AckPolicy":
        if isinstance(text, AckPolicy):
            return text
        spec = text.strip().lower()
        if spec in ("default", "adaptive"):
            return cls(spec)
        kind, sep, arg = spec.partition(":")
        if kind in ("ratio", "ack-frequency") and sep and arg.isdigit() and int(arg) >= 1:
            return cls(kind, int(arg))
        raise ValueError(f"unknown ACK policy {text!r}: expected default, ratio:N, adaptive or "
                         "ack-frequency:N with N >= 1")

    def __str__(self) -> str:
        return self.kind if self.kind in ("default", "adaptive") else f"{self.kind}:{self.n}"


@dataclass
class DatagramInfo:
    """What one datagram returned by datagrams_to_send() carries."""

    size: int                   # UDP payload bytes
    packets: int                # QUIC packets coalesced in it
    ack_eliciting: bool         # any packet is ack-eliciting
    ack_only: bool              # every packet carries an ACK frame and nothing ack-eliciting


@dataclass
class EndpointStats:
    """Counters kept by a :class:`PolicyConnection`."""

    datagrams_sent: int = 0
    bytes_sent: int = 0                 # UDP payload bytes
    datagrams_received: int = 0
    bytes_received: int = 0
    ack_only_sent: int = 0              # ACK-only datagrams
    ack_only_bytes_sent: int = 0
    ack_frames_sent: int = 0            # ACK frames in the 1-RTT space
    ack_eliciting_received: int = 0     # ack-eliciting 1-RTT packets
    immediate_acks: int = 0             # ACKs made immediate by reordering or a gap
    ack_frequency_sent: int = 0         # ACK_FREQUENCY frames written (with retransmissions)
    ack_frequency_received: int = 0     # ACK_FREQUENCY frames applied


def _tlv_items(data: bytes) -> list[tuple[int, bytes]]:
    buf = Buffer(data=data)
    items = []
    while not buf.eof():
        param_id = buf.pull_uint_var()
        items.append((param_id, buf.pull_bytes(buf.pull_uint_var())))
    return items


def _varint(value: int) -> bytes:
    buf = Buffer(capacity=UINT_VAR_MAX_SIZE)
    buf.push_uint_var(value)
    return buf.data


def _packets_in_datagram(datagram: bytes) -> int:
    """How many QUIC packets a datagram we built holds (long headers say their length)."""
    count, offset = 0, 0
    while offset < len(datagram) and datagram[offset] & 0x40:      # zero bytes: trailing padding
        count += 1
        if not datagram[offset] & 0x80:                            # short header: to the end
            break
        header = pull_quic_header(Buffer(data=datagram[offset:]), host_cid_length=0)
        offset += header.packet_length
    return count


class PolicyConnection(QuicConnection):
    """A QuicConnection whose 1-RTT ACKs follow an :class:`AckPolicy`, with counters.

    * ``default``: aioquic as shipped: an ACK 1 ms (K_GRANULARITY) after the first unacknowledged
      ack-eliciting packet.
    * ``ratio:N``: an ACK after N ack-eliciting packets or max_ack_delay, whichever is first, and
      at once when a packet arrives out of order or leaves a gap (RFC 9000 section 13.2.1);
      ratio:2 is RFC 9000's recommendation.
    * ``adaptive``: 1:2 for the first 100 ack-eliciting packets, then 1:10, with the delay bounded
      by min(max_ack_delay, smoothed RTT / 4) so that at least ~4 ACKs go out per RTT.
    * ``ack-frequency:N``: draft-ietf-quic-ack-frequency. Both sides advertise min_ack_delay. A
      server whose peer advertised it sends one ACK_FREQUENCY frame after the handshake asking
      for an ACK every N ack-eliciting packets (threshold N - 1), its own max_ack_delay, and
      reordering threshold 1; a client honours the frame (until then it acts as ratio:2).

    Handshake (Initial/Handshake) spaces keep aioquic's behaviour under every policy.
    """

    def __init__(self, configuration: QuicConfiguration, policy: "str | AckPolicy" = "default",
                 **kwargs: Any) -> None:
        self.policy = AckPolicy.parse(policy)
        super().__init__(configuration=configuration, **kwargs)
        self.stats = EndpointStats()
        self.max_ack_delay = getattr(configuration, "max_ack_delay", 0.025)
        self.min_ack_delay = getattr(configuration, "min_ack_delay", K_GRANULARITY)
        self._rx_packets: list[tuple[Epoch, bool]] = []
        self._sent_packets: list[QuicSentPacket] = []
        self._last_info: list[DatagramInfo] = []
        self._unacked_eliciting = 0         # 1-RTT ack-eliciting packets since our last ACK
        # ack-frequency state: what we were asked (receiver) and what we ask (sender)
        self.peer_min_ack_delay: Optional[float] = None
        self._af_pending = False
        self._af_seq_received = -1
        self._af_threshold: Optional[int] = None      # ack-eliciting packets per ACK
        self._af_max_ack_delay: Optional[float] = None
        self._af_reordering = 1
        if self.policy.kind == "ack-frequency":
            handlers = self._QuicConnection__frame_handlers
            handlers[FRAME_ACK_FREQUENCY] = (self._handle_ack_frequency_frame,
                                             frozenset([Epoch.ONE_RTT]))
        loss_on_packet_sent = self._loss.on_packet_sent

        def on_packet_sent(*, packet: QuicSentPacket, space: Any) -> None:
            self._sent_packets.append(packet)
            loss_on_packet_sent(packet=packet, space=space)

        self._loss.on_packet_sent = on_packet_sent

    # ---- the sans-I/O entry points, with virtual time --------------------------------------

    def _clock(self, now: float) -> None:
        if isinstance(self._quic_logger, VirtualTimeTrace):
            self._quic_logger.now = now

    def connect(self, addr: Any, now: float) -> None:
        self._clock(now)
        super().connect(addr, now)

    def handle_timer(self, now: float) -> None:
        self._clock(now)
        super().handle_timer(now)

    def next_timer(self, now: float) -> Optional[float]:
        """get_timer(), but never at or before ``now`` (a virtual clock has no jitter to help)."""
        timer = self.get_timer()
        if timer is None:
            return None
        return max(timer, now + TIMER_RESOLUTION)

    def receive_datagram(self, data: bytes, addr: Any, now: float) -> None:
        self._clock(now)
        self.stats.datagrams_received += 1
        self.stats.bytes_received += len(data)
        space = self._spaces.get(Epoch.ONE_RTT)
        ack_at_before = space.ack_at if space is not None else None
        largest_before = space.largest_received_packet if space is not None else -1
        self._rx_packets = []
        super().receive_datagram(data, addr, now)
        eliciting = sum(1 for epoch, is_eliciting in self._rx_packets
                        if is_eliciting and epoch in _ONE_RTT_EPOCHS)
        self._rx_packets = []
        if eliciting:
            self._apply_policy(now, eliciting, ack_at_before, largest_before)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Any]]:
        self._clock(now)
        # aioquic lets due ACKs bypass the pacer only when ack_at < now; a virtual-time timer
        # fires exactly at ack_at, so move a due ACK just before now (the ACK delay it reports
        # comes from largest_received_time, not from ack_at).
        before = math.nextafter(now, -math.inf)
        for space in self._loss.spaces:
            if space.ack_at is not None and before < space.ack_at <= now:
                space.ack_at = before
        self._sent_packets = []
        datagrams = super().datagrams_to_send(now)
        # aioquic writes 1-RTT ACKs only once the handshake is complete; one that fell due
        # earlier would keep the timer at "now" and a virtual-time driver spinning: retry in 1 ms.
        space = self._spaces.get(Epoch.ONE_RTT)
        if (space is not None and not self._handshake_complete and space.ack_at is not None
                and space.ack_at <= now):
            space.ack_at = now + K_GRANULARITY
        self._last_info = self._describe(datagrams, self._sent_packets)
        self._sent_packets = []
        for info in self._last_info:
            self.stats.datagrams_sent += 1
            self.stats.bytes_sent += info.size
            if info.ack_only:
                self.stats.ack_only_sent += 1
                self.stats.ack_only_bytes_sent += info.size
        return datagrams

    def last_datagrams_info(self) -> list[DatagramInfo]:
        """One :class:`DatagramInfo` per datagram of the last datagrams_to_send() call."""
        return list(self._last_info)

    # ---- accounting ---------------------------------------------------------------------------

    def _describe(self, datagrams: list[tuple[bytes, Any]],
                  packets: list[QuicSentPacket]) -> list[DatagramInfo]:
        infos, index = [], 0
        for data, _addr in datagrams:
            count = _packets_in_datagram(data)
            mine = packets[index:index + count]
            index += count
            if len(mine) != count or sum(p.sent_bytes for p in mine) > len(data):
                raise RuntimeError("datagrams and sent packets do not line up: aioquic changed")
            has_ack = [any(handler == self._on_ack_delivery for handler, _ in p.delivery_handlers)
                       for p in mine]
            infos.append(DatagramInfo(
                size=len(data), packets=count,
                ack_eliciting=any(p.is_ack_eliciting for p in mine),
                ack_only=bool(mine) and all(ack and not p.is_ack_eliciting
                                            for p, ack in zip(mine, has_ack))))
        if index != len(packets):
            raise RuntimeError("datagrams and sent packets do not line up: aioquic changed")
        return infos

    def _payload_received(self, context: Any, plain: bytes,
                          crypto_frame_required: bool = False) -> tuple[bool, bool]:
        is_ack_eliciting, is_probing = super()._payload_received(
            context, plain, crypto_frame_required=crypto_frame_required)
        self._rx_packets.append((context.epoch, is_ack_eliciting))
        return is_ack_eliciting, is_probing

    def _write_ack_frame(self, builder: QuicPacketBuilder, space: Any, now: float) -> None:
        super()._write_ack_frame(builder=builder, space=space, now=now)
        if space is self._spaces.get(Epoch.ONE_RTT):
            self._unacked_eliciting = 0
            self.stats.ack_frames_sent += 1

    # ---- the policies ------------------------------------------------------------------------

    def _packets_per_ack(self) -> int:
        kind = self.policy.kind
        if kind == "ratio":
            return self.policy.n
        if kind == "adaptive":
            return 2 if self.stats.ack_eliciting_received <= ADAPTIVE_STARTUP_PACKETS else 10
        return self._af_threshold if self._af_threshold is not None else 2   # ack-frequency

    def _ack_delay_bound(self) -> float:
        if self.policy.kind == "adaptive" and self._loss._rtt_initialized:
            return max(K_GRANULARITY, min(self.max_ack_delay, self._loss._rtt_smoothed / 4))
        if self.policy.kind == "ack-frequency" and self._af_max_ack_delay is not None:
            return self._af_max_ack_delay
        return self.max_ack_delay

    def _apply_policy(self, now: float, eliciting: int, ack_at_before: Optional[float],
                      largest_before: int) -> None:
        space = self._spaces.get(Epoch.ONE_RTT)
        self.stats.ack_eliciting_received += eliciting
        if self.policy.kind == "default" or space is None or space.discarded:
            return
        self._unacked_eliciting += eliciting
        largest = space.largest_received_packet
        # One 1-RTT packet per datagram (a short header runs to the end of it): it is either the
        # new largest, possibly above a gap, or older than the largest, i.e. reordered.
        out_of_order = (largest > largest_before + 1 and largest_before >= 0) \
            or largest <= largest_before
        reorder_acks = self.policy.kind != "ack-frequency" or self._af_reordering != 0
        if out_of_order and reorder_acks:
            space.ack_at = now
            self.stats.immediate_acks += 1
        elif self._unacked_eliciting >= self._packets_per_ack():
            space.ack_at = now
        elif ack_at_before is None and space.ack_at is not None:
            space.ack_at = now + self._ack_delay_bound()     # aioquic armed its 1 ms: re-arm

    # ---- transport parameters (max_ack_delay, min_ack_delay) ---------------------------------

    def _serialize_transport_parameters(self) -> bytes:
        data = super()._serialize_transport_parameters()
        advertised_ms = math.ceil(self.max_ack_delay * 1000 - 1e-9)
        out, found = [], False
        for param_id, value in _tlv_items(data):
            if param_id == TP_MAX_ACK_DELAY:
                value, found = _varint(advertised_ms), True
            out.append((param_id, value))
        if not found:
            raise RuntimeError("aioquic no longer sends max_ack_delay")
        if self.policy.kind == "ack-frequency":
            out.append((TP_MIN_ACK_DELAY, _varint(round(self.min_ack_delay * 1e6))))
        if isinstance(self._quic_logger, VirtualTimeTrace):         # aioquic logged 25 ms
            event = self._quic_logger._events[-1]
            if event["name"] == "transport:parameters_set":
                event["data"]["max_ack_delay"] = advertised_ms
                if self.policy.kind == "ack-frequency":
                    event["data"]["min_ack_delay"] = round(self.min_ack_delay * 1e6)
        return b"".join(_varint(pid) + _varint(len(value)) + value for pid, value in out)

    def _parse_transport_parameters(self, data: bytes, from_session_ticket: bool = False) -> None:
        super()._parse_transport_parameters(data, from_session_ticket=from_session_ticket)
        items = dict(_tlv_items(data))
        if TP_MIN_ACK_DELAY not in items or self.policy.kind != "ack-frequency":
            return
        try:
            min_us = Buffer(data=items[TP_MIN_ACK_DELAY]).pull_uint_var()
            max_ms = (Buffer(data=items[TP_MAX_ACK_DELAY]).pull_uint_var()
                      if TP_MAX_ACK_DELAY in items else 25)
        except BufferReadError:
            min_us, max_ms = None, 0
        if min_us is None or min_us > max_ms * 1000:
            raise QuicConnectionError(error_code=QuicErrorCode.TRANSPORT_PARAMETER_ERROR,
                                      frame_type=QuicFrameType.CRYPTO,
                                      reason_phrase="min_ack_delay is invalid or above "
                                                    "max_ack_delay")
        self.peer_min_ack_delay = min_us / 1e6
        if not self._is_client and not from_session_ticket:
            self._af_pending = True

    # ---- ACK_FREQUENCY frames ------------------------------------------------------------------

    def _ack_frequency_request(self) -> tuple[int, int, int, int]:
        """(sequence number, ack-eliciting threshold, request max ack delay in us, reordering)."""
        delay_us = max(round(self.max_ack_delay * 1e6),
                       round((self.peer_min_ack_delay or 0) * 1e6))
        return 0, self.policy.n - 1, delay_us, 1

    def _write_connection_limits(self, builder: QuicPacketBuilder, space: Any) -> None:
        super()._write_connection_limits(builder=builder, space=space)
        if self._af_pending:
            seq, threshold, delay_us, reordering = self._ack_frequency_request()
            buf = builder.start_frame(FRAME_ACK_FREQUENCY, capacity=ACK_FREQUENCY_CAPACITY,
                                      handler=self._on_ack_frequency_delivery,
                                      handler_args=(delay_us / 1e6,))
            for value in (seq, threshold, delay_us, reordering):
                buf.push_uint_var(value)
            self._af_pending = False
            self.stats.ack_frequency_sent += 1
            if self._quic_logger is not None:
                builder.quic_logger_frames.append({
                    "frame_type": "ack_frequency", "sequence_number": seq,
                    "ack_eliciting_threshold": threshold, "request_max_ack_delay": delay_us,
                    "reordering_threshold": reordering})

    def _on_ack_frequency_delivery(self, delivery: QuicDeliveryState, max_ack_delay: float) -> None:
        if delivery == QuicDeliveryState.ACKED:
            self._loss.max_ack_delay = max_ack_delay      # the peer now delays ACKs this long
        else:
            self._af_pending = True

    def _handle_ack_frequency_frame(self, context: Any, frame_type: int, buf: Buffer) -> None:
        seq = buf.pull_uint_var()
        threshold = buf.pull_uint_var()
        delay_us = buf.pull_uint_var()
        reordering = buf.pull_uint_var()
        if delay_us < round(self.min_ack_delay * 1e6):
            raise QuicConnectionError(error_code=QuicErrorCode.PROTOCOL_VIOLATION,
                                      frame_type=frame_type,
                                      reason_phrase="Requested max ack delay below min_ack_delay")
        if context.quic_logger_frames is not None:
            context.quic_logger_frames.append({
                "frame_type": "ack_frequency", "sequence_number": seq,
                "ack_eliciting_threshold": threshold, "request_max_ack_delay": delay_us,
                "reordering_threshold": reordering})
        if seq <= self._af_seq_received:
            return                                            # stale or repeated
        self._af_seq_received = seq
        self._af_threshold = threshold + 1
        self._af_max_ack_delay = delay_us / 1e6
        self._af_reordering = reordering      # 0: ignore reordering; >= 1: treated as 1
        self.stats.ack_frequency_received += 1


# ---------------------------------------------------------------------------------------------
# bulk transfer application

_PATTERN = bytes(range(256))


def payload_bytes(offset: int, length: int) -> bytes:
    """Bytes ``offset .. offset + length`` of the transfer payload (a repeating 0..255 ramp)."""
    start = offset % len(_PATTERN)
    reps = (start + length + len(_PATTERN) - 1) // len(_PATTERN)
    return (_PATTERN * reps)[start:start + length]


class _Peer:
    """Shared driver surface: receive, transmit, timers; ``conn`` is the PolicyConnection."""

    conn: Optional[PolicyConnection]
    remote: Endpoint

    def transmit(self, now: float) -> list[tuple[bytes, DatagramInfo]]:
        """Datagrams to send now, each with its :class:`DatagramInfo`."""
        if self.conn is None:
            return []
        datagrams = self.conn.datagrams_to_send(now)
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


class BulkAnswers:
    """The server's half of the bulk application, whatever drives the connection (virtual time
    here, aioquic's asyncio API in satemu.quic.realtime): ``GET <size>\\n`` on a client stream
    is answered with ``size`` bytes of :func:`payload_bytes` and FIN; a bad request resets the
    stream."""

    def __init__(self) -> None:
        self.requests: dict[int, bytes] = {}
        self.served: dict[int, int] = {}        # stream -> bytes sent (-1: a bad request)

    def answer(self, conn: QuicConnection, event: StreamDataReceived) -> bool:
        """Take a stream's data; True once the stream got its answer (in this call)."""
        if event.stream_id in self.served:
            return False
        request = self.requests.get(event.stream_id, b"") + event.data
        self.requests[event.stream_id] = request
        if b"\n" not in request:
            return False
        words = request.split(b"\n", 1)[0].split()
        if len(words) != 2 or words[0] != b"GET" or not words[1].isdigit():
            conn.reset_stream(event.stream_id, error_code=1)
            self.served[event.stream_id] = -1
        else:
            size = int(words[1])
            self.served[event.stream_id] = size
            conn.send_stream_data(event.stream_id, payload_bytes(0, size), end_stream=True)
        return True


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
        if self.verify and self.error is None and \
                event.data != payload_bytes(self.received, len(event.data)):
            self.error = f"payload differs at offset {self.received}"
        self.received += len(event.data)
        if not event.end_stream:
            return None
        if self.received == self.size and self.error is None:
            return True
        if self.error is None:
            self.error = f"stream ended after {self.received} of {self.size} bytes"
        return False


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


class BulkClient(_Peer, BulkDownload):
    """The terminal: asks for ``size`` bytes on stream 0 and times their arrival."""

    def __init__(self, configuration: QuicConfiguration, size: int,
                 policy: "str | AckPolicy" = "default", local: Endpoint = CLIENT,
                 remote: Endpoint = SERVER, verify: bool = True) -> None:
        self.size = size
        self.local, self.remote = local, remote
        self.verify = verify
        self.conn = PolicyConnection(configuration, policy=policy)
        self.terminated: Optional[ConnectionTerminated] = None
        self.started_at: Optional[float] = None
        self.handshake_at: Optional[float] = None
        self.first_byte_at: Optional[float] = None
        self.completed_at: Optional[float] = None

    def start(self, now: float) -> None:
        """Begin the handshake and queue the request (it leaves with the first 1-RTT packet)."""
        self.started_at = now
        self.conn.connect(self.remote.addr, now)
        self.ask(self.conn, self.size)

    @property
    def done(self) -> bool:
        return self.completed_at is not None

    def on_event(self, event: Any, now: float) -> None:
        super().on_event(event, now)
        if isinstance(event, HandshakeCompleted):
            self.handshake_at = now
        elif isinstance(event, StreamReset) and event.stream_id == self.stream_id:
            self.error = "server reset the stream"
        elif isinstance(event, StreamDataReceived) and event.stream_id == self.stream_id:
            if event.data and self.first_byte_at is None:
                self.first_byte_at = now
            if self.take(event):
                self.completed_at = now
