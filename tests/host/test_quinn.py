# SPDX-License-Identifier: BSD-2-Clause
"""The quinn stack (satemu_quinn + satemu.quic.quinn) in virtual time over an ideal link:
completion, repeatability, frame sizes, the initial window, the controllers, both mixed pairs
with aioquic, ACK_FREQUENCY across the stacks, and what is refused."""

import pytest
from ideal_link import IdealLink as _IdealLink

from satemu.quic.bulk import BulkClient, BulkServer, make_configs, payload_bytes
from satemu.quic.determinism import deterministic
from satemu.quic.settings import INITIAL_RTT_RANGE_MS, EndpointSettings, quinn_limits

from satemu.quic.quinn import QuinnClient, QuinnServer, _certificate_der

import satemu_quinn             # built into .venv by scripts/build_quinn.sh (make's set-up)

SIZE = 200_000


def IdealLink(client, server, **kwargs):
    """The shared ideal link (tests/host/ideal_link.py), at infinite rate unless given."""
    return _IdealLink(client, server, **{"rate": 0.0, **kwargs})


def quinn_pair(seed=0, size=SIZE, policy="default", server_policy="default", link=None,
               **settings):
    s = EndpointSettings(**settings)
    return IdealLink(QuinnClient(s, size, policy, seed), QuinnServer(s, server_policy, seed),
                     **(link or {}))


def assert_complete(link, size=SIZE):
    client = link.client
    assert client.done and client.received == size and client.error is None
    assert 0 < client.handshake_at < client.first_byte_at <= client.completed_at
    assert link.server.served == {client.stream_id: size}


@pytest.fixture(scope="module")
def quinn_run():
    return quinn_pair(seed=0).run()


def test_quinn_pair_completes_verified(quinn_run):
    link = quinn_run
    assert_complete(link)
    assert link.client.stream_id == 0
    # 2 RTTs of set-up (handshake, request) before the first byte on a 20 ms path
    assert link.client.first_byte_at == pytest.approx(0.080, abs=0.002)
    assert link.client.completed_at < 0.5
    client, server = link.client.stats_dict(), link.server.stats_dict()
    assert client["stack"] == server["stack"] == "quinn"
    assert client["datagrams_sent"] == len(link.of("client"))
    assert server["datagrams_sent"] == len(link.of("server"))
    assert client["datagrams_received"] == server["datagrams_sent"]
    assert client["bytes_received"] == server["bytes_sent"] > SIZE
    assert client["ack_only_sent"] == sum(s.ack_only for s in link.of("client"))
    assert client["ack_only_bytes_sent"] == sum(len(s.data) for s in link.of("client")
                                                if s.ack_only)
    assert server["ack_only_sent"] <= 1                     # the server sends data
    assert client["lost_packets"] == server["lost_packets"] == 0
    assert client["handshake_lost_packets"] == 0 and link.client.handshake_losses() == 0
    assert server["rtt_ms"] == pytest.approx(40.0, abs=1.0)
    assert link.server.max_ack_delay_used_ms() is None      # quinn keeps it private
    assert link.server.conn is not None


def test_a_quinn_client_acks_every_second_packet(quinn_run):
    link = quinn_run
    data = sum(1 for s in link.of("server") if len(s.data) > 1000)
    acks = link.client.stats_dict()["ack_only_sent"]
    assert data > SIZE // 1472
    assert abs(acks - data / 2) <= 6


def trace(link):
    return [(s.time, s.sender, s.data) for s in link.sent]


@pytest.mark.parametrize("cc", ["reno", "bbr"])
def test_the_seed_repeats_every_datagram(cc):
    # 1 MB at 10 Mbit/s: long enough for BBR to leave STARTUP and DRAIN for PROBE_BW, whose
    # gain-cycle phase quinn draws at random (from the endpoint's seed here)
    def run(seed):
        return quinn_pair(seed=seed, cc=cc, size=1_000_000, link={"rate": 10e6}).run()

    first, again, other = run(0), run(0), run(1)
    assert trace(first) == trace(again)
    assert len(trace(first)) > 1000
    assert trace(first)[0][2] != trace(other)[0][2]       # CIDs, keys: the first datagram differs
    assert [d for _, _, d in trace(first)] != [d for _, _, d in trace(other)]


