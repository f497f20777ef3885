# SPDX-License-Identifier: BSD-2-Clause
"""QUIC endpoints in virtual time over an ideal in-memory link: ACK policies, counts, repeats."""

# Measured with the link below (20 ms one way, 10 Mbit/s each way, 200 KB, reno, seed 0; aioquic
# 1.7.2, the same to the datagram as 1.2.0): the server sends 143 datagrams, 142 of them
# ack-eliciting 1-RTT packets; ACK-only datagrams the client sends during the whole transfer,
# and when the last byte arrives:
#   default            138   300.9 ms   (aioquic's 1 ms timer: about one ACK per packet here)
#   ratio:2             71   301.3 ms
#   adaptive            54   301.3 ms
#   ratio:10            15   324.6 ms   (fewer ACKs slow slow-start's clock a little)
#   ack-frequency:10    15   334.9 ms   (server asks for 1:10 after the handshake)
# The tests assert the orderings with margin, not these exact numbers.

import inspect
import json

import aioquic
import pytest
from ideal_link import IdealLink
from aioquic.buffer import Buffer
from aioquic.quic.connection import QuicConnection
from aioquic.quic.logger import QuicLogger, QuicLoggerTrace
from aioquic.quic.packet import pull_quic_transport_parameters
from aioquic.quic.recovery import QuicPacketRecovery, QuicPacketSpace
from aioquic.tls import Epoch
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from satemu.quic.ackpolicy import TP_MIN_ACK_DELAY, AckPolicy, PolicyConnection, tlv_items
from satemu.quic.bulk import BulkClient, BulkServer, make_configs, payload_bytes
from satemu.quic.determinism import VirtualTimeTrace, deterministic, server_certificate

SIZE = 200_000


def transfer(policy: str, server_policy: str = "default", seed: int = 0, size: int = SIZE,
             **kwargs) -> IdealLink:
    config_args = {k: kwargs.pop(k) for k in ("cc", "max_ack_delay_ms", "qlog") if k in kwargs}
    client_config, server_config = make_configs(**config_args)
    with deterministic(seed):
        link = IdealLink(BulkClient(client_config, size, policy=policy),
                         BulkServer(server_config, policy=server_policy), **kwargs)
        return link.run()


@pytest.fixture(scope="module")
def runs():
    """One transfer per policy (seed 0), shared by the comparisons below."""
    return {policy: transfer(policy) for policy in ("default", "ratio:2", "ratio:10", "adaptive")}


@pytest.mark.parametrize("policy", ["default", "ratio:2", "ratio:10", "adaptive"])
def test_transfer_completes(runs, policy):
    link = runs[policy]
    client = link.client
    assert client.done and client.received == SIZE
    assert 0 < client.handshake_at < client.first_byte_at <= client.completed_at < 1.0
    # serialisation alone takes SIZE * 8 / rate = 160 ms, plus at least 2 RTTs of set-up
    assert client.completed_at > 0.16 + 0.08
    stats = client.conn.stats
    assert stats.bytes_received >= SIZE
    assert stats.datagrams_sent == sum(1 for s in link.sent if s.sender == "client")
    assert stats.ack_only_sent == sum(1 for s in link.sent if s.sender == "client" and s.ack_only)
    assert link.server.served == {0: SIZE}


def test_ack_counts_follow_the_policy(runs):
    acks = {policy: link.client.conn.stats.ack_only_sent for policy, link in runs.items()}
    # default ACKs (almost) every packet at 10 Mbit/s, ratio:2 every second one
    assert acks["default"] > 1.5 * acks["ratio:2"]
    assert acks["ratio:10"] < 0.35 * acks["ratio:2"]
    assert acks["ratio:10"] < acks["adaptive"] < acks["ratio:2"]
    packets = runs["ratio:2"].client.conn.stats.ack_eliciting_received
    assert packets >= SIZE // 1472
    assert abs(acks["ratio:2"] - packets / 2) <= 5
    # the server only sends data: none of its datagrams is ACK-only in a bulk download
    assert runs["ratio:2"].server.conn.stats.ack_only_sent <= 1


