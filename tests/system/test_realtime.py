# SPDX-License-Identifier: BSD-2-Clause
"""Real-time mode on this host: aioquic's asyncio endpoints (with the ACK policies) in two network
namespaces joined by a veth pair, captured on both ends, turned into a Transfer.

The veth is the link: no emulator in between. With sch_netem available each end delays 10 ms;
without it (as on the development VM) there is no added delay. These tests do not use the
simulated board (they must not request ``board_state``)."""

import asyncio
import itertools
import json
import math
import os
import shutil
import subprocess

import pytest

from satemu.quic import aio, capture, netns
from satemu.quic import realtime as rt
from satemu.quic.packets import CLIENT, MAX_UDP_PAYLOAD, SERVER, build_frame
from satemu.quic.settings import EndpointSettings

SIZE = 1_000_000
SETTINGS = EndpointSettings(max_datagram=1280, initial_window=4, cc="cubic")
PID = os.getpid()


def _ip():
    try:
        return netns._ip_binary()
    except netns.RealtimeError:
        return None


def _run(*argv):
    return subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True)


def _our_namespaces():
    ip = _ip()
    if ip is None:
        return []
    names = [line.split()[0] for line in _run(ip, "netns", "list").stdout.splitlines() if line]
    return [n for n in names if n.startswith((f"satemu-c{PID}-", f"satemu-s{PID}-"))]


@pytest.fixture(scope="module")
def ip():
    """The ip binary, once root and network namespaces are known to work; else skip."""
    if os.geteuid() != 0:
        pytest.skip("real-time mode needs root (it creates network namespaces)")
    ip = _ip()
    if ip is None:
        pytest.skip("iproute2's 'ip' command is not installed")
    probe = f"satemu-probe{PID}"
    if _run(ip, "netns", "add", probe).returncode != 0:
        pytest.skip("'ip netns add' does not work here")
    _run(ip, "netns", "del", probe)
    return ip


@pytest.fixture(scope="module")
def veth(ip):
    """A factory of fresh veth pairs (client end, server end); each real-time run consumes one
    (a veth dies with the namespace it was moved into). Everything is removed at the end."""
    serial = itertools.count()
    made = []

    def make():
        n = next(serial)
        a, b = f"sc{PID % 10000}x{n}", f"ss{PID % 10000}x{n}"
        done = _run(ip, "link", "add", a, "type", "veth", "peer", "name", b)
        assert done.returncode == 0, done.stderr
        made.append(a)
        return a, b

    yield make
    for a in made:
        _run(ip, "link", "del", a)              # normally gone with its namespace already
    for ns in _our_namespaces():
        _run(ip, "netns", "del", ns)


@pytest.fixture(scope="module")
def netem(ip, veth):
    """netem "delay 10ms" when tc and sch_netem are available, else None (no added delay)."""
    tc = shutil.which("tc", path=os.pathsep.join([os.environ.get("PATH", ""), *netns.IP_SEARCH]))
    if tc is None:
        return None
    a, _b = veth()
    ok = _run(tc, "qdisc", "add", "dev", a, "root", "netem", "delay", "10ms").returncode == 0
    _run(ip, "link", "del", a)
    return "delay 10ms" if ok else None


@pytest.fixture(scope="module")
def runs(veth, netem, tmp_path_factory):
    """run(name) -> (transfer, outdir), each real-time run made once, on first use."""
    done = {}
    templates = {
        "client_cmd": "{python} -m satemu.quic.realtime fetch --connect {server_ip} "
                      "--port {server_port} --size {size} --ack ratio:2 --timeout 60 "
                      "--result {outdir}/external-client.json",
        "server_cmd": "{python} -m satemu.quic.realtime serve --bind {server_ip} "
                      "--port {server_port} --stats {outdir}/external-server.json",
    }

    def run(name):
        if name not in done:
            out = tmp_path_factory.mktemp(name.replace(":", ""))
            client_if, server_if = veth()
            kwargs = templates if name == "external" else {"ack": name}
            if name == "settings":          # endpoint settings reach the real-time endpoints
                kwargs = {"ack": "ratio:2", "settings": SETTINGS}
            try:
                t = rt.run_realtime(client_if, server_if, SIZE, outdir=out, timeout=60,
                                    netem=netem, **kwargs)
            finally:
                assert not _our_namespaces(), "namespaces left behind"
            done[name] = (t, out)
        return done[name]

    return run


def _sizes(frames):
    return [f.udp_size for f in frames]


# ---------------------------------------------------------------------------------------------
# without root

