# SPDX-License-Identifier: BSD-2-Clause
"""ACK policies for aioquic: PolicyConnection, its transport parameters, ACK_FREQUENCY frames."""

# aioquic 1.7 internals this module relies on (pinned by tests/host/test_quic_endpoints.py and
# tests/host/test_ack_reordering.py):
#   * QuicConnection._payload_received(context, plain, ...) -> (is_ack_eliciting, is_probing),
#     called once per decrypted packet that is not a duplicate (space.received_packets), before
#     receive_datagram records the packet number in space.ack_queue /
#     space.largest_received_packet and arms space.ack_at.
#   * QuicPacketSpace.ack_at / largest_received_packet / discarded, QuicConnection._spaces and
#     _loss.spaces; an ACK is written by _write_ack_frame(builder, space, now), in the 1-RTT space
#     only in a 1-RTT packet once ack_at <= now (_write_application), which then sets ack_at to
#     None.
#   * datagrams_to_send() reports each packet it built through self._loss.on_packet_sent(packet=,
#     space=) in datagram order (_flush_builder); QuicSentPacket.is_ack_eliciting and
#     .delivery_handlers (an ACK frame registers self._on_ack_delivery).
#   * _serialize_transport_parameters() / _parse_transport_parameters(data, from_session_ticket)
#     carry the raw transport-parameter TLVs; the frame table is the name-mangled
#     _QuicConnection__frame_handlers {type: (handler(context, frame_type, buf), epochs)};
#     _write_connection_limits(builder, space) runs for every 1-RTT packet once the handshake is
#     complete; self._loss.max_ack_delay and self._loss._rtt_smoothed / _rtt_initialized /
#     _rtt_initial.
#   * receive_datagram keeps a packet by space.received_packets.add(packet_number) right after
#     its _payload_received (the ack-frequency policy wraps that add in the 1-RTT space to learn
#     each packet's number); builder.start_frame(type, handler=) calls the handler with
#     QuicDeliveryState.ACKED or LOST once the packet is acknowledged or declared lost.
#   * QuicSentPacket.delivery_handlers name the frames a packet carries (told_of reads them by
#     each handler's __name__: _HANDLER_FRAMES, on_data_delivery, _on_connection_limit_delivery).
#   * _write_application sends STREAM data of self._streams whose stream is not is_blocked and
#     whose sender is not buffer_is_empty, RESET_STREAM when sender.reset_pending, and PINGs for
#     self._probe_pending / self._ping_pending; builder.remaining_buffer_space /
#     remaining_flight_space bound what builder.start_frame accepts.

from __future__ import annotations

import math
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

from aioquic.buffer import UINT_VAR_MAX_SIZE, Buffer, BufferReadError
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import PACKET_TYPE_NAMES
from aioquic.quic.congestion.base import K_GRANULARITY
from aioquic.quic.connection import QuicConnection, QuicConnectionError
from aioquic.quic.packet import QuicErrorCode, QuicFrameType, pull_quic_header
from aioquic.quic.packet_builder import QuicDeliveryState, QuicPacketBuilder, QuicSentPacket
from aioquic.quic.rangeset import RangeSet
from aioquic.tls import Epoch

from satemu.quic.determinism import VirtualTimeTrace
from satemu.quic.settings import ACK_N_MAX, VARINT_MAX

__all__ = ["AckPolicy", "DatagramInfo", "EndpointConfiguration", "EndpointStats",
           "PolicyConnection", "ReorderingState"]

TP_MAX_ACK_DELAY = 0x0B                 # RFC 9000 section 18.2, milliseconds
TP_MIN_ACK_DELAY = 0xFF04DE1B           # draft-ietf-quic-ack-frequency, microseconds
FRAME_ACK_FREQUENCY = 0xAF              # draft-ietf-quic-ack-frequency
FRAME_IMMEDIATE_ACK = 0x1F              # draft-ietf-quic-ack-frequency: ACK at once
ACK_FREQUENCY_CAPACITY = 2 + 4 * UINT_VAR_MAX_SIZE
TIMER_RESOLUTION = 1e-6                 # a timer never fires at or before the instant it was read
ADAPTIVE_STARTUP_PACKETS = 100          # "adaptive": ACK 1:2 for this many packets, then 1:10
PICOQUIC_RATE = 16e6                    # "picoquic": above this receive rate (bit/s) ACK less
PICOQUIC_LONG_RTT = 0.100               # ... 1:10 over a longer RTT (s), 1:4 over a shorter
QUICLY_ACK_DELAY = 0.025                # "quicly:N": its delayed-ACK timeout (s)
# "neqo[:R]": neqo's sender rule (neqo-transport's ackrate.rs; ConnectionParameters::ack_ratio)
NEQO_RATIO_SCALE = 10                   # its ack_ratio is in tenths of ACKs per round trip
NEQO_RATIO = 4 * NEQO_RATIO_SCALE       # its default: aim at 4 ACKs per round trip
NEQO_RATIO_MAX = 255                    # a u8
NEQO_PACKETS = (2, 256)                 # ACK every 2 .. 256 packets
NEQO_MAX_DELAY = 0.050                  # the delay it asks for is at most 50 ms
NAMED = ("default", "adaptive", "chromium", "picoquic", "neqo")  # the policies without an N
RECEIVER_RULES = ("ratio", "adaptive", "chromium", "picoquic", "quicly")   # take +reorder
MISSING_RANGES = 256                    # gaps a ReorderingState remembers (the oldest go first)
IMMEDIATE_ACK_ROOM = 4                  # bytes a packet must have left to carry IMMEDIATE_ACK

