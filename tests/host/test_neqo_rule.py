# SPDX-License-Identifier: BSD-2-Clause
"""neqo's sender rule (``neqo[:R]``): the ACK_FREQUENCY frames an aioquic server sends as neqo
would, and the client honouring them."""

import pytest
from test_ack_reordering import qlog_events, transfer

from satemu.quic.ackpolicy import NEQO_RATIO, AckPolicy, PolicyConnection
from satemu.quic.bulk import make_configs


def endpoint(policy="neqo"):
    client_cfg, _ = make_configs()          # the arithmetic is the same on either side
    conn = PolicyConnection(client_cfg, policy)
    conn._neqo_min_us = 1000
    return conn


@pytest.mark.parametrize("cwnd, mtu, srtt, ratio, expected", [
    (12_000, 1200, 0.100, 40, (2, 25_000)),       # 10 packets / 4: at least 2; RTT / 4
    (480_000, 1200, 0.600, 40, (100, 50_000)),     # 400 packets / 4; 150 ms capped at 50
    (20_000_000, 1200, 0.600, 40, (256, 50_000)),  # at most 256
    (480_000, 1200, 0.003, 10, (256, 3_000)),      # R 10: a window per ACK, a whole RTT
    (480_000, 1200, 0.0002, 40, (100, 1_000)),     # 50 us: at least the peer's min_ack_delay
    (479_999, 1200, 0.100, 80, (49, 12_500)),      # floors, as neqo's integers do
])
def test_target_is_neqos_arithmetic(cwnd, mtu, srtt, ratio, expected):
    conn = endpoint(AckPolicy.parse(f"neqo:{ratio}"))
    assert conn.neqo_target(cwnd, mtu, srtt) == expected


def sent_frames(link):
    """(threshold + 1, delay in us) of each ACK_FREQUENCY frame the server sent."""
    return [(f["ack_eliciting_threshold"] + 1, f["request_max_ack_delay"])
            for e in qlog_events(link.server, "transport:packet_sent")
            for f in e["data"]["frames"] if f["frame_type"] == "ack_frequency"]


def test_no_frame_when_the_target_is_the_peers_default():
    """A 100 ms initial RTT asks for 25 ms and 1:2, what the client does anyway: neqo sends no
    frame (its own test ack_rate_default), and a growing window never changes that."""
    link = transfer("neqo", "neqo", size=400_000, qlog=True, initial_rtt_ms=100)
    conn = link.server.conn
    assert conn._neqo_target == (2, 25_000) == conn._neqo_current
    assert conn.stats.ack_frequency_sent == 0 and sent_frames(link) == []
    assert conn._loss.congestion_window > 12 * conn._max_datagram_size   # it grew


def test_one_frame_for_a_longer_initial_rtt():
    """satemu's default 333 ms initial RTT: a quarter is 83 ms, capped at 50 ms, more than a
    quarter above the client's 25 ms: one frame, 1:2 within 50 ms, and no other while the
    window only grows."""
    link = transfer("neqo", "neqo", size=400_000, qlog=True)
    conn, client = link.server.conn, link.client.conn
    assert sent_frames(link) == [(2, 50_000)] and conn._neqo_current == (2, 50_000)
    assert client._af_threshold == 2 and client._af_max_ack_delay == 0.050


def test_a_congestion_event_retargets_and_the_client_follows(monkeypatch):
    """A lost datagram shrinks the window: the server asks for neqo's target at that window and
    smoothed RTT, and the client ACKs by it."""
    seen = []
    retarget = PolicyConnection._neqo_retarget

    def noting(self):
        loss = self._loss
        seen.append((loss.congestion_window, loss._rtt_smoothed))
        retarget(self)

    monkeypatch.setattr(PolicyConnection, "_neqo_retarget", noting)
    link = transfer("neqo", "neqo", size=1_500_000, qlog=True, drop={("server", 300)},
                    delay=0.030, rate=20e6)
    conn, client = link.server.conn, link.client.conn
    assert len(seen) >= 2                       # the transport parameters, then the loss
    frames = sent_frames(link)
    assert frames and conn.stats.ack_frequency_sent == len(frames)
    cwnd, srtt = seen[-1]
    last = conn.neqo_target(cwnd, conn._max_datagram_size, srtt)
    assert frames[-1] == last == conn._neqo_current
    assert last[0] > 2                          # the window after the loss holds 8+ packets
    assert client._af_threshold == last[0] and round(client._af_max_ack_delay * 1e6) == last[1]
    assert conn._loss.max_ack_delay == last[1] / 1e6
    assert client.stats.ack_frequency_received == len(frames)


def test_spellings():
    assert AckPolicy.parse("neqo") == AckPolicy("neqo", NEQO_RATIO)
    assert str(AckPolicy.parse("neqo")) == "neqo" and str(AckPolicy.parse("NEQO:40")) == "neqo"
    assert str(AckPolicy.parse("neqo:25")) == "neqo:25"
    assert AckPolicy.parse("neqo").asks_peer and AckPolicy.parse("ack-frequency:3").asks_peer
    assert not AckPolicy.parse("ratio:2").asks_peer
    for text in ("neqo:9", "neqo:256", "neqo:0"):
        with pytest.raises(ValueError) as info:
            AckPolicy.parse(text)
        assert str(info.value).endswith("R is neqo's ack_ratio, ACKs per round trip x 10, "
                                        "in 10 .. 255") and "\n" not in str(info.value)
    for text in ("neqo+reorder", "neqo+immediate-ack"):
        with pytest.raises(ValueError, match=r"go(es)? with"):
            AckPolicy.parse(text)


def test_a_quinn_server_refuses_it_a_quinn_client_takes_it():
    from satemu.quic.quinn import QuinnServer, quinn_policy
    from satemu.quic.settings import EndpointSettings
    assert str(quinn_policy("neqo")) == "neqo"
    with pytest.raises(ValueError, match="^ACK policy neqo: neqo's rule is a sender's, run by "
                                         "an aioquic server"):
        QuinnServer(EndpointSettings(), "neqo")
