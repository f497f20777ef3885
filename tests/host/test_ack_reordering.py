# SPDX-License-Identifier: BSD-2-Clause
"""Reordering and ACK_FREQUENCY in aioquic's receiver: thresholds, +reorder and IMMEDIATE_ACK."""

# The scripted tests capture a burst of the server's 1-RTT data packets and hand them to the
# client in a chosen order, a packet at a time, noting which arrivals the client ACKed at once.
# Packet numbers below are relative: r is the r-th captured packet after the prefix, which is
# delivered in order and ACKed by the client's delayed-ACK timer (Largest Acked = -1).

import heapq
import inspect

import pytest
from aioquic.quic.connection import QuicConnection
from aioquic.quic.rangeset import RangeSet
from ideal_link import IdealLink

from satemu.quic.ackpolicy import (FRAME_IMMEDIATE_ACK, AckPolicy, PolicyConnection,
                                   ReorderingState)
from satemu.quic.bulk import BulkClient, BulkServer, make_configs
from satemu.quic.determinism import deterministic
from satemu.quic.settings import VARINT_MAX

PREFIX = 4              # captured packets delivered in order first (HANDSHAKE_DONE, the frame)


class Scripted:
    """An aioquic client and server (BulkClient, BulkServer) 20 ms apart in virtual time, until
    the server has sent ``count`` datagrams after answering the request; those are captured,
    not delivered, for :meth:`deliver` to hand to the client in any order."""

    def __init__(self, client_policy, server_policy="default", count=PREFIX + 40, **settings):
        client_cfg, server_cfg = make_configs(initial_window=200, **settings)
        self.client = BulkClient(client_cfg, 4_000_000, policy=client_policy)
        self.server = BulkServer(server_cfg, policy=server_policy)
        self.peers = {"client": self.client, "server": self.server}
        self.heap, self.seq, self.gen = [], 0, {"client": 0, "server": 0}
        self.captured, self.timer_acks = [], 0
        self.client.start(0.0)
        self._send("client", 0.0)
        while len(self.captured) < count:
            t, _, event = heapq.heappop(self.heap)
            if event[0] == "arrive":
                self.peers[event[1]].receive(event[2], t)
                self._send(event[1], t)
            elif event[2] == self.gen[event[1]]:
                self.peers[event[1]].handle_timer(t)
                self._send(event[1], t)
        self.now = t
        for data in self.captured[PREFIX:]:
            assert not data[0] & 0x80, "a scripted datagram holds one 1-RTT packet"
        self.deliver(range(-PREFIX, 0), spacing=0.0005)
        self.idle(0.100)
        assert self.timer_acks == 1, "the prefix is ACKed by the delayed-ACK timer"
        self.timer_acks = 0

    def _send(self, name, now):
        peer = self.peers[name]
        for data, _info in peer.transmit(now):
            if name == "server" and self.server.served:
                self.captured.append(data)
            else:
                other = "server" if name == "client" else "client"
                heapq.heappush(self.heap, (now + 0.020, self.seq, ("arrive", other, data)))
                self.seq += 1
        self.gen[name] += 1
        timer = peer.timer(now)
        if timer is not None:
            heapq.heappush(self.heap, (timer, self.seq, ("timer", name, self.gen[name])))
            self.seq += 1

    def _client_timers(self, until):
        """Run the client's timers due before ``until``, counting the ACKs they send."""
        conn = self.client.conn
        while (timer := self.client.timer(self.now)) is not None and timer < until:
            before = conn.stats.ack_frames_sent
            self.client.handle_timer(timer)
            self.client.transmit(timer)
            self.timer_acks += conn.stats.ack_frames_sent > before
            self.now = timer

    def idle(self, seconds):
        self._client_timers(self.now + seconds)
        self.now += seconds

    def deliver(self, order, spacing):
        """Hand captured packets ``order`` (relative numbers) to the client ``spacing`` s apart;
        the set of those it ACKed at once."""
        conn, acked = self.client.conn, set()
        for r in order:
            t = self.now + spacing
            self._client_timers(t)
            before = conn.stats.ack_frames_sent
            self.client.receive(self.captured[PREFIX + r], t)
            self.client.transmit(t)
            if conn.stats.ack_frames_sent > before:
                acked.add(r)
            self.now = t
        return acked


