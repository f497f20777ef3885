# SPDX-License-Identifier: BSD-2-Clause
"""QUIC packets read back from the wire with the connection's TLS secrets: each datagram's packet
numbers, packet types, frame types and the largest packet number its ACK frames acknowledge, as
``satemu.quic.cosim.PacketFate`` holds them. It tells what a stack that reports none of it
(quinn) sent, from the bytes it sent and the SSLKEYLOGFILE lines it logs (QUIC v1, RFC 9000 and
9001: initial keys from the client's first Destination Connection ID, the others from the
handshake and traffic secrets; a key update follows the key phase bit).

The frames of a packet are named as the co-simulation names aioquic's (``ack``, ``stream``,
``crypto``, ...), each once, in the order it first appears; PADDING is not listed. A datagram
or packet that cannot be read (no keys for it, a failed check) raises WireError."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from aioquic.buffer import Buffer, BufferReadError
from aioquic.quic.crypto import (CryptoContext, CryptoError, CryptoPair, apply_key_phase,
    next_key_phase)
from aioquic.quic.logger import PACKET_TYPE_NAMES
from aioquic.quic.packet import QuicPacketType
from aioquic.tls import CipherSuite

VERSION_1 = 0x0000_0001
# Frame types (RFC 9000 section 19; RFC 9221's DATAGRAM; draft-ietf-quic-ack-frequency's
# ACK_FREQUENCY and IMMEDIATE_ACK) by name.
FRAME_NAMES = {
    0x00: "padding", 0x01: "ping", 0x02: "ack", 0x03: "ack", 0x04: "reset_stream",
    0x05: "stop_sending", 0x06: "crypto", 0x07: "new_token",
    **{t: "stream" for t in range(0x08, 0x10)},
    0x10: "max_data", 0x11: "max_stream_data", 0x12: "max_streams", 0x13: "max_streams",
    0x14: "data_blocked", 0x15: "stream_data_blocked", 0x16: "streams_blocked",
    0x17: "streams_blocked", 0x18: "new_connection_id", 0x19: "retire_connection_id",
    0x1A: "path_challenge", 0x1B: "path_response", 0x1C: "connection_close",
    0x1D: "connection_close", 0x1E: "handshake_done", 0x1F: "immediate_ack",
    0x30: "datagram", 0x31: "datagram", 0xAF: "ack_frequency",
}
# Each epoch's packets by qlog's name (as aioquic's logger says them).
_TYPE_NAMES = {"initial": PACKET_TYPE_NAMES[QuicPacketType.INITIAL],
               "handshake": PACKET_TYPE_NAMES[QuicPacketType.HANDSHAKE],
               "1rtt": PACKET_TYPE_NAMES[QuicPacketType.ONE_RTT]}
# The SSLKEYLOGFILE labels of each epoch's secrets, by the side that sends with them.
_LABELS = {("handshake", True): "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
           ("handshake", False): "SERVER_HANDSHAKE_TRAFFIC_SECRET",
           ("1rtt", True): "CLIENT_TRAFFIC_SECRET_0",
           ("1rtt", False): "SERVER_TRAFFIC_SECRET_0"}
# The cipher suites a secret of this many bytes may be for (its hash's length), in the order
# they are tried.
_SUITES = {32: (CipherSuite.AES_128_GCM_SHA256, CipherSuite.CHACHA20_POLY1305_SHA256),
           48: (CipherSuite.AES_256_GCM_SHA384,)}


class WireError(ValueError):
    """A datagram the connection's secrets do not read; one line."""


@dataclass
class Told:
    """What one datagram carried, as ``PacketFate`` holds it (``numbers``, ``types``,
    ``frames``, ``largest_acked``)."""
    numbers: tuple[int, ...]
    types: str
    frames: str
    largest_acked: int | None

    def astuple(self) -> tuple:
        return self.numbers, self.types, self.frames, self.largest_acked


def secrets_of(keylog: str) -> dict[str, bytes]:
    """The secrets of SSLKEYLOGFILE ``keylog`` text by label (the last of each label: one
    connection's lines)."""
    out = {}
    for line in keylog.splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            try:
                out[parts[0]] = bytes.fromhex(parts[2])
            except ValueError:
                continue
    return out