def test_out_of_order_arrival_is_acked_at_once():
    # Hold back one server datagram well into the bulk phase by 5 ms: the next one leaves a gap
    # and the late one arrives out of order; ratio:10 must ACK both at once.
    baseline = transfer("ratio:10")
    late = 60
    link = transfer("ratio:10", hold={("server", late): 0.005})
    assert baseline.client.conn.stats.immediate_acks == 0
    assert link.client.conn.stats.immediate_acks >= 2
    arrival = {index: t for t, name, index in link.arrivals if name == "client"}
    assert arrival[late] > arrival[late + 1]
    ack_times = {s.time for s in link.sent if s.sender == "client" and s.ack_only}
    assert arrival[late + 1] in ack_times          # the gap
    assert arrival[late] in ack_times              # the straggler
    assert link.client.received == SIZE


def test_deterministic_runs_repeat_byte_for_byte():
    def trace(seed):
        return [(s.time, s.sender, s.frame) for s in transfer("ratio:2", seed=seed).sent]

    first, again, other = trace(7), trace(7), trace(8)
    assert first == again
    assert len(first) > 100
    assert [f for _, _, f in first] != [f for _, _, f in other]
    # a different seed changes the connection IDs and keys, so the very first datagram differs
    assert first[0][2] != other[0][2]


def test_deterministic_restores_aioquic():
    import aioquic.tls
    from aioquic.quic import connection
    names = ((connection, "os"), (aioquic.tls, "os"), (aioquic.tls, "x25519"),
             (aioquic.tls, "x448"), (aioquic.tls, "ec"))
    before = [getattr(module, name) for module, name in names]
    draws = []
    for _ in range(2):
        with deterministic(3):
            draws.append((connection.os.urandom(8), aioquic.tls.os.urandom(8),
                          aioquic.tls.x25519.X25519PrivateKey.generate().private_bytes_raw()))
            assert connection.os.path is before[0].path               # the rest is real os
    assert draws[0] == draws[1]
    assert [getattr(module, name) for module, name in names] == before


def test_ack_frequency_extension():
    link = transfer("ack-frequency:10", server_policy="ack-frequency:10")
    client, server = link.client.conn, link.server.conn
    assert server.stats.ack_frequency_sent == 1
    assert client.stats.ack_frequency_received == 1
    assert client._af_threshold == 10 and client._af_max_ack_delay == pytest.approx(0.025)
    assert server.peer_min_ack_delay == pytest.approx(0.001)
    ratio2 = transfer("ratio:2")
    assert client.stats.ack_only_sent < 0.35 * ratio2.client.conn.stats.ack_only_sent
    # without the server asking, an ack-frequency client behaves as ratio:2
    plain = transfer("ack-frequency:10")
    assert plain.client.conn.stats.ack_frequency_received == 0
    assert plain.client.conn.stats.ack_only_sent == ratio2.client.conn.stats.ack_only_sent


def test_transport_parameters_advertised():
    client_config, _ = make_configs(max_ack_delay_ms=40)
    for policy, has_min in (("ratio:2", False), ("ack-frequency:4", True)):
        conn = PolicyConnection(client_config, policy=policy)
        conn.connect(("10.0.0.1", 4433), now=0.0)
        raw = conn._serialize_transport_parameters()
        assert pull_quic_transport_parameters(Buffer(data=raw)).max_ack_delay == 40
        assert (TP_MIN_ACK_DELAY in dict(tlv_items(raw))) == has_min


def test_datagram_info_of_the_first_flight():
    client_config, _ = make_configs()
    with deterministic(1):
        conn = PolicyConnection(client_config, policy="ratio:2")
        conn.connect(("10.0.0.1", 4433), now=0.0)
        datagrams = conn.datagrams_to_send(now=0.0)
    info = conn.last_datagrams_info()
    assert len(info) == len(datagrams) == 1
    assert info[0].size == len(datagrams[0][0]) == 1472          # Initial, padded to the MTU
    assert info[0].ack_eliciting and not info[0].ack_only and info[0].packets == 1
    assert conn.stats.datagrams_sent == 1 and conn.stats.bytes_sent == 1472


def test_qlog_uses_virtual_time():
    link = transfer("ratio:2", qlog=True, max_ack_delay_ms=40)
    for peer in (link.client, link.server):
        logger = peer.conn.configuration.quic_logger
        (trace,) = logger._traces
        assert isinstance(trace, VirtualTimeTrace)
        times = [event["time"] for event in trace.to_dict()["events"]]
        assert times == sorted(times)
        assert 0 <= times[0] and times[-1] <= link.client.completed_at * 1000 + 1e-6
    client_trace = link.client.conn.configuration.quic_logger.to_dict()
    json.dumps(client_trace)
    client_times = [e["time"] for e in client_trace["traces"][0]["events"]]
    params = [e["data"] for e in client_trace["traces"][0]["events"]
              if e["name"] == "transport:parameters_set" and e["data"]["owner"] == "local"]
    assert params[0]["max_ack_delay"] == 40          # what we advertise, not aioquic's 25
    assert client_times[0] == 0.0
    assert client_times[-1] == pytest.approx(link.client.completed_at * 1000)