# Gaps of 1, 2 and 3 packets, and a packet late by less than threshold 3: A) 1 arrives right
# after 2; B) 5 after 6, 7, 8; C) 10, 11 after 12 .. 15; D) 17, 18, 19 after 20 .. 24.
REORDERED = [0, 2, 1, 3,
             4, 6, 7, 8, 5,
             9, 12, 13, 14, 15, 10, 11,
             16, 20, 21, 22, 23, 24, 17, 18, 19,
             25, 26]
OUT_OF_ORDER = {2, 1, 6, 5, 12, 10, 11, 20, 17, 18, 19}       # RFC 9000 section 13.2.1
# draft-ietf-quic-ack-frequency-12 section 6.2, threshold 3: 8, 13, 14, 20, 21, 22 make a
# missing packet 3 below the largest (the peer can declare it lost); 5, 10, 11, 17, 18, 19
# arrive at or below Largest Acked - 3; 1 arrives while still within the threshold.
THRESHOLD_3 = {8, 5, 13, 14, 10, 11, 20, 21, 22, 17, 18, 19}


@pytest.mark.parametrize("reordering, expected", [(0, set()), (1, OUT_OF_ORDER),
                                                  (3, THRESHOLD_3)])
def test_reordering_threshold_decides_immediate_acks(reordering, expected):
    with deterministic(0):
        run = Scripted("ack-frequency:1000",
                       f"ack-frequency:1000+reordering:{reordering}")
        stats = run.client.conn.stats
        assert run.client.conn._af_reordering == reordering
        assert run.client.conn._af_threshold == 1000
        immediate, tolerated = stats.immediate_acks, stats.reordering_tolerated
        assert run.deliver(REORDERED, spacing=0.0005) == expected
    assert run.timer_acks == 0
    assert stats.immediate_acks - immediate == len(expected)
    assert stats.reordering_tolerated - tolerated == \
        (0 if reordering == 1 else len(OUT_OF_ORDER - expected))


def test_ratio_policies_ack_every_reordering():
    """Without ACK_FREQUENCY, RFC 9000's rule: every gap and every late packet, as before."""
    with deterministic(0):
        run = Scripted("ratio:1000")
        assert run.deliver(REORDERED, spacing=0.0005) == OUT_OF_ORDER


def test_reorder_window_acks_every_packet_for_an_eighth_of_the_rtt():
    """ratio:10+reorder: a gap (12) and a late packet (11) are ACKed at once, and so is every
    packet within SRTT/8 after them (spacing SRTT/8 / 3.5: three packets); between them and
    after, ratio:10 again (an ACK at the 10th packet)."""
    order = list(range(11)) + [12, 13, 14, 15] + list(range(16, 23)) + [11] + \
        list(range(23, 40))
    results = {}
    for policy in ("ratio:10", "ratio:10+reorder"):
        with deterministic(0):
            run = Scripted(policy)
            conn = run.client.conn
            window = conn._loss._rtt_smoothed / 8
            assert window == conn._reorder_window() and 0.004 < window < 0.010
            immediate = conn.stats.immediate_acks
            results[policy] = run.deliver(order, spacing=window / 3.5)
        assert run.timer_acks == 0
        assert conn.stats.immediate_acks - immediate == 2
        assert conn.stats.reorder_window_acks == (6 if policy.endswith("+reorder") else 0)
    assert results["ratio:10"] == {9, 12, 22, 11, 32}
    assert results["ratio:10+reorder"] == {9, 12, 13, 14, 15, 11, 23, 24, 25, 35}


def test_reorder_window_before_an_rtt_sample():
    client_cfg, _ = make_configs(initial_rtt_ms=200)
    conn = PolicyConnection(client_cfg, policy="adaptive+reorder")
    assert not conn._loss._rtt_initialized
    assert conn._reorder_window() == pytest.approx(0.200 / 8)


# ---- the draft's own examples, on ReorderingState --------------------------------------------

def replay(threshold, numbers, eliciting=None):
    """Feed ``numbers`` in order; an ACK (of the largest received) whenever one is due."""
    state, acks = ReorderingState(), []
    for pn in numbers:
        due = state.on_packet(pn, True if eliciting is None else pn in eliciting, threshold)
        acks.append(due)
        if due:
            state.on_ack_sent(state.largest_received)
    return acks