@dataclass
class _Direction:
    """One side's packets as its peer reads them: the keys of each epoch, the largest packet
    number seen in each space, and the length of the Destination Connection IDs it sends."""
    from_client: bool
    keys: dict = field(default_factory=dict)          # epoch -> CryptoContext
    largest: dict = field(default_factory=dict)       # space -> packet number
    dcid_length: int | None = None


class WireReader:
    """The datagrams of one connection, read in the order each side sent them (both sides'
    in one reader, or one side's alone once the client's first datagram has been given:
    ``initial``). ``keylog``: the connection's SSLKEYLOGFILE lines."""

    def __init__(self, keylog: str, initial: bytes | None = None):
        self.secrets = secrets_of(keylog)
        self.sides = {True: _Direction(True), False: _Direction(False)}
        self.initial_dcid: bytes | None = None
        self.key_updates = 0                # key phase changes read, both sides
        if initial is not None:
            self._learn_initial(initial)

    def _learn_initial(self, data: bytes) -> None:
        try:
            kind, dcid, _ = _header(Buffer(data=data), None)
        except (BufferReadError, WireError) as e:
            raise WireError(f"the client's first datagram has no QUIC header: {e}") from None
        if kind != "initial":
            raise WireError("the client's first datagram is not an Initial packet")
        self.initial_dcid = dcid

    def _context(self, side: _Direction, epoch: str, sample: bytes, offset: int,
                 expected: int) -> CryptoContext:
        """The context that reads ``side``'s packets of ``epoch`` (made on first use: the
        cipher suite the one whose key opens ``sample``)."""
        ctx = side.keys.get(epoch)
        if ctx is not None:
            return ctx
        if epoch == "initial":
            pair = CryptoPair()
            pair.setup_initial(self.initial_dcid, is_client=not side.from_client,
                               version=VERSION_1)
            ctx = pair.recv
        else:
            label = _LABELS[(epoch, side.from_client)]
            secret = self.secrets.get(label)
            if secret is None:
                raise WireError(f"no {label} in the key log")
            for suite in _SUITES.get(len(secret), ()):
                ctx = CryptoContext()
                ctx.setup(cipher_suite=suite, secret=secret, version=VERSION_1)
                try:
                    ctx.decrypt_packet(sample, offset, expected)
                    break
                except CryptoError:
                    ctx = None
            if ctx is None:
                raise WireError(f"{label}: no cipher suite opens its packets")
        side.keys[epoch] = ctx
        return ctx

    def read(self, data: bytes, from_client: bool) -> Told:
        """What datagram ``data``, sent by the client (``from_client``) or the server,
        carried."""
        if self.initial_dcid is None:
            if not from_client:
                raise WireError("a server's datagram before the client's first")
            self._learn_initial(data)
        side = self.sides[from_client]
        buf = Buffer(data=data)
        numbers, types, frames, acked = [], [], [], []
        while not buf.eof():
            start = buf.tell()
            if not any(data[start:]):           # zero bytes after the last packet: padding
                break
            try:
                kind, dcid, length = _header(buf, side.dcid_length)
            except BufferReadError:
                raise WireError(f"a packet at byte {start}: its header runs past the "
                                f"datagram") from None
            if kind != "1rtt":
                side.dcid_length = len(dcid)
            offset = buf.tell() - start
            end = start + offset + length
            if end > len(data):
                raise WireError(f"a {kind} packet at byte {start} runs past the datagram")
            packet = data[start:end]
            buf.seek(end)
            expected = side.largest.get(kind, -1) + 1
            ctx = self._context(side, kind, packet, offset, expected)
            try:
                _, payload, number, phase = ctx.decrypt_packet(packet, offset, expected)
            except CryptoError:
                raise WireError(f"a {kind} packet at byte {start} does not open with its "
                                f"keys") from None
            if phase:       # a key update: the next packet keys from now, the same HP key
                apply_key_phase(ctx, next_key_phase(ctx), "remote_update")
                self.key_updates += 1
            side.largest[kind] = max(number, side.largest.get(kind, -1))
            names, largest = frame_names(payload)
            numbers.append(number)
            types.append(_TYPE_NAMES[kind])
            frames.append("+".join(names) or "-")
            if largest is not None:
                acked.append(largest)
        return Told(tuple(numbers), sys.intern(" ".join(types)), sys.intern(" ".join(frames)),
                    max(acked, default=None))