def test_client_and_server_draw_apart():
    # one seed for both sides, yet their connection IDs differ (seed hashed with the role)
    link = quinn_run_small = quinn_pair(seed=5, size=1000).run()
    assert_complete(quinn_run_small, 1000)
    client_initial, server_initial = link.of("client")[0].data, link.of("server")[0].data
    dcid_len = client_initial[5]
    client_dcid = client_initial[6:6 + dcid_len]
    scid_len = client_initial[6 + dcid_len]
    client_scid = client_initial[7 + dcid_len:7 + dcid_len + scid_len]
    s_dcid_len = server_initial[5]
    server_scid = server_initial[7 + s_dcid_len:7 + s_dcid_len + server_initial[6 + s_dcid_len]]
    assert len(client_dcid) == len(client_scid) == len(server_scid) == 8
    assert len({client_dcid, client_scid, server_scid}) == 3


@pytest.mark.parametrize("max_datagram", [1280, 1472])
def test_full_datagrams_are_max_datagram(max_datagram):
    link = quinn_pair(max_datagram=max_datagram, size=50_000).run()
    assert_complete(link, 50_000)
    sizes = [len(s.data) for s in link.of("server")]
    assert max(sizes) == max_datagram
    assert sizes.count(max_datagram) >= 50_000 // max_datagram
    assert len(link.of("client")[0].data) == max_datagram       # the padded client Initial


def first_flight(initial_window):
    """Server datagrams of response data sent before the first ACK of that data arrived."""
    link = quinn_pair(initial_window=initial_window, size=100_000).run()
    request_arrival = min(t for t, name, _ in link.arrivals if name == "server" and t > 0.05)
    first_data = min(s.time for s in link.of("server") if s.time >= request_arrival)
    ack_arrival = min(t for t, name, _ in link.arrivals
                      if name == "server" and t > first_data)
    return [s for s in link.of("server") if first_data <= s.time < ack_arrival]


def test_initial_window_bounds_the_first_flight():
    small, large = first_flight(4), first_flight(20)
    assert sum(len(s.data) for s in small) <= 4 * 1472
    assert 3 <= len(small) <= 4
    assert 16 <= len(large) <= 20
    assert sum(len(s.data) for s in large) <= 20 * 1472


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_each_controller_completes(cc, quinn_run):
    link = quinn_run if cc == "reno" else quinn_pair(cc=cc).run()
    assert_complete(link)


def aioquic_settings(**changes):
    return EndpointSettings(**changes)


def test_aioquic_client_quinn_server():
    settings = aioquic_settings()
    with deterministic(3):
        client_cfg, _ = make_configs(settings)
        link = IdealLink(BulkClient(client_cfg, SIZE, policy="ratio:2"),
                         QuinnServer(settings, "default", 3)).run()
    assert_complete(link)
    assert link.client.conn.stats.ack_only_sent > 0


def test_quinn_client_aioquic_server():
    settings = aioquic_settings()
    with deterministic(4):
        _, server_cfg = make_configs(settings)
        link = IdealLink(QuinnClient(settings, SIZE, "default", 4), BulkServer(server_cfg)).run()
    assert_complete(link)
    assert link.server.conn.stats.datagrams_sent == len(link.of("server"))


def ack_ratio(link):
    data = sum(1 for s in link.of("server") if not s.ack_only and len(s.data) > 1000)
    acks = sum(1 for s in link.of("client") if s.ack_only)
    return acks / data


def test_aioquic_server_asks_quinn_client_for_fewer_acks():
    settings = aioquic_settings()
    with deterministic(5):
        _, server_cfg = make_configs(settings)
        link = IdealLink(QuinnClient(settings, SIZE, "ack-frequency:10", 5),
                         BulkServer(server_cfg, policy="ack-frequency:10")).run()
    assert_complete(link)
    assert link.server.conn.stats.ack_frequency_sent == 1
    assert link.client.stats_dict()["ack_frequency_received"] == 1
    assert 0.07 <= ack_ratio(link) <= 0.14               # about 1:10, not quinn's own 1:2