def test_draft_examples():
    """draft-ietf-quic-ack-frequency-12 section 6.2.1, tables 1 and 2 (ACKs sent only for
    reordering)."""
    assert replay(3, [0, 1, 3, 4, 5, 8, 9, 10]) == [False] * 4 + [True, False, True, True]
    assert replay(5, [0, 1, 3, 5, 6, 7, 8, 9]) == [False] * 5 + [True, False, True]


def test_reordering_state_rules():
    # a packet late beyond the threshold: the peer may have declared it lost
    assert replay(3, [0, 1, 3, 4, 5, 2]) == [False] * 4 + [True, True]
    # late within the threshold: no immediate ACK
    assert replay(3, [0, 2, 1, 3]) == [False] * 4
    # 0 and 1 are the caller's: ReorderingState never asks for them
    assert replay(0, [0, 5, 9, 1]) == replay(1, [0, 5, 9, 1]) == [False] * 4
    # only an ack-eliciting packet calls for an ACK; a non-eliciting one still fills a gap
    assert replay(3, [0, 2, 3, 4, 1], eliciting={0, 2, 3}) == [False] * 5
    state = ReorderingState()
    for pn in (0, 2, 3, 4):
        state.on_packet(pn, pn != 4, 3)
    assert state.largest_unacked == 3 and state.largest_received == 4
    assert state.smallest_unreported_missing(None) == 1
    state.on_ack_sent(4)
    assert state.smallest_unreported_missing(4 - 3) is None   # 1 is reported now
    state.on_ack_sent(2)
    assert state.largest_acked == 4                           # never goes back


def test_reordering_state_bounds_its_gaps():
    state = ReorderingState()
    for pn in range(0, 4000, 2):                              # a gap before every packet
        state.on_packet(pn, True, 2)
    assert len(state.missing) == 256
    assert list(state.missing)[-1] == range(3997, 3998)


# ---- IMMEDIATE_ACK ---------------------------------------------------------------------------

def transfer(policy, server_policy, size=200_000, **kwargs):
    config_args = {k: kwargs.pop(k) for k in ("max_ack_delay_ms", "qlog", "initial_rtt_ms")
                   if k in kwargs}
    client_config, server_config = make_configs(**config_args)
    with deterministic(0):
        link = IdealLink(BulkClient(client_config, size, policy=policy),
                         BulkServer(server_config, policy=server_policy), **kwargs)
        link.run()
    assert link.client.received == size and link.server.served == {0: size}
    return link


def qlog_events(peer, name):
    (trace,) = peer.conn.configuration.quic_logger._traces
    return [e for e in trace.to_dict()["events"] if e["name"] == name]


def frame_times(peer, event, frame_type):
    return [e["time"] / 1000 for e in qlog_events(peer, event)
            if any(f["frame_type"] == frame_type for f in e["data"]["frames"])]


def test_immediate_ack_once_per_rtt_and_honoured():
    """The server asks for 1:1000 within 200 ms: the client ACKs by its timer. With
    +immediate-ack the server puts IMMEDIATE_ACK in a data packet each time the previous one was
    acknowledged, once per round trip; the client ACKs each at once, and the server's ACK clock
    no longer stops for max_ack_delay."""
    plain = transfer("ack-frequency:1000", "ack-frequency:1000", max_ack_delay_ms=200,
                     qlog=True)
    link = transfer("ack-frequency:1000+immediate-ack", "ack-frequency:1000+immediate-ack",
                    max_ack_delay_ms=200, qlog=True)
    client, server = link.client, link.server
    sent = frame_times(server, "transport:packet_sent", "immediate_ack")
    assert len(sent) == server.conn.stats.immediate_ack_sent >= 3
    assert client.conn.stats.immediate_ack_received == len(sent)
    assert client.conn.stats.immediate_ack_sent == 0          # the client asks for nothing
    assert plain.server.conn.stats.immediate_ack_sent == 0
    # one per round trip: the next goes out once the ACK of the last came back
    acks_in = frame_times(server, "transport:packet_received", "ack")
    for a, b in zip(sent, sent[1:]):
        assert b - a >= 0.040 and any(a + 0.040 <= t <= b for t in acks_in)
    # honoured: the client sends an ACK at the instant each one arrives
    got = frame_times(client, "transport:packet_received", "immediate_ack")
    acks_out = set(frame_times(client, "transport:packet_sent", "ack"))
    assert len(got) == len(sent) and all(t in acks_out for t in got)

    def longest_silence(run):
        times = frame_times(run.server, "transport:packet_received", "ack")
        times = [t for t in times if t >= run.client.first_byte_at - 0.020]
        return max(b - a for a, b in zip(times, times[1:]))

    assert longest_silence(link) < 0.150 < 0.190 < longest_silence(plain)