_ONE_RTT_EPOCHS = (Epoch.ONE_RTT, Epoch.ZERO_RTT)     # both land in the 1-RTT packet space


@dataclass(frozen=True)
class AckPolicy:
    """How the receiver of data paces its ACKs; parsed from "default", "ratio:N", "adaptive",
    "ack-frequency:N", or a deployed stack's rule: "chromium", "picoquic", "quicly:N",
    "neqo[:R]"; then
    options, each a "+" suffix (see :class:`PolicyConnection` for what they do):

    * ``+reorder`` (ratio:N, adaptive, chromium, picoquic, quicly:N): ACK every ack-eliciting
      packet at once for SRTT/8 after a packet arrives out of order or beyond a gap;
    * ``+reordering:R`` (ack-frequency:N; R in 0 .. 2^62 - 1, default 1): the Reordering
      Threshold the ACK_FREQUENCY frame asks for;
    * ``+immediate-ack`` (ack-frequency:N): send an IMMEDIATE_ACK once per round trip.

    ``str()`` spells a policy the one way :meth:`parse` reads back (options in the order above,
    ``+reordering:1`` left out)."""

    kind: str
    n: int = 2                          # N; neqo's ack_ratio R
    reorder: bool = False               # +reorder
    reordering: int = 1                 # +reordering:R
    immediate_ack: bool = False         # +immediate-ack

    def __post_init__(self) -> None:
        if self.kind in ("ratio", "ack-frequency", "quicly") and (
                isinstance(self.n, bool) or not isinstance(self.n, int)
                or not 1 <= self.n <= ACK_N_MAX):
            raise ValueError(f"ACK policy {self.kind}:{str(self.n)[:40]}: N is outside "
                             f"1 .. {ACK_N_MAX} (2^62)")
        if self.kind == "neqo" and (isinstance(self.n, bool) or not isinstance(self.n, int)
                                    or not NEQO_RATIO_SCALE <= self.n <= NEQO_RATIO_MAX):
            raise ValueError(f"ACK policy neqo:{str(self.n)[:40]}: R is neqo's ack_ratio, "
                             f"ACKs per round trip x {NEQO_RATIO_SCALE}, in {NEQO_RATIO_SCALE} "
                             f".. {NEQO_RATIO_MAX}")
        if not isinstance(self.reorder, bool) or not isinstance(self.immediate_ack, bool):
            raise ValueError(f"ACK policy {self.kind}: reorder and immediate_ack are booleans")
        if isinstance(self.reordering, bool) or not isinstance(self.reordering, int) \
                or not 0 <= self.reordering <= VARINT_MAX:
            raise ValueError(f"ACK policy {self.kind}: +reordering:R takes R in 0 .. "
                             f"{VARINT_MAX} (2^62 - 1), not {str(self.reordering)[:40]}")
        if self.reorder and self.kind not in RECEIVER_RULES:
            raise ValueError(f"ACK policy {self.kind}: +reorder goes with ratio:N, adaptive, "
                             f"chromium, picoquic or quicly:N (a receiver's own rule); "
                             f"ack-frequency:N follows its peer's Reordering Threshold")
        if (self.reordering != 1 or self.immediate_ack) and self.kind != "ack-frequency":
            raise ValueError(f"ACK policy {self.kind}: +reordering:R and +immediate-ack go "
                             f"with ack-frequency:N only (they are ACK_FREQUENCY's sender side)")

    @property
    def asks_peer(self) -> bool:
        """Whether the data's sender asks the receiver's pace with ACK_FREQUENCY frames
        (ack-frequency:N, neqo[:R]): both advertise min_ack_delay, and the receiver honours the
        frames."""
        return self.kind in ("ack-frequency", "neqo")

    @classmethod
    def parse(cls, text: "str | AckPolicy") -> "AckPolicy":
        """The policy ``text`` names; ValueError (one line) for an unknown one, an N outside
        1 .. ACK_N_MAX (satemu.quic.settings), which no stack can take, or an option that is
        unknown, repeated, out of range or not for that policy."""
        if isinstance(text, AckPolicy):
            return text
        spec = text.strip().lower()
        head, *options = spec.split("+")
        base = cls._parse_base(head.strip(), text)
        found: dict[str, Any] = {}
        for option in options:
            name, sep, arg = option.strip().partition(":")
            key = {"reorder": "reorder", "reordering": "reordering",
                   "immediate-ack": "immediate_ack"}.get(name)
            if key is None or (sep and key != "reordering"):
                raise ValueError(f"ACK policy {text[:60]!r}: unknown option "
                                 f"{'+' + option.strip()[:20]!r}; expected +reorder, "
                                 f"+reordering:R or +immediate-ack")
            if key in found:
                raise ValueError(f"ACK policy {text[:60]!r}: +{name} given twice")
            value: Any = True
            if key == "reordering":
                digits = arg.strip().lstrip("0") or "0"
                if not re.fullmatch(r"[0-9]+", arg.strip()) or len(digits) > 20 \
                        or int(digits) > VARINT_MAX:
                    raise ValueError(f"ACK policy {text[:60]!r}: +reordering:R takes R in "
                                     f"0 .. {VARINT_MAX} (2^62 - 1)")
                value = int(digits)
            found[key] = value
        try:
            return cls(base.kind, base.n, **found)
        except ValueError as exc:
            raise ValueError(f"ACK policy {text[:60]!r}: {str(exc).partition(': ')[2]}") \
                from None

    @classmethod
    def _parse_base(cls, spec: str, text: str) -> "AckPolicy":
        if spec in NAMED:
            return cls(spec, NEQO_RATIO) if spec == "neqo" else cls(spec)
        kind, sep, arg = spec.partition(":")
        if kind in ("ratio", "ack-frequency", "quicly", "neqo") and sep \
                and re.fullmatch(r"[0-9]+", arg):
            digits = arg.lstrip("0") or "0"     # ASCII digits; more than 20 are never in range,
            n = int(digits) if len(digits) <= 20 else 0               # and go unconverted
            if kind == "neqo":
                return cls(kind, n)             # its own range, said by __post_init__
            if 1 <= n <= ACK_N_MAX:
                return cls(kind, n)
        raise ValueError(f"unknown ACK policy {text[:40]!r}: expected default, ratio:N, adaptive, "
                         f"ack-frequency:N, chromium, picoquic or quicly:N with N in 1 .. "
                         f"{ACK_N_MAX} (2^62), or neqo[:R] with R in {NEQO_RATIO_SCALE} .. "
                         f"{NEQO_RATIO_MAX}")

    def __str__(self) -> str:
        text = self.kind if self.kind in NAMED else f"{self.kind}:{self.n}"
        if self.kind == "neqo" and self.n != NEQO_RATIO:
            text = f"neqo:{self.n}"
        if self.reorder:
            text += "+reorder"
        if self.reordering != 1:
            text += f"+reordering:{self.reordering}"
        if self.immediate_ack:
            text += "+immediate-ack"
        return text