def test_quinn_server_asks_aioquic_client_for_fewer_acks():
    settings = aioquic_settings()
    with deterministic(6):
        client_cfg, _ = make_configs(settings)
        link = IdealLink(BulkClient(client_cfg, SIZE, policy="ack-frequency:10"),
                         QuinnServer(settings, "ack-frequency:10", 6)).run()
    assert_complete(link)
    client = link.client.conn
    assert client.stats.ack_frequency_received >= 1
    assert client._af_threshold == 10                    # quinn asked for threshold 9
    assert client._af_max_ack_delay == pytest.approx(0.025)
    assert client._af_reordering == 1
    assert link.server.stats_dict()["ack_frequency_sent"] >= 1
    assert 0.07 <= ack_ratio(link) <= 0.14


def test_quinn_server_asks_quinn_client_for_fewer_acks():
    link = quinn_pair(seed=7, policy="ack-frequency:10", server_policy="ack-frequency:10").run()
    assert_complete(link)
    assert link.client.stats_dict()["ack_frequency_received"] >= 1
    assert 0.07 <= ack_ratio(link) <= 0.14


def test_handshake_losses_are_counted_until_the_handshake_completes():
    link = quinn_pair(size=50_000, link={"drop": {("client", 0)}}).run()   # the client's Initial
    assert_complete(link, 50_000)
    # quinn probes after 3 x the initial RTT (333 ms), then the handshake takes one RTT
    assert link.client.handshake_at == pytest.approx(3 * 0.333 + 0.040, abs=0.002)
    assert link.client.handshake_losses() == link.client.stats_dict()["lost_packets"] == 1
    assert link.server.handshake_losses() == 0


@pytest.mark.parametrize("quinn_side", ["server", "client"])
def test_quinn_probes_with_immediate_ack_to_an_ack_frequency_aioquic_peer(quinn_side):
    settings = aioquic_settings()
    with deterministic(8):
        client_cfg, server_cfg = make_configs(settings)
        if quinn_side == "server":        # ten server datagrams in a row lost: a PTO
            link = IdealLink(BulkClient(client_cfg, SIZE, policy="ack-frequency:10"),
                             QuinnServer(settings, "ack-frequency:10", 6),
                             drop={("server", i) for i in range(130, 140)})
        else:                             # the client's Finished and request lost: a PTO
            link = IdealLink(QuinnClient(settings, SIZE, "ack-frequency:10", 5),
                             BulkServer(server_cfg, policy="ack-frequency:10"),
                             drop={("client", 1)})
        aioquic = link.client if quinn_side == "server" else link.server
        try:
            link.run(until=5.0)
        except AssertionError:
            pass
    closed = aioquic.terminated
    assert closed is None or closed.frame_type != 0x1F, "aioquic refused IMMEDIATE_ACK"
    assert_complete(link)
    assert aioquic.conn.stats.immediate_ack_received >= 1        # the probe carried one


def test_a_bad_request_is_reset():
    class BadClient(QuinnClient):
        def start(self, now):
            self.started_at = now
            self.endpoint.connect(round(now * 1e9))
            self.endpoint.open_bidi(b"PUT 5\n", True)
            self._events(now)

    s = EndpointSettings()
    link = IdealLink(BadClient(s, 5, "default", 0), QuinnServer(s, "default", 0))
    with pytest.raises(AssertionError, match="server reset the stream"):
        link.run()
    assert link.server.served == {0: -1}


def test_large_body_in_one_write():
    link = quinn_pair(size=3_000_000, link={"rate": 100e6}).run()
    assert_complete(link, 3_000_000)


# ---- what is refused --------------------------------------------------------------------------

def endpoint(role="client", **kwargs):
    cert, key = _certificate_der()
    kwargs.setdefault("limits", quinn_limits())
    return satemu_quinn.Endpoint(role, 0, "10.0.0.1:4433", "10.0.0.2:4433", cert,
                                 key if role == "server" else None, **kwargs)


@pytest.mark.parametrize("policy", ["ratio:10", "ratio:3", "adaptive"])
def test_receiver_policies_of_aioquic_only_are_refused(policy):
    s = EndpointSettings()
    with pytest.raises(ValueError, match="implemented in aioquic's endpoint only"):
        QuinnClient(s, SIZE, policy, 0)
    with pytest.raises(ValueError, match="implemented in aioquic's endpoint only"):
        QuinnServer(s, policy, 0)