def test_immediate_ack_only_to_a_peer_that_takes_it():
    # ratio:2 advertises no min_ack_delay: no ACK_FREQUENCY, so no IMMEDIATE_ACK either
    link = transfer("ratio:2", "ack-frequency:10+immediate-ack", size=100_000)
    assert link.server.conn.stats.ack_frequency_sent == 0
    assert link.server.conn.stats.immediate_ack_sent == 0


# ---- whole transfers with the options ---------------------------------------------------------

HOLD = {("server", 40): 0.004, ("server", 60): 0.003, ("server", 61): 0.003}


@pytest.mark.parametrize("policy", ["ratio:10+reorder", "adaptive+reorder", "chromium+reorder",
                                    "ack-frequency:10+reordering:3+immediate-ack",
                                    "ack-frequency:10+reordering:0"])
def test_transfers_complete(policy):
    parsed = AckPolicy.parse(policy)
    server = policy if parsed.kind == "ack-frequency" else "default"
    link = transfer(policy, server, size=150_000, hold=HOLD, drop={("server", 50)})
    stats, sent = link.client.conn.stats, link.server.conn.stats
    if parsed.reorder:
        assert stats.immediate_acks >= 3 and stats.reorder_window_acks >= 3
    else:
        assert link.client.conn._af_reordering == parsed.reordering
        assert stats.reordering_tolerated >= 1 and stats.reorder_window_acks == 0
        assert (stats.immediate_acks == 0) == (parsed.reordering == 0)
    assert sent.immediate_ack_sent == stats.immediate_ack_received
    assert (sent.immediate_ack_sent >= 1) == parsed.immediate_ack


# ---- parsing ---------------------------------------------------------------------------------

def test_new_spellings_round_trip():
    for text in ("ratio:10+reorder", "adaptive+reorder", "chromium+reorder", "picoquic+reorder",
                 "quicly:4+reorder", "ack-frequency:10+reordering:3",
                 "ack-frequency:10+reordering:0+immediate-ack", "ack-frequency:2+immediate-ack",
                 f"ack-frequency:1+reordering:{VARINT_MAX}"):
        policy = AckPolicy.parse(text)
        assert str(policy) == text and AckPolicy.parse(str(policy)) == policy
    assert AckPolicy.parse(" Ratio:10 + Reorder ") == AckPolicy("ratio", 10, reorder=True)
    assert str(AckPolicy.parse("ack-frequency:10+immediate-ack+reordering:03")) == \
        "ack-frequency:10+reordering:3+immediate-ack"
    assert AckPolicy.parse("ack-frequency:4+reordering:1") == AckPolicy.parse("ack-frequency:4")
    assert str(AckPolicy("ack-frequency", 4, reordering=1)) == "ack-frequency:4"
    assert AckPolicy.parse(AckPolicy("ratio", 3, reorder=True)) == AckPolicy("ratio", 3, True)


REORDER_ONLY = ("+reorder goes with ratio:N, adaptive, chromium, picoquic or quicly:N (a "
                "receiver's own rule); ack-frequency:N follows its peer's Reordering Threshold")
SENDER_ONLY = ("+reordering:R and +immediate-ack go with ack-frequency:N only (they are "
               "ACK_FREQUENCY's sender side)")
R_RANGE = f"+reordering:R takes R in 0 .. {VARINT_MAX} (2^62 - 1)"
OPTIONS = "expected +reorder, +reordering:R or +immediate-ack"