def test_policy_connection_runs_under_aioquics_asyncio_api():
    """policy_connections() makes aioquic.asyncio's connect() and serve() build PolicyConnection
    (the client's ratio:10 shows in its counters and per-datagram log), and restores the names."""
    from aioquic.asyncio import client as aio_client
    from aioquic.asyncio import server as aio_server
    from aioquic.quic.connection import QuicConnection

    with aio.policy_connections("ratio:3") as factory:
        assert aio_client.QuicConnection is factory and aio_server.QuicConnection is factory
    assert aio_client.QuicConnection is QuicConnection
    assert aio_server.QuicConnection is QuicConnection

    async def transfer():
        bound = asyncio.get_running_loop().create_future()
        server = asyncio.create_task(aio.serve_bulk("127.0.0.1", 0, ready=bound.set_result))
        client = await aio.fetch_bulk("127.0.0.1", (await bound)[1], 200_000, ack="ratio:10",
                                      timeout=30)
        return client, await asyncio.wait_for(server, 10)

    client, server = asyncio.run(transfer())
    assert aio_client.QuicConnection is QuicConnection
    assert client["completed"] and client["error"] is None and client["received"] == 200_000
    assert 0 < client["handshake_s"] < client["completion_s"]
    assert client["policy"] == "ratio:10" and server["policy"] == "default"
    for record in (client, server):
        stats, log = record["stats"], record["datagrams"]
        assert stats["datagrams_sent"] == len(log)             # PolicyConnection's counters
        assert stats["ack_only_sent"] == sum(1 for d in log if d[2])
        assert all(isinstance(d[2], bool) for d in log)
    # 1:10 ACKs: far fewer ACK frames than the ~140 data packets
    assert client["stats"]["ack_frames_sent"] * 4 < client["stats"]["ack_eliciting_received"]
    assert server["connections"] == 1 and server["served"] == {"0": 200_000}


def test_capture_header_parsing_matches_the_frames():
    """The capture parser reads what packets.build_frame makes from its first 64 bytes, and pads
    sizes under 60 bytes as a wire carries them."""
    hosts = frozenset((CLIENT.ipv4, SERVER.ipv4))
    for payload in (b"\x40" * 10, b"\x40" * MAX_UDP_PAYLOAD):
        frame = build_frame(SERVER, CLIENT, payload, 7)
        raw = len(frame.rstrip(b"\0")) if len(payload) < 20 else len(frame)
        assert capture._parse_head(frame[:capture.SNAPLEN], len(frame), hosts) == (
            SERVER.ipv4, CLIENT.ipv4, SERVER.port, CLIENT.port, len(payload))
        assert capture._parse_head(frame[:capture.SNAPLEN], raw, hosts)[4] == len(payload)
    bad = bytearray(build_frame(CLIENT, SERVER, b"x" * 100, 1))
    bad[24] ^= 1                                              # IPv4 header checksum
    with pytest.raises(ValueError):
        capture._parse_head(bytes(bad[:64]), len(bad), hosts)
    other = build_frame(CLIENT, SERVER.__class__(SERVER.mac, "10.0.0.9", 1), b"x", 1)
    assert capture._parse_head(other[:64], len(other), hosts) is None