def test_the_extension_refuses_bad_settings():
    for size in (1199, 1473, 0):
        with pytest.raises(ValueError, match="max datagram"):
            endpoint(max_datagram=size)
    with pytest.raises(ValueError, match="congestion controller 'vegas'"):
        endpoint(cc="vegas")
    with pytest.raises(ValueError, match="role"):
        endpoint(role="peer")
    with pytest.raises(ValueError, match="always advertises and uses 25 ms"):
        endpoint(max_ack_delay_ns=30_000_000)
    with pytest.raises(ValueError, match="initial window"):
        endpoint(initial_window_bytes=1000)
    with pytest.raises(ValueError, match="stream window"):
        endpoint(stream_window=100)
    with pytest.raises(ValueError, match="address"):
        satemu_quinn.Endpoint("client", 0, "10.0.0.1", "10.0.0.2:4433", b"",
                              limits=quinn_limits())
    cert, _ = _certificate_der()
    with pytest.raises(ValueError, match="private key"):
        satemu_quinn.Endpoint("server", 0, "10.0.0.2:4433", "10.0.0.1:4433", cert,
                              limits=quinn_limits())
    with pytest.raises(ValueError, match="PKCS#8"):
        satemu_quinn.Endpoint("server", 0, "10.0.0.2:4433", "10.0.0.1:4433", cert, b"junk",
                              limits=quinn_limits())


def test_the_extension_takes_its_ranges_from_the_settings_table():
    """The extension has no ranges of its own: it holds each setting to the range
    satemu.quic.settings declares (quinn_limits), the one EndpointSettings.check holds, at both
    ends, and refuses to run without them."""
    limits = quinn_limits()
    lo, hi = limits["initial_rtt_ns"]
    assert (lo, hi) == (round(INITIAL_RTT_RANGE_MS[0] * 1e6), round(INITIAL_RTT_RANGE_MS[1] * 1e6))
    endpoint(initial_rtt_ns=lo)
    endpoint(initial_rtt_ns=hi)
    for rtt in (lo - 1, hi + 1, 3_600_000_000_000):    # an hour: the extension's own old bound
        with pytest.raises(ValueError, match=f"initial RTT {rtt} ns is outside {lo}..{hi} ns"):
            endpoint(initial_rtt_ns=rtt)
    lo, hi = limits["initial_window_bytes"]
    endpoint(initial_window_bytes=lo)
    endpoint(initial_window_bytes=hi)
    with pytest.raises(ValueError, match=f"initial window {hi + 1} B is outside {lo}..{hi} B"):
        endpoint(initial_window_bytes=hi + 1)
    lo, hi = limits["window"]
    with pytest.raises(ValueError, match=f"stream window {lo - 1} B is outside {lo}..{hi} B"):
        endpoint(stream_window=lo - 1)
    with pytest.raises(ValueError, match="limits: window is missing"):
        endpoint(limits={k: v for k, v in limits.items() if k != "window"})
    with pytest.raises(ValueError, match="is not a range"):
        endpoint(limits=dict(limits, max_datagram=(1472, 1200)))


def test_the_extension_refuses_calls_out_of_order():
    client = endpoint()
    with pytest.raises(RuntimeError, match="before connect"):
        client.receive(b"\x00" * 1200, 0)
    with pytest.raises(RuntimeError, match="before there is a connection"):
        client.open_bidi(b"x")
    client.connect(1_000)
    with pytest.raises(RuntimeError, match="called already"):
        client.connect(2_000)
    with pytest.raises(ValueError, match="time went backwards"):
        client.transmit(500)
    with pytest.raises(ValueError, match="for the client"):
        endpoint("server").connect(0)
    assert client.transmit(2_000)[0][1] is False            # the Initial: not ACK-only
    assert endpoint("server").timeout() is None


def test_the_driver_refuses_what_quinn_cannot_take():
    with pytest.raises(ValueError, match="max_ack_delay 30"):
        QuinnClient(EndpointSettings(max_ack_delay_ms=30.0), SIZE, "default", 0)
    with pytest.raises(ValueError, match="seed"):
        QuinnClient(EndpointSettings(), SIZE, "default", -1)
    with pytest.raises(ValueError, match="max datagram"):
        EndpointSettings(max_datagram=1199)


def test_payload_is_bulk_payload(quinn_run):
    # the client checked every byte against bulk.payload_bytes; a changed pattern would fail
    assert payload_bytes(0, 4) == b"\x00\x01\x02\x03"
    assert quinn_run.client.verify and quinn_run.client.error is None