@pytest.mark.parametrize("text, message", [
    ("default+reorder", f"ACK policy 'default+reorder': {REORDER_ONLY}"),
    ("ack-frequency:10+reorder", f"ACK policy 'ack-frequency:10+reorder': {REORDER_ONLY}"),
    ("ratio:2+immediate-ack", f"ACK policy 'ratio:2+immediate-ack': {SENDER_ONLY}"),
    ("chromium+reordering:3", f"ACK policy 'chromium+reordering:3': {SENDER_ONLY}"),
    ("ratio:2+reorder+reorder", "ACK policy 'ratio:2+reorder+reorder': +reorder given twice"),
    ("ratio:2+fast", f"ACK policy 'ratio:2+fast': unknown option '+fast'; {OPTIONS}"),
    ("ratio:2+reorder:4", f"ACK policy 'ratio:2+reorder:4': unknown option '+reorder:4'; "
                          f"{OPTIONS}"),
    ("ratio:2+", f"ACK policy 'ratio:2+': unknown option '+'; {OPTIONS}"),
    ("ack-frequency:10+reordering", f"ACK policy 'ack-frequency:10+reordering': {R_RANGE}"),
    ("ack-frequency:10+reordering:-1", f"ACK policy 'ack-frequency:10+reordering:-1': "
                                       f"{R_RANGE}"),
    (f"ack-frequency:10+reordering:{VARINT_MAX + 1}",
     f"ACK policy 'ack-frequency:10+reordering:{VARINT_MAX + 1}': {R_RANGE}"),
    ("ratio:0+reorder", "unknown ACK policy 'ratio:0+reorder': expected default, ratio:N, "
                        "adaptive, ack-frequency:N, chromium, picoquic or quicly:N with N in "
                        "1 .. 4611686018427387904 (2^62), or neqo[:R] with R in 10 .. 255"),
])
def test_bad_spellings_are_refused_in_one_line(text, message):
    with pytest.raises(ValueError) as info:
        AckPolicy.parse(text)
    assert str(info.value) == message and "\n" not in message


def test_bad_fields_are_refused():
    with pytest.raises(ValueError, match=r"^ACK policy default: \+reorder goes with"):
        AckPolicy("default", reorder=True)
    with pytest.raises(ValueError, match=r"^ACK policy ratio: \+reordering:R and"):
        AckPolicy("ratio", 2, reordering=3)
    with pytest.raises(ValueError, match=r"^ACK policy ack-frequency: \+reordering:R takes"):
        AckPolicy("ack-frequency", 2, reordering=-1)
    with pytest.raises(ValueError, match="are booleans"):
        AckPolicy("ratio", 2, reorder=1)


# ---- the aioquic internals these rules rely on -----------------------------------------------

def test_aioquic_internals_pinned():
    def code(fn):
        return " ".join(inspect.getsource(fn).split())

    source = code(QuicConnection.receive_datagram)
    # a kept packet's number reaches received_packets.add right after _payload_received
    assert source.index("self._payload_received(") < source.index(
        "space.received_packets.add(packet_number)")
    source = code(QuicConnection._write_application)
    for text in ("self._probe_pending", "self._ping_pending", "stream.is_blocked",
                 "stream.sender.buffer_is_empty", "stream.sender.reset_pending",
                 "self._write_connection_limits(builder=builder, space=space)"):
        assert text in source
    ranges = RangeSet()
    ranges.add(1, 3)
    ranges.add(5, 6)
    ranges.subtract(2, 3)
    assert list(reversed(ranges)) == [range(5, 6), range(1, 2)] and len(ranges) == 2
    client_cfg, _ = make_configs()
    assert PolicyConnection(client_cfg)._loss._rtt_initial == client_cfg.initial_rtt
    assert FRAME_IMMEDIATE_ACK == 0x1F


def test_a_quinn_endpoint_refuses_the_options():
    """quinn's receiver follows RFC 9000 or its peer's ACK_FREQUENCY: the options are aioquic's,
    refused in one line for a quinn endpoint, never accepted and silently dropped."""
    from satemu.quic.quinn import quinn_policy
    for text in ("ratio:2+reorder", "ack-frequency:10+reordering:3",
                 "ack-frequency:10+immediate-ack"):
        with pytest.raises(ValueError, match=r"its options \(\+reorder, \+reordering:R, "
                                             r"\+immediate-ack\) are aioquic's") as e:
            quinn_policy(text)
        assert "\n" not in str(e.value)
    assert str(quinn_policy("ack-frequency:10")) == "ack-frequency:10"