# The frame each of aioquic's delivery handlers tracks (QuicSentPacket.delivery_handlers), by
# the handler's name; on_data_delivery and _on_connection_limit_delivery are told apart below.
_HANDLER_FRAMES = {
    "_on_ack_delivery": "ack", "_on_handshake_done_delivery": "handshake_done",
    "_on_max_stream_data_delivery": "max_stream_data", "_on_ping_delivery": "ping",
    "_on_new_connection_id_delivery": "new_connection_id",
    "_on_retire_connection_id_delivery": "retire_connection_id",
    "_on_path_challenge_delivery": "path_challenge", "on_reset_delivery": "reset_stream",
    "on_stop_sending_delivery": "stop_sending", "_on_ack_frequency_delivery": "ack_frequency",
    "_on_immediate_ack_delivery": "immediate_ack"}


def told_of(packets) -> tuple:
    """(numbers, types, frames, largest acknowledged) of the aioquic packets (QuicSentPacket) of
    one datagram, as :class:`PacketFate` holds them."""
    types, frames, acked = [], [], []
    for p in packets:
        kinds: list[str] = []
        for handler, args in p.delivery_handlers:
            name = getattr(handler, "__name__", "")
            if name == "on_data_delivery":          # a stream's sender; the crypto streams' have
                kind = "crypto" if handler.__self__._stream_id is None else "stream"   # no id
            elif name == "_on_connection_limit_delivery":
                kind = "max_data" if args[0].frame_type == QuicFrameType.MAX_DATA \
                    else "max_streams"
            else:
                kind = _HANDLER_FRAMES.get(name, "unknown")
                if kind == "ack":
                    acked.append(args[1])           # (space, largest received packet)
            if kind not in kinds:
                kinds.append(kind)
        types.append(PACKET_TYPE_NAMES.get(p.packet_type, "unknown"))
        frames.append("+".join(kinds) or "-")
    return (tuple(p.packet_number for p in packets), sys.intern(" ".join(types)),
            sys.intern(" ".join(frames)), max(acked, default=None))


@dataclass
class DatagramInfo:
    """What one datagram returned by datagrams_to_send() carries."""

    size: int                   # UDP payload bytes
    packets: int                # QUIC packets coalesced in it
    ack_eliciting: bool         # any packet is ack-eliciting
    ack_only: bool              # every packet carries an ACK frame and nothing ack-eliciting
    sent: tuple = field(default=(), repr=False, compare=False)     # its QuicSentPackets

    @property
    def told(self) -> tuple:
        """(numbers, types, frames, largest acknowledged) of its packets (:func:`told_of`), as
        the co-simulation records them (satemu.quic.cosim.PacketFate): read when asked, while
        the packets are as they were sent."""
        return told_of(self.sent)


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
    immediate_acks: int = 0             # ACKs made immediate by reordering or a gap (by RFC
                                        # 9000's rule, or the peer's Reordering Threshold)
    ack_frequency_sent: int = 0         # ACK_FREQUENCY frames written (with retransmissions)
    ack_frequency_received: int = 0     # ACK_FREQUENCY frames applied
    immediate_ack_received: int = 0     # IMMEDIATE_ACK frames honoured
    immediate_ack_sent: int = 0         # IMMEDIATE_ACK frames written (+immediate-ack)
    reorder_window_acks: int = 0        # +reorder: ACKs sent at once within SRTT/8 of reordering
    reordering_tolerated: int = 0       # ack-eliciting datagrams out of order or past a gap that
                                        # the peer's Reordering Threshold (0, or above 1) let wait
    # Packets declared lost before the handshake was confirmed (RFC 9001 section 4.1.2), by
    # recovery's two paths: ``handshake_lost_packets`` by loss detection (a congestion event,
    # RFC 9002 section 6.1), ``handshake_pto_resent`` by a probe timeout that resent their
    # CRYPTO data (aioquic declares those lost without a congestion event).
    handshake_lost_packets: int = 0
    handshake_pto_resent: int = 0
    handshake_congestion_events: int = 0
    handshake_ptos: int = 0             # probe timeouts before the handshake was confirmed
    cwnd_at_confirmation: Optional[int] = None    # bytes, when the handshake was confirmed