def test_cubic_completes():
    link = transfer("adaptive", cc="cubic")
    assert link.client.done


def test_configs():
    client, server = make_configs(cc="cubic", max_ack_delay_ms=10, stream_window=32 << 20,
                                  conn_window=32 << 20)
    bdp = 0.600 * 250e6 / 8
    for config in (client, server):
        assert config.alpn_protocols == ["satemu"]
        assert config.congestion_control_algorithm == "cubic"
        assert config.max_data == config.max_stream_data == 32 << 20 > bdp
        assert config.max_ack_delay == pytest.approx(0.010)
    assert make_configs()[0].max_data > bdp
    assert client.is_client and not server.is_client and server.private_key is not None
    with pytest.raises(ValueError, match="congestion controller 'bbr' is not in aioquic"):
        make_configs(cc="bbr")
    with pytest.raises(ValueError, match="max_ack_delay"):
        make_configs(max_ack_delay_ms=0)


def test_certificate_is_fixed():
    cert, key = server_certificate()
    server_certificate.cache_clear()
    cert2, _ = server_certificate()
    assert cert == cert2                                     # same DER: deterministic ECDSA
    assert cert.subject.rfc4514_string() == "CN=satemu-server"
    assert cert.not_valid_before_utc.year == 2024
    assert cert.not_valid_after_utc.year >= 2070
    assert key.sign(b"x", ec.ECDSA(hashes.SHA256())) == key.sign(b"x", ec.ECDSA(hashes.SHA256()))
    key.public_key().verify(key.sign(b"x", ec.ECDSA(hashes.SHA256())), b"x",
                            ec.ECDSA(hashes.SHA256()))


def test_due_ack_before_handshake_does_not_spin():
    client_config, _ = make_configs()
    conn = PolicyConnection(client_config, policy="ratio:2")
    conn.connect(("10.0.0.1", 4433), now=0.0)
    conn.datagrams_to_send(now=0.0)
    conn._spaces[Epoch.ONE_RTT].ack_at = 0.001          # due, but no 1-RTT keys to send it with
    conn.datagrams_to_send(now=0.002)
    assert conn.next_timer(0.002) >= 0.003


def test_policy_parsing():
    assert AckPolicy.parse("ratio:10") == AckPolicy("ratio", 10)
    assert AckPolicy.parse(" Adaptive ") == AckPolicy("adaptive")
    assert str(AckPolicy.parse("ack-frequency:4")) == "ack-frequency:4"
    for bad in ("ratio", "ratio:0", "ratio:x", "often", "default:2"):
        with pytest.raises(ValueError, match="unknown ACK policy"):
            AckPolicy.parse(bad)


def test_payload_pattern():
    assert payload_bytes(0, 3) == b"\x00\x01\x02"
    assert payload_bytes(254, 4) == b"\xfe\xff\x00\x01"
    assert payload_bytes(1000, 600) == (bytes(range(256)) * 8)[1000:1600]