def _header(buf: Buffer, dcid_length: int | None) -> tuple[str, bytes, int]:
    """A packet's epoch ("initial", "handshake", "1rtt"), Destination Connection ID and the
    length of what follows the header's unprotected part (the packet number on), the buffer
    left at the packet number. QUIC v1's invariants, with the fixed bit not checked: a peer
    that advertised grease_quic_bit (RFC 9287) may find it zero, and quinn greases it."""
    first = buf.pull_uint8()
    if not first & 0x80:                            # a short header: its DCID, then the rest
        if dcid_length is None:
            raise WireError("a 1-RTT packet before any long header told its DCID's length")
        dcid = buf.pull_bytes(dcid_length)
        return "1rtt", dcid, buf.capacity - buf.tell()
    version = buf.pull_uint32()
    if version != VERSION_1:
        raise WireError(f"version {version:#010x}: only QUIC v1 is read here")
    dcid = buf.pull_bytes(buf.pull_uint8())
    buf.pull_bytes(buf.pull_uint8())                # SCID
    kind = ("initial", "0rtt", "handshake", "retry")[(first >> 4) & 3]
    if kind not in ("initial", "handshake"):
        raise WireError(f"a {kind} packet: not read here")
    if kind == "initial":
        buf.pull_bytes(buf.pull_uint_var())         # its token
    return kind, dcid, buf.pull_uint_var()


def frame_names(payload: bytes) -> tuple[list[str], int | None]:
    """The frame types of a packet's payload (each once, in order; PADDING left out), and the
    largest packet number its ACK frames acknowledge (None: it has none). WireError for a
    frame that cannot be read."""
    buf = Buffer(data=payload)
    names: list[str] = []
    largest = None
    try:
        while not buf.eof():
            kind = buf.pull_uint_var()
            name = FRAME_NAMES.get(kind)
            if name is None:
                raise WireError(f"frame type {kind:#x}: not a frame read here")
            got = _skip(buf, kind)
            if kind in (0x02, 0x03):
                largest = got if largest is None else max(largest, got)
            if name != "padding" and name not in names:
                names.append(name)
    except BufferReadError:
        raise WireError("a frame runs past its packet's end") from None
    return names, largest


def _skip(buf: Buffer, kind: int) -> int | None:
    """Past frame ``kind``'s body (its type read); an ACK's largest acknowledged."""
    v = buf.pull_uint_var
    if kind in (0x00, 0x01, 0x1E, 0x1F):                   # PADDING, PING, HANDSHAKE_DONE, ...
        return None
    if kind in (0x02, 0x03):                               # ACK: largest, delay, ranges, ECN
        largest = v()
        v()
        ranges = v()
        v()
        for _ in range(ranges):
            v()
            v()
        if kind == 0x03:
            v(), v(), v()
        return largest
    if kind == 0x04:                                       # RESET_STREAM
        v(), v(), v()
    elif kind in (0x05, 0x11):                             # STOP_SENDING, MAX_STREAM_DATA
        v(), v()
    elif kind == 0x06:                                     # CRYPTO: offset, length, data
        v()
        buf.pull_bytes(v())
    elif kind == 0x07:                                     # NEW_TOKEN
        buf.pull_bytes(v())
    elif 0x08 <= kind <= 0x0F:                             # STREAM: id, [offset], [length]
        v()
        if kind & 0x04:
            v()
        if kind & 0x02:
            buf.pull_bytes(v())
        else:
            buf.seek(buf.capacity)
    elif kind in (0x10, 0x12, 0x13, 0x14, 0x16, 0x17, 0x19):
        v()
    elif kind == 0x15:                                     # STREAM_DATA_BLOCKED
        v(), v()
    elif kind == 0x18:                                     # NEW_CONNECTION_ID
        v(), v()
        buf.pull_bytes(buf.pull_uint8())
        buf.pull_bytes(16)
    elif kind in (0x1A, 0x1B):                             # PATH_CHALLENGE, PATH_RESPONSE
        buf.pull_bytes(8)
    elif kind in (0x1C, 0x1D):                             # CONNECTION_CLOSE
        v()
        if kind == 0x1C:
            v()
        buf.pull_bytes(v())
    elif kind == 0x30:                                     # DATAGRAM, to the packet's end
        buf.seek(buf.capacity)
    elif kind == 0x31:
        buf.pull_bytes(v())
    elif kind == 0xAF:                                     # ACK_FREQUENCY
        v(), v(), v(), v()
    return None


__all__ = ["FRAME_NAMES", "Told", "WireError", "WireReader", "frame_names", "secrets_of"]