@dataclass
class EndpointConfiguration(QuicConfiguration):
    """aioquic's configuration plus the ACK-delay settings aioquic itself hard-wires."""

    max_ack_delay: float = 0.025        # seconds: advertised (rounded up to whole ms), and the
                                        # bound on how long the ratio policies hold an ACK
    min_ack_delay: float = K_GRANULARITY  # seconds: advertised under the ack-frequency policy
    initial_window: Optional[int] = None  # packets of max_datagram_size; None: aioquic's 10


def tlv_items(data: bytes) -> list[tuple[int, bytes]]:
    """The (parameter id, value) pairs of serialized transport parameters, in order."""
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


class ReorderingState:
    """When a receiver whose peer asked for a Reordering Threshold above 1 sends an immediate ACK:
    draft-ietf-quic-ack-frequency-12 section 6.2 ("Response to Out-of-Order Packets").

    In the draft's terms: Largest Unacked is the largest ack-eliciting packet received, Largest
    Acked the largest Largest Acknowledged sent in an ACK frame, Largest Reported Missing is
    Largest Acked - threshold (the largest packet the peer could declare lost by its packet
    threshold), and the Unreported Missing packets are those not received between Largest
    Reported Missing and Largest Unacked. An ack-eliciting packet calls for an immediate ACK when
    Largest Unacked - (the smallest Unreported Missing) >= threshold (a packet the peer can now
    declare lost), or when its own number is <= Largest Acked - threshold (it arrived after the
    peer could declare it lost: the ACK lets it detect the spurious retransmission). Before any
    ACK was sent, every missing packet is unreported (the draft's examples, section 6.2.1).
    """

    def __init__(self) -> None:
        self.largest_received = -1                  # any packet, ack-eliciting or not
        self.largest_unacked: Optional[int] = None
        self.largest_acked: Optional[int] = None
        self.missing = RangeSet()                   # not received, below largest_received

    def on_packet(self, packet_number: int, ack_eliciting: bool, threshold: int) -> bool:
        """Record a received (not duplicate) packet; whether it calls for an immediate ACK under
        Reordering Threshold ``threshold`` (always False for 0 and 1, which the caller
        handles)."""
        if packet_number > self.largest_received:
            if packet_number > self.largest_received + 1:
                self.missing.add(self.largest_received + 1, packet_number)
                if len(self.missing) > MISSING_RANGES:
                    self.missing.shift()
            self.largest_received = packet_number
        else:
            self.missing.subtract(packet_number, packet_number + 1)
        if not ack_eliciting:
            return False
        if self.largest_unacked is None or packet_number > self.largest_unacked:
            self.largest_unacked = packet_number
        if threshold < 2:
            return False
        reported = None if self.largest_acked is None else self.largest_acked - threshold
        if reported is not None and packet_number <= reported:
            return True
        smallest = self.smallest_unreported_missing(reported)
        return smallest is not None and self.largest_unacked - smallest >= threshold

    def smallest_unreported_missing(self, reported: Optional[int]) -> Optional[int]:
        """The smallest packet not received above ``reported`` (Largest Reported Missing; None:
        no ACK sent yet) and below Largest Unacked, or None."""
        smallest = None
        for r in reversed(self.missing):
            if reported is not None and r.stop - 1 <= reported:
                break
            smallest = r.start if reported is None else max(r.start, reported + 1)
        if smallest is None or self.largest_unacked is None \
                or smallest >= self.largest_unacked:
            return None
        return smallest

    def on_ack_sent(self, largest_acknowledged: int) -> None:
        """An ACK frame whose Largest Acknowledged is ``largest_acknowledged`` was sent."""
        if self.largest_acked is None or largest_acknowledged > self.largest_acked:
            self.largest_acked = largest_acknowledged