def test_aioquic_internals_pinned():
    """The aioquic internals ackpolicy.py and determinism.py rely on; if this fails, re-read
    aioquic's sources."""
    assert aioquic.__version__.startswith("1.7.")

    def params(fn):
        return list(inspect.signature(fn).parameters)

    assert params(QuicConnection._payload_received) == ["self", "context", "plain",
                                                        "crypto_frame_required"]
    assert params(QuicConnection._write_ack_frame) == ["self", "builder", "space", "now"]
    assert params(QuicConnection._write_connection_limits) == ["self", "builder", "space"]
    assert params(QuicConnection._parse_transport_parameters) == ["self", "data",
                                                                  "from_session_ticket"]
    assert params(QuicConnection._serialize_transport_parameters) == ["self"]
    assert params(QuicPacketRecovery.on_packet_sent) == ["self", "packet", "space"]
    assert params(QuicLoggerTrace.log_event) == ["self", "category", "event", "data"]
    space = QuicPacketSpace()
    for name in ("ack_at", "ack_queue", "largest_received_packet", "discarded",
                 "received_packets"):
        assert hasattr(space, name)
    client_config, _ = make_configs()
    conn = PolicyConnection(client_config)
    assert 0x02 in conn._QuicConnection__frame_handlers
    assert hasattr(conn._loss, "_rtt_smoothed") and hasattr(conn._loss, "_rtt_initialized")
    assert hasattr(conn._loss, "max_ack_delay") and isinstance(conn._spaces, dict)
    assert isinstance(QuicLogger()._traces, list)

    def code(fn):                          # the source with its white space collapsed
        return " ".join(inspect.getsource(fn).split())

    # the comparison aioquic makes before pacing, which datagrams_to_send works around, and the
    # one before it writes a 1-RTT ACK
    source = code(QuicConnection._write_application)
    assert "space.ack_at is None or space.ack_at >= now" in source
    assert ("packet_type == QuicPacketType.ONE_RTT and space.ack_at is not None and "
            "space.ack_at <= now") in source
    source = code(QuicConnection.receive_datagram)
    assert "space.ack_at = now + self._ack_delay" in source
    assert source.index("if packet_number in space.received_packets:") \
        < source.index("self._payload_received(")           # duplicates never reach the policy
    # every packet datagrams_to_send() builds goes through on_packet_sent, in datagram order
    assert "self._loss.on_packet_sent(" in code(QuicConnection._flush_builder)
    # wire behaviour the measurements depend on: an ACK frame carries at most 64 ranges (1.7.0)
    from aioquic.quic.recovery import MAX_ACK_RANGES
    assert MAX_ACK_RANGES == 64


def test_server_ignores_strays_before_an_initial():
    _, server_config = make_configs()
    server = BulkServer(server_config)
    server.receive(b"\x00\x01\x02", 0.0)                        # not QUIC
    server.receive(bytes([0x40]) + bytes(40), 0.0)              # a short-header packet
    assert server.conn is None and server.transmit(0.0) == [] and server.timer(0.0) is None


def test_datagrams_go_only_to_the_peer():
    client_config, _ = make_configs()
    client = BulkClient(client_config, SIZE)
    client.start(0.0)
    client.conn.datagrams_to_send = lambda now: [(b"x", ("192.0.2.9", 4433))]
    with pytest.raises(RuntimeError, match="away from the peer"):
        client.transmit(0.0)


def test_deployed_stacks_ack_rules():
    """chromium, picoquic and quicly:N, on the model engine: chromium decimates as adaptive does
    where the minimum RTT is the smoothed one; picoquic is 1:2 below 16 Mbit/s and thins its
    ACKs above it over a long RTT; quicly:N is ratio:N at the default 25 ms max_ack_delay, and
    waits at most 25 ms under a larger one."""
    from satemu.quic.engine import run_model_transfer

    def acks(profile, size, ack, **settings):
        from satemu.quic.settings import EndpointSettings
        t = run_model_transfer(profile, size, ack=ack, max_seconds=120,
                               settings=EndpointSettings(**settings) if settings else None)
        assert t.completed, (profile, ack)
        return sum(p.ack_only for p in t.sent if p.direction == "return")

    assert [str(AckPolicy.parse(p)) for p in ("Chromium", "picoquic", "quicly:10")] == \
        ["chromium", "picoquic", "quicly:10"]
    for bad in ("quicly", "quicly:0", "picoquic:3"):
        with pytest.raises(ValueError, match="chromium, picoquic or quicly:N"):
            AckPolicy.parse(bad)
    assert acks("geo-testbed", 1_000_000, "picoquic") == acks("geo-testbed", 1_000_000, "ratio:2")
    assert acks("geo-testbed", 1_000_000, "chromium") == \
        acks("geo-testbed", 1_000_000, "adaptive")
    assert acks("geo-testbed", 1_000_000, "quicly:10") == \
        acks("geo-testbed", 1_000_000, "ratio:10")
    fast = {p: acks("geo-large", 4_000_000, p) for p in ("ratio:2", "picoquic", "ratio:10")}
    assert fast["ratio:10"] < fast["picoquic"] < 0.8 * fast["ratio:2"], fast
    # quicly's 25 ms timeout holds under a 100 ms max_ack_delay: more ACKs than ratio:10 then
    assert acks("geo-testbed", 300_000, "quicly:10", max_ack_delay_ms=100) > \
        acks("geo-testbed", 300_000, "ratio:10", max_ack_delay_ms=100)