def test_clear_errors_without_root_or_ip(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    with pytest.raises(netns.RealtimeError, match="needs root"):
        with netns.Namespaces("a0", "b0"):
            pass
    monkeypatch.undo()
    if os.geteuid() == 0:
        monkeypatch.setattr(netns.shutil, "which", lambda *a, **k: None)
        with pytest.raises(netns.RealtimeError, match="'ip' command"):
            with netns.Namespaces("a0", "b0"):
                pass


# ---------------------------------------------------------------------------------------------
# over the veth

def test_missing_interface_is_a_clear_error_and_leaves_nothing(ip, veth):
    a, _b = veth()
    before = _run(ip, "netns", "list").stdout
    with pytest.raises(netns.RealtimeError, match="does not exist"):
        rt.run_realtime(a, "nosuch0", SIZE)
    with pytest.raises(netns.RealtimeError, match="does not exist"):
        with netns.Namespaces("nosuch0", a):
            pass
    assert _run(ip, "netns", "list").stdout == before
    assert _run(ip, "link", "show", "dev", a).returncode == 0      # still in the root namespace


@pytest.mark.parametrize("ack", ["ratio:2", "ratio:10"])
def test_transfer_completes(runs, ack):
    t, _out = runs(ack)
    assert t.completed and t.error is None, t.error
    assert t.profile == "realtime" and t.ack == ack and t.f_clk == 1_000_000_000
    assert 0 < t.handshake_s < t.completion_s < 30
    forward = [r for r in t.sent if r.direction == "forward"]
    assert len(forward) >= math.ceil(SIZE / MAX_UDP_PAYLOAD)
    assert sum(r.udp_size for r in forward) > SIZE
    assert all(60 <= r.size <= 1514 for r in t.sent)
    assert t.undecodable == 0 and t.board_stats == {}
    assert t.client_stats["datagrams_sent"] == sum(r.direction == "return" for r in t.sent)


@pytest.mark.parametrize("ack", ["ratio:2", "ratio:10"])
def test_endpoint_logs_agree_with_the_captures(runs, ack):
    """Every datagram an endpoint sent is in its own capture once, outgoing, and in the peer's
    capture once, incoming (a veth loses nothing), in the same order and size; the capture
    stamps it after the endpoint handed it to the kernel."""
    t, out = runs(ack)
    at_client, meta_c = capture.read_capture(out / "client.capture")
    at_server, meta_s = capture.read_capture(out / "server.capture")
    for meta in (meta_c, meta_s):
        assert meta["trailer"]["kernel_drops"] == 0 and meta["undecodable"] == 0
    for log_name, sender, receiver, src in (("server.json", at_server, at_client, SERVER.ipv4),
                                            ("client.json", at_client, at_server, CLIENT.ipv4)):
        log = aio.read_endpoint_log(out / log_name)["datagrams"]
        sent = [f for f in sender if f.outgoing and f.src == src]
        got = [f for f in receiver if not f.outgoing and f.src == src]
        assert [d[1] for d in log] == _sizes(sent) == _sizes(got)
        assert all(d[0] <= f.t_ns <= g.t_ns for d, f, g in zip(log, sent, got))
    info = json.loads((out / "realtime.json").read_text())
    for direction in ("forward", "return"):
        counts = info["directions"][direction]
        assert counts["logged"] == counts["matched"] == counts["captured_out"] \
            == counts["captured_in"]
        records = [r for r in t.sent if r.direction == direction]
        assert sum(r.ack_only for r in records) == counts["logged_ack_only"]
        assert len(records) == sum(d.direction == direction for d in t.delivered)


def test_ratio_10_sends_fewer_ack_only_datagrams_than_ratio_2(runs):
    def ack_only(t):
        return sum(r.ack_only for r in t.sent if r.direction == "return")
    r2, r10 = runs("ratio:2")[0], runs("ratio:10")[0]
    assert ack_only(r10) * 2 < ack_only(r2)
    assert ack_only(r2) == r2.client_stats["ack_only_sent"]


def test_endpoint_settings_take_effect_in_real_time(runs):
    t, out = runs("settings")
    assert t.completed, t.error
    assert max(r.udp_size for r in t.sent) == 1280             # captured on the wire
    assert t.settings == SETTINGS.to_dict()
    for role in ("client", "server"):
        log = json.loads((out / f"{role}.json").read_text())
        assert log["settings"] == SETTINGS.to_dict() and log["cc"] == "cubic"


def test_external_endpoints_complete_with_capture_metrics(runs):
    """Our own fetch/serve given as --client-cmd/--server-cmd templates: completion is the
    client command's exit status, every metric comes from the captures, ACK-only is unknown."""
    t, out = runs("external")
    assert t.completed and t.error is None, t.error
    assert t.ack == "external" and t.client_stats == {} and t.server_stats == {}
    assert t.completion_s is not None and 0 < t.completion_s < 30 and t.handshake_s is None
    forward = [r for r in t.sent if r.direction == "forward"]
    assert len(forward) >= math.ceil(SIZE / MAX_UDP_PAYLOAD)
    assert not any(r.ack_only for r in t.sent)
    for direction in ("forward", "return"):
        assert sum(r.direction == direction for r in t.sent) == \
            sum(d.direction == direction for d in t.delivered)
    # the templates' own records match what the captures saw
    client = json.loads((out / "external-client.json").read_text())
    assert client["completed"]
    assert len(client["datagrams"]) == sum(r.direction == "return" for r in t.sent)
    # the wire's completion (first client frame to last forward frame) is close to the
    # client's own (which also counts its set-up before the first Initial)
    assert t.completion_s == pytest.approx(client["completion_s"], rel=0.5, abs=0.05)


def test_write_transfer_accepts_a_realtime_transfer(runs, tmp_path):
    from satemu.report.files import write_transfer
    t, _out = runs("ratio:2")
    s = write_transfer(t, tmp_path)
    assert (tmp_path / "result.json").exists() and (tmp_path / "packets.csv").exists()
    assert s["profile"] == "realtime" and s["completed"] and s["goodput_mbps"] > 0
    assert s["board"] == {}
    # No board counters in real time: the cross-check does not apply.
    assert s["consistency"]["applicable"] is False and s["consistency"]["consistent"] is None