class PolicyConnection(QuicConnection):
    """A QuicConnection whose 1-RTT ACKs follow an :class:`AckPolicy`, with counters.

    * ``default``: aioquic as shipped: an ACK 1 ms (K_GRANULARITY) after the first unacknowledged
      ack-eliciting packet.
    * ``ratio:N``: an ACK after N ack-eliciting packets or max_ack_delay, whichever is first, and
      at once when a packet arrives out of order or leaves a gap (RFC 9000 section 13.2.1);
      ratio:2 is RFC 9000's recommendation.
    * ``adaptive``: 1:2 for the first 100 ack-eliciting packets, then 1:10, with the delay bounded
      by min(max_ack_delay, smoothed RTT / 4) so that at least ~4 ACKs go out per RTT.
    * ``chromium``: Chromium's receiver: 1:2 for the first 100 ack-eliciting packets, then 1:10,
      the delay bounded by min(max_ack_delay, min RTT / 4).
    * ``picoquic``: picoquic's rule as the ACK 1:10 talk gives it: 1:10 while the data arrives
      above 16 Mbit/s over an RTT above 100 ms, 1:4 above 16 Mbit/s over a shorter one, 1:2
      otherwise; the rate is what arrived over the last smoothed RTT (at least 10 ms), the delay
      bounded by max_ack_delay.
    * ``quicly:N``: quicly's: an ACK every N ack-eliciting packets (its NUM_PACKETS_BEFORE_ACK)
      or after its 25 ms delayed-ACK timeout (max_ack_delay if smaller).
    * ``ack-frequency:N``: draft-ietf-quic-ack-frequency. Both sides advertise min_ack_delay. A
      server whose peer advertised it sends one ACK_FREQUENCY frame after the handshake asking
      for an ACK every N ack-eliciting packets (threshold N - 1), its own max_ack_delay, and
      reordering threshold 1; a client honours the frame (until then it acts as ratio:2).
      The frame's Reordering Threshold R is honoured as draft-ietf-quic-ack-frequency-12
      section 6.2 says: 0, out-of-order packets never make an ACK immediate; 1, RFC 9000's rule
      (as the ratio policies); R > 1, :class:`ReorderingState`'s test, per 1-RTT packet.
    * ``neqo[:R]``: neqo's sender rule (neqo-transport, ``ackrate.rs``), on ack-frequency's
      frames: the server asks for an ACK every P = clamp(cwnd x 10 / MTU / R, 2, 256)
      ack-eliciting packets and a max_ack_delay of clamp(SRTT x 10 / R, the peer's
      min_ack_delay, 50 ms), reordering threshold 1. R is neqo's ack_ratio (ACKs per round
      trip x 10; 40, its default, unless given). The target is set when the peer's transport
      parameters arrive (SRTT is then the initial RTT) and again whenever a congestion event
      shrinks the window, never as it grows. A frame goes out only when the target's P differs
      from the last one acknowledged, or its delay by more than a quarter; one at a time, and a
      lost one is replaced by the target then in force. Until a frame is acknowledged the peer
      is taken to ACK every 2 packets within its max_ack_delay. MTU is this endpoint's
      max_datagram_size (neqo: its path MTU). The client acts as ``ack-frequency:N``'s.

    Options (:class:`AckPolicy`):

    * ``+reorder`` (ratio:N, adaptive, chromium, picoquic, quicly:N): the ACK scaling rule the
      QUIC drafts had before RFC 9000 (draft-ietf-quic-recovery's "Generating
      Acknowledgements", 2019: "return to acknowledging every other packet after a period of
      1/8 x RTT, unless more ACK-eliciting packets are received out of order"; also
      draft-iyengar-quic-delayed-ack-00, "Expediting Loss and Congestion Signals"): a packet out
      of order or beyond a gap is ACKed at once (as without the option), and so is every
      ack-eliciting packet that arrives within SRTT/8 of the last such packet; then the
      policy's own rule again. SRTT is this receiver's smoothed RTT, or, before its first RTT
      sample, the configured initial RTT (aioquic's initial_rtt, 100 ms unless set), as
      recovery uses.
    * ``+reordering:R`` (ack-frequency:N): the server's ACK_FREQUENCY frame asks for Reordering
      Threshold R instead of 1.
    * ``+immediate-ack`` (ack-frequency:N): once its ACK_FREQUENCY frame is out, the server
      puts an IMMEDIATE_ACK frame in an ack-eliciting 1-RTT packet whenever the previous one was
      acknowledged or declared lost, and in every probe: one per round trip while it sends, so
      the peer ACKs at least once per RTT whatever N and max_ack_delay. That is the drafts'
      "sending an IMMEDIATE_ACK frame once each round trip time" (draft-ietf-quic-ack-frequency
      -07 section 8.1; -12 words it "if no acknowledgement has been received for more than one
      round trip time", which a sender held by its congestion window, sending as ACKs arrive,
      never meets) and -12 section 7's IMMEDIATE_ACK in probes, which quinn 0.11 sends (with
      MTU probes and PATH_CHALLENGE responses; it has no per-RTT rule).

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
        self._af_sent = False                       # our ACK_FREQUENCY frame went out
        self._reordering = ReorderingState()        # ack-frequency: per 1-RTT packet number
        self._rx_numbers: list[tuple[int, bool]] = []   # (number, ack-eliciting) this datagram
        self._rx_eliciting = False
        self._numbers_hooked = False
        self._reorder_until: Optional[float] = None     # +reorder: ACK at once until then
        self._immediate_ack_outstanding = False     # ours, neither acknowledged nor lost
        # neqo: (packets per ACK, delay in us) acknowledged by the peer and wanted; a frame out
        self._neqo_current: Optional[tuple[int, int]] = None
        self._neqo_target: Optional[tuple[int, int]] = None
        self._neqo_min_us = 0
        self._af_outstanding = False
        self._af_seq = 0
        if self.policy.asks_peer:
            handlers = self._QuicConnection__frame_handlers
            handlers[FRAME_ACK_FREQUENCY] = (self._handle_ack_frequency_frame,
                                             frozenset([Epoch.ONE_RTT]))
            # Once min_ack_delay is advertised, the peer may send IMMEDIATE_ACK (quinn does,
            # in every 1-RTT probe); aioquic would close on it as an unknown frame.
            handlers[FRAME_IMMEDIATE_ACK] = (self._handle_immediate_ack_frame,
                                             frozenset([Epoch.ONE_RTT]))
        self._immediate_ack = False
        self._arrivals: deque[tuple[float, int]] = deque()  # picoquic: (time, bytes) received
        loss_on_packet_sent = self._loss.on_packet_sent

        def on_packet_sent(*, packet: QuicSentPacket, space: Any) -> None:
            self._sent_packets.append(packet)
            loss_on_packet_sent(packet=packet, space=space)

        self._loss.on_packet_sent = on_packet_sent
        self._count_handshake_losses()
        if getattr(configuration, "initial_window", None) is not None:
            self._set_initial_window(configuration.initial_window
                                     * configuration.max_datagram_size)

    def _set_initial_window(self, window: int) -> None:
        """Start the congestion controller at ``window`` bytes, and restart it there (cubic
        restarts after an idle period at aioquic's K_INITIAL_WINDOW packets)."""
        cc = self._loss._cc
        cc.congestion_window = window
        if hasattr(cc, "_W_max"):
            cc._W_max = window
        reset = getattr(cc, "reset", None)
        if reset is not None:
            def reset_to_window() -> None:
                reset()
                cc.congestion_window = cc._W_max = window
            cc.reset = reset_to_window

    def _count_handshake_losses(self) -> None:
        """Count what recovery declares lost until the handshake is confirmed; neqo: retarget
        when a congestion event shrinks the window."""
        loss = self._loss
        on_packets_lost = loss._on_packets_lost
        on_timeout = loss.on_loss_detection_timeout

        def counted(*, congestion_event: bool = True, now: float, packets: Any,
                    persistent_congestion: bool = False, space: Any) -> None:
            packets = list(packets)
            if packets and not loss.handshake_confirmed:
                if congestion_event:
                    self.stats.handshake_lost_packets += len(packets)
                    if any(p.in_flight for p in packets):
                        self.stats.handshake_congestion_events += 1
                else:
                    self.stats.handshake_pto_resent += len(packets)
            window = loss.congestion_window
            on_packets_lost(congestion_event=congestion_event, now=now, packets=packets,
                            persistent_congestion=persistent_congestion, space=space)
            if self._neqo_target is not None and loss.congestion_window < window:
                self._neqo_retarget()

        def timeout(*, now: float) -> None:
            if not loss.handshake_confirmed and loss._get_loss_space() is None:
                self.stats.handshake_ptos += 1
            on_timeout(now=now)

        loss._on_packets_lost = counted
        loss.on_loss_detection_timeout = timeout

    def _confirm_handshake(self) -> None:
        super()._confirm_handshake()
        self.stats.cwnd_at_confirmation = self._loss.congestion_window

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
        self._rx_numbers = []
        super().receive_datagram(data, addr, now)
        eliciting = sum(1 for epoch, is_eliciting in self._rx_packets
                        if is_eliciting and epoch in _ONE_RTT_EPOCHS)
        self._rx_packets = []
        threshold_due = False
        for number, is_eliciting in self._rx_numbers:        # ack-frequency only
            threshold_due |= self._reordering.on_packet(number, is_eliciting, self._af_reordering)
        self._rx_numbers = []
        if eliciting:
            if self.policy.kind == "picoquic":
                self._arrivals.append((now, len(data)))
            self._apply_policy(now, eliciting, ack_at_before, largest_before, threshold_due)
        if self._immediate_ack:
            self._immediate_ack = False
            space = self._spaces.get(Epoch.ONE_RTT)
            if space is not None and not space.discarded:
                space.ack_at = now

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
        # aioquic writes 1-RTT ACKs only with 1-RTT keys, within the anti-amplification limit;
        # one due before the handshake completed and left unwritten would keep the timer at
        # "now" and a virtual-time driver spinning: retry in 1 ms.
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
                                            for p, ack in zip(mine, has_ack)),
                sent=tuple(mine)))
        if index != len(packets):
            raise RuntimeError("datagrams and sent packets do not line up: aioquic changed")
        return infos

    def _payload_received(self, context: Any, plain: bytes,
                          crypto_frame_required: bool = False) -> tuple[bool, bool]:
        is_ack_eliciting, is_probing = super()._payload_received(
            context, plain, crypto_frame_required=crypto_frame_required)
        self._rx_packets.append((context.epoch, is_ack_eliciting))
        if context.epoch in _ONE_RTT_EPOCHS and self.policy.asks_peer:
            self._rx_eliciting = is_ack_eliciting
            if not self._numbers_hooked:
                self._hook_packet_numbers(self._spaces[Epoch.ONE_RTT])
        return is_ack_eliciting, is_probing

    def _hook_packet_numbers(self, space: Any) -> None:
        """Learn the number of each 1-RTT packet kept: aioquic adds it to received_packets right
        after _payload_received, which left its ack-eliciting flag in _rx_eliciting."""
        window = space.received_packets
        add = window.add

        def add_and_note(packet_number: int) -> None:
            self._rx_numbers.append((packet_number, self._rx_eliciting))
            add(packet_number)

        window.add = add_and_note
        self._numbers_hooked = True

    def _write_ack_frame(self, builder: QuicPacketBuilder, space: Any, now: float) -> None:
        super()._write_ack_frame(builder=builder, space=space, now=now)
        if space is self._spaces.get(Epoch.ONE_RTT):
            self._unacked_eliciting = 0
            self.stats.ack_frames_sent += 1
            if len(space.ack_queue):
                self._reordering.on_ack_sent(space.ack_queue.bounds().stop - 1)

    # ---- the policies ------------------------------------------------------------------------

    def _packets_per_ack(self) -> int:
        kind = self.policy.kind
        if kind in ("ratio", "quicly"):
            return self.policy.n
        if kind in ("adaptive", "chromium"):
            return 2 if self.stats.ack_eliciting_received <= ADAPTIVE_STARTUP_PACKETS else 10
        if kind == "picoquic":
            return self._picoquic_ratio()
        return self._af_threshold if self._af_threshold is not None else 2   # ack-frequency

    def _picoquic_ratio(self) -> int:
        """1:10, 1:4 or 1:2 by the rate the data arrived at over the last smoothed RTT."""
        if not self._arrivals or not self._loss._rtt_initialized:
            return 2
        rtt = self._loss._rtt_smoothed
        window = max(rtt, 0.010)
        now = self._arrivals[-1][0]
        while self._arrivals[0][0] < now - window:
            self._arrivals.popleft()
        rate = sum(n for _t, n in self._arrivals) * 8 / window
        if rate <= PICOQUIC_RATE:
            return 2
        return 10 if rtt > PICOQUIC_LONG_RTT else 4

    def _ack_delay_bound(self) -> float:
        if self.policy.kind == "adaptive" and self._loss._rtt_initialized:
            return max(K_GRANULARITY, min(self.max_ack_delay, self._loss._rtt_smoothed / 4))
        if self.policy.kind == "chromium" and self._loss._rtt_initialized:
            return max(K_GRANULARITY, min(self.max_ack_delay, self._loss._rtt_min / 4))
        if self.policy.kind == "quicly":
            return min(QUICLY_ACK_DELAY, self.max_ack_delay)
        if self.policy.asks_peer and self._af_max_ack_delay is not None:
            return self._af_max_ack_delay
        return self.max_ack_delay

    def _reorder_window(self) -> float:
        """+reorder: how long every packet is ACKed at once after reordering (SRTT / 8)."""
        loss = self._loss
        return (loss._rtt_smoothed if loss._rtt_initialized else loss._rtt_initial) / 8

    def _apply_policy(self, now: float, eliciting: int, ack_at_before: Optional[float],
                      largest_before: int, threshold_due: bool = False) -> None:
        """Pace the ACK for a datagram that brought ``eliciting`` ack-eliciting 1-RTT packets;
        ``threshold_due``: one of them calls for an immediate ACK under the peer's Reordering
        Threshold above 1 (:class:`ReorderingState`)."""
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
        if not self.policy.asks_peer or self._af_reordering == 1:
            reordering_ack = out_of_order               # RFC 9000 section 13.2.1
        else:                                           # the draft's section 6.2: 0 or above 1
            reordering_ack = self._af_reordering > 1 and threshold_due
            if out_of_order and not reordering_ack:
                self.stats.reordering_tolerated += 1
        if reordering_ack:
            space.ack_at = now
            self.stats.immediate_acks += 1
            if self.policy.reorder:
                self._reorder_until = now + self._reorder_window()
        elif self._reorder_until is not None and now < self._reorder_until:
            space.ack_at = now                          # +reorder: within SRTT/8 of reordering
            self.stats.reorder_window_acks += 1
        elif self._unacked_eliciting >= self._packets_per_ack():
            space.ack_at = now
        elif ack_at_before is None and space.ack_at is not None:
            space.ack_at = now + self._ack_delay_bound()     # aioquic armed its 1 ms: re-arm

    # ---- transport parameters (max_ack_delay, min_ack_delay) ---------------------------------

    def _serialize_transport_parameters(self) -> bytes:
        data = super()._serialize_transport_parameters()
        advertised_ms = math.ceil(self.max_ack_delay * 1000 - 1e-9)
        out, found = [], False
        for param_id, value in tlv_items(data):
            if param_id == TP_MAX_ACK_DELAY:
                value, found = _varint(advertised_ms), True
            out.append((param_id, value))
        if not found:
            raise RuntimeError("aioquic no longer sends max_ack_delay")
        if self.policy.asks_peer:
            out.append((TP_MIN_ACK_DELAY, _varint(round(self.min_ack_delay * 1e6))))
        if isinstance(self._quic_logger, VirtualTimeTrace):         # aioquic logged 25 ms
            event = self._quic_logger._events[-1]
            if event["name"] == "transport:parameters_set":
                event["data"]["max_ack_delay"] = advertised_ms
                if self.policy.asks_peer:
                    event["data"]["min_ack_delay"] = round(self.min_ack_delay * 1e6)
        return b"".join(_varint(pid) + _varint(len(value)) + value for pid, value in out)

    def _parse_transport_parameters(self, data: bytes, from_session_ticket: bool = False) -> None:
        super()._parse_transport_parameters(data, from_session_ticket=from_session_ticket)
        items = dict(tlv_items(data))
        if TP_MIN_ACK_DELAY not in items or not self.policy.asks_peer:
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
        if self._is_client or from_session_ticket:
            return
        if self.policy.kind == "neqo":
            self._neqo_current = (NEQO_PACKETS[0], max_ms * 1000)
            self._neqo_min_us = min_us
            self._neqo_retarget()
        else:
            self._af_pending = True

    # ---- ACK_FREQUENCY frames ------------------------------------------------------------------

    def _ack_frequency_request(self) -> tuple[int, int, int, int]:
        """(sequence number, ack-eliciting threshold, request max ack delay in us, reordering)."""
        if self.policy.kind == "neqo":
            assert self._neqo_target is not None
            packets, delay_us = self._neqo_target
            return self._af_seq, packets - 1, delay_us, 1
        delay_us = max(round(self.max_ack_delay * 1e6),
                       round((self.peer_min_ack_delay or 0) * 1e6))
        return 0, self.policy.n - 1, delay_us, self.policy.reordering

    def neqo_target(self, cwnd: int, mtu: int, srtt: float) -> tuple[int, int]:
        """neqo's (packets per ACK, max ack delay in us) for a window, MTU and smoothed RTT."""
        ratio = self.policy.n
        packets = min(max(cwnd * NEQO_RATIO_SCALE // mtu // ratio, NEQO_PACKETS[0]),
                      NEQO_PACKETS[1])
        delay_us = round(srtt * 1e6) * NEQO_RATIO_SCALE // ratio
        return packets, max(self._neqo_min_us, min(delay_us, round(NEQO_MAX_DELAY * 1e6)))

    def _neqo_retarget(self) -> None:
        """A new target from the window and SRTT now; a frame is due if it differs enough
        from the one the peer acknowledged (neqo's AckRate::needs_update)."""
        loss = self._loss
        srtt = loss._rtt_smoothed if loss._rtt_initialized else loss._rtt_initial
        self._neqo_target = self.neqo_target(loss.congestion_window, self._max_datagram_size,
                                             srtt)
        self._neqo_pending()

    def _neqo_pending(self) -> None:
        current, target = self._neqo_current, self._neqo_target
        assert current is not None and target is not None
        self._loss.max_ack_delay = max(current[1], target[1]) / 1e6   # neqo's peer_ack_delay
        delta = target[1] // 4
        self._af_pending = not self._af_outstanding and (
            current[0] != target[0] or target[1] + delta < current[1]
            or target[1] > current[1] + delta)

    def _write_connection_limits(self, builder: QuicPacketBuilder, space: Any) -> None:
        super()._write_connection_limits(builder=builder, space=space)
        if self._af_pending:
            seq, threshold, delay_us, reordering = self._ack_frequency_request()
            buf = builder.start_frame(FRAME_ACK_FREQUENCY, capacity=ACK_FREQUENCY_CAPACITY,
                                      handler=self._on_ack_frequency_delivery,
                                      handler_args=((threshold + 1, delay_us),))
            for value in (seq, threshold, delay_us, reordering):
                buf.push_uint_var(value)
            self._af_pending = False
            self._af_outstanding = True
            self._af_seq += 1
            self._af_sent = True
            self.stats.ack_frequency_sent += 1
            if self._quic_logger is not None:
                builder.quic_logger_frames.append({
                    "frame_type": "ack_frequency", "sequence_number": seq,
                    "ack_eliciting_threshold": threshold, "request_max_ack_delay": delay_us,
                    "reordering_threshold": reordering})
        if self._immediate_ack_due(builder):
            # never retransmitted (section 5); its fate only allows the next one
            builder.start_frame(FRAME_IMMEDIATE_ACK, handler=self._on_immediate_ack_delivery)
            self._immediate_ack_outstanding = True
            self.stats.immediate_ack_sent += 1
            if self._quic_logger is not None:
                builder.quic_logger_frames.append({"frame_type": "immediate_ack"})

    def _immediate_ack_due(self, builder: QuicPacketBuilder) -> bool:
        """+immediate-ack: whether this 1-RTT packet gets an IMMEDIATE_ACK: a probe does, and
        so does one with other ack-eliciting frames to carry while no earlier IMMEDIATE_ACK is
        outstanding (see the class docstring)."""
        if not (self.policy.immediate_ack and self._af_sent) or min(
                builder.remaining_buffer_space, builder.remaining_flight_space) \
                < IMMEDIATE_ACK_ROOM:
            return False
        if self._probe_pending:
            return True
        return not self._immediate_ack_outstanding and (bool(self._ping_pending) or any(
            stream.sender.reset_pending
            or (not stream.is_blocked and not stream.sender.buffer_is_empty)
            for stream in self._streams.values()))

    def _on_immediate_ack_delivery(self, delivery: QuicDeliveryState) -> None:
        self._immediate_ack_outstanding = False          # acknowledged or lost: send another

    def _on_ack_frequency_delivery(self, delivery: QuicDeliveryState,
                                   asked: tuple[int, int]) -> None:
        """``asked``: (packets per ACK, max ack delay in us) of the frame."""
        self._af_outstanding = False
        if self.policy.kind == "neqo":
            if delivery == QuicDeliveryState.ACKED:
                self._neqo_current = asked
            self._neqo_pending()                # a lost frame: the target now, if still due
        elif delivery == QuicDeliveryState.ACKED:
            self._loss.max_ack_delay = asked[1] / 1e6    # the peer now delays ACKs this long
        else:
            self._af_pending = True

    def _handle_immediate_ack_frame(self, context: Any, frame_type: int, buf: Buffer) -> None:
        """IMMEDIATE_ACK (no fields): the packet that carries it is acknowledged at once."""
        if context.quic_logger_frames is not None:
            context.quic_logger_frames.append({"frame_type": "immediate_ack"})
        self._immediate_ack = True
        self.stats.immediate_ack_received += 1

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
        self._af_reordering = reordering      # _apply_policy: 0, 1 or above (section 6.2)
        self.stats.ack_frequency_received += 1
