# SPDX-License-Identifier: BSD-2-Clause
"""Real-time mode on this host: aioquic's asyncio endpoints (with the ACK policies) in two network
namespaces joined by a veth pair, captured on both ends, turned into a Transfer.

The veth is the link: no emulator in between. With sch_netem available each end delays 10 ms;
without it (as on the development VM) there is no added delay. These tests do not use the
simulated board (they must not request ``board_state``)."""

import asyncio
import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from satemu.quic import afpacket, aio, netns
from satemu.quic import realtime as rt
from satemu.quic.packets import CLIENT, MAX_UDP_PAYLOAD, SERVER, build_frame
from satemu.quic.settings import EndpointSettings

SIZE = 1_000_000
SETTINGS = EndpointSettings(max_datagram=1280, initial_window=4, cc="cubic", ecn="ect1")
PID = os.getpid()
ROOT = Path(__file__).resolve().parents[2]


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
def ip(realtime_ip):
    """The ip binary, once root and network namespaces are known to work; else a real-time skip
    (tests/system/conftest.py: under CI=true it fails the run unless SATEMU_ALLOW_SKIP=1)."""
    return realtime_ip


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
            if name == "external":      # unquoted, {outdir} would run "touch OUT/injected"
                out = out / f"o d; touch {out}/injected; :"
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
    hosts = frozenset({frozenset((CLIENT.ipv4, SERVER.ipv4))})
    for payload in (b"\x40" * 10, b"\x40" * MAX_UDP_PAYLOAD):
        frame = build_frame(SERVER, CLIENT, payload, 7)
        raw = len(frame.rstrip(b"\0")) if len(payload) < 20 else len(frame)
        assert afpacket._parse_head(frame[:afpacket.SNAPLEN_HEAD], len(frame), hosts) == (
            SERVER.ipv4, CLIENT.ipv4, SERVER.port, CLIENT.port, len(payload))
        assert afpacket._parse_head(frame[:afpacket.SNAPLEN_HEAD], raw, hosts)[4] == len(payload)
    bad = bytearray(build_frame(CLIENT, SERVER, b"x" * 100, 1))
    bad[24] ^= 1                                              # IPv4 header checksum
    with pytest.raises(ValueError):
        afpacket._parse_head(bytes(bad[:64]), len(bad), hosts)
    other = build_frame(CLIENT, SERVER.__class__(SERVER.mac, "10.0.0.9", 1), b"x", 1)
    assert afpacket._parse_head(other[:64], len(other), hosts) is None


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
    at_client, meta_c = afpacket.read_capture(out / "client.pcapng")
    at_server, meta_s = afpacket.read_capture(out / "server.pcapng")
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


def test_tshark_reads_the_captures_and_decrypts_them(runs):
    """Each namespace's pcapng opens in tshark (Debian's Wireshark): its frames each way equal
    the endpoints' logs, and with the client's TLS secrets embedded the QUIC packets decrypt:
    every datagram the client sent carries an ACK frame tshark decodes, but the first few."""
    t, out = runs("ratio:10")
    tshark = shutil.which("tshark") or "tshark"

    def fields(path, *args):
        return subprocess.run([tshark, "-r", str(path), *args], capture_output=True, text=True,
                              check=True).stdout.splitlines()

    client_log = aio.read_endpoint_log(out / "client.json")["datagrams"]
    server_log = aio.read_endpoint_log(out / "server.json")["datagrams"]
    for role, sent_log, got_log in (("client", client_log, server_log),
                                    ("server", server_log, client_log)):
        path = out / f"{role}.pcapng"
        quic = "udp && ip.addr == 10.0.0.1 && ip.addr == 10.0.0.2"
        out_n = fields(path, "-Y", f"{quic} && frame.packet_flags_direction == 2")
        in_n = fields(path, "-Y", f"{quic} && frame.packet_flags_direction == 1")
        assert len(out_n) == len(sent_log) and len(in_n) == len(got_log), role
    acks = fields(out / "client.pcapng", "-Y",
                  "frame.packet_flags_direction == 2 && quic.frame_type == 2")
    assert (out / "keys.log").read_text().count("TRAFFIC_SECRET_0") == 2
    assert len(client_log) - 3 <= len(acks) <= len(client_log)


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
    # Every QUIC datagram either side sent left its socket ECT(1) (IP_TOS).
    from satemu.base.pcapng import read_pcapng
    from satemu.quic.packets import ecn_of
    for role in ("client", "server"):
        marks = {ecn_of(p.data) for p in read_pcapng(out / f"{role}.pcapng").packets
                 if p.data[12:14] == b"\x08\x00" and p.data[23] == 17}    # IPv4 UDP
        assert marks == {"ect1"}, role


def test_external_endpoints_complete_with_capture_metrics(runs):
    """Our own fetch/serve given as --client-cmd/--server-cmd templates: completion is the
    client command's exit status, every metric comes from the captures, ACK-only is unknown."""
    t, out = runs("external")
    assert t.completed and t.error is None, t.error
    # its --out has a space, ';' and a command in it: quoted, the templates got it as one word
    assert " " in str(out) and not Path(str(out).split("/o d; touch ")[0], "injected").exists()
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


# ---------------------------------------------------------------------------------------------
# cleaning up: quoted templates, signals, leftovers of dead runs

def test_template_values_cannot_inject_commands(tmp_path):
    """Every value substituted into a --client-cmd/--server-cmd template is shell-quoted: what
    would end a command or start another (;, $(), backquotes, quotes, spaces) stays in one word,
    and format specs still apply to the value."""
    for n, outdir in enumerate(["/tmp/a; touch x", "$(touch x)", "`touch x`", "it's; touch x",
                                "a b\nc && touch x"]):
        values = {k: "" for k in rt.TEMPLATE_FIELDS}
        values.update(outdir=outdir, size=1000, max_ack_delay_ms=25.0)
        cmd = rt._template("printf '%s|' {outdir} {size:d} {max_ack_delay_ms:g} > args", values,
                           "client")
        done = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "args").read_text() == f"{outdir}|1000|25|", n
        assert not (tmp_path / "x").exists(), outdir
    with pytest.raises(netns.RealtimeError, match="bad placeholder"):
        rt._template("{outdir.real}", {"outdir": "x"}, "server")


def _alive(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _pids_mentioning(text):
    """Live processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if text in cmdline and _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_leaves_no_namespace_interface_or_process(ip, veth, tmp_path, sig):
    """`satemu quic --realtime` stopped by SIGTERM (or SIGINT) once all its children run removes
    its two namespaces, with the veth ends in them, and every process it started (captures, our
    server, a --client-cmd shell and the child that shell started), then exits with 128 + the
    signal's number and says so on one line."""
    a, b = veth()
    out = tmp_path / "run"
    client = "{python} -c 'import time; time.sleep(60)' {outdir}; exit 1"   # a shell + a child
    run = subprocess.Popen([sys.executable, "-m", "satemu.cli", "quic", "--realtime",
                            "--client-if", a, "--server-if", b, "--size", "10KB",
                            "--client-cmd", client, "--max-time", "60", "--out", str(out)],
                           cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    mine = (f"satemu-c{run.pid}-0", f"satemu-s{run.pid}-0")
    try:
        deadline = time.monotonic() + 30
        children = []
        while len(children) < 5:            # two captures, the server, the shell, its child
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, f"the run did not start its children: {children}"
            time.sleep(0.05)
            children = [int(p) for ns in mine
                        for p in _run(ip, "netns", "pids", ns).stdout.split()]
        run.send_signal(sig)
        _stdout, stderr = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 128 + sig, stderr
    said = [line for line in stderr.splitlines() if "stopped by" in line]
    assert len(said) == 1 and said[0].startswith(f"satemu: stopped by {sig.name}: stopped 4 ") \
        and all(ns in said[0] for ns in mine), stderr
    names = _run(ip, "netns", "list").stdout
    assert not any(ns in names for ns in mine)
    for ifname in (a, b):                   # the veth went with its namespace
        assert _run(ip, "link", "show", "dev", ifname).returncode != 0
    assert not [p for p in children if _alive(p)]
    assert not _pids_mentioning(str(out))   # nothing else it started either


def test_a_run_sweeps_what_dead_runs_left_and_only_that(ip, veth, tmp_path, monkeypatch):
    """At start a run removes the namespaces named as ours whose owner PID is dead (with the
    process and the interface left in them) and says how many; a live owner's stay. A private
    prefix keeps this test's leftovers away from other runs' sweeps."""
    prefix = f"sattest{PID % 10000}"
    dead = subprocess.Popen(["true"])
    dead.wait()
    owner = subprocess.Popen(["sleep", "60"])
    leftover, live = f"{prefix}-c{dead.pid}-0", f"{prefix}-s{owner.pid}-0"
    stray_if, stray_peer = veth()
    lingering = None
    try:
        for ns in (leftover, live):
            assert _run(ip, "netns", "add", ns).returncode == 0
        assert _run(ip, "link", "set", "dev", stray_if, "netns", leftover).returncode == 0
        lingering = subprocess.Popen([ip, "netns", "exec", leftover, "sleep", "60"],
                                     start_new_session=True)
        while str(lingering.pid) not in _run(ip, "netns", "pids", leftover).stdout.split():
            assert lingering.poll() is None
            time.sleep(0.02)

        said = []
        monkeypatch.setattr(rt.runner, "Namespaces",
                            functools.partial(netns.Namespaces, prefix=prefix))
        client_if, server_if = veth()
        t = rt.run_realtime(client_if, server_if, 20_000, outdir=tmp_path, timeout=30,
                            say=said.append)
        assert t.completed, t.error
        assert said == [f"swept 1 namespace(s) left by runs no longer running: {leftover}"]
        assert json.loads((tmp_path / "realtime.json").read_text())["swept"] == [leftover]
        names = _run(ip, "netns", "list").stdout.split()
        assert leftover not in names and live in names
        assert lingering.wait(timeout=5) == -signal.SIGKILL
        deadline = time.monotonic() + 5                  # the veth dies with its namespace
        while _run(ip, "link", "show", "dev", stray_peer).returncode == 0:
            assert time.monotonic() < deadline, "the leftover's interface is still there"
            time.sleep(0.05)
        assert netns.sweep_leftovers(prefix, ip) == []   # the live owner's stays
    finally:
        owner.kill()
        owner.wait()
        if lingering is not None and lingering.poll() is None:
            lingering.kill()
            lingering.wait()
        for ns in (leftover, live):
            _run(ip, "netns", "del", ns)


# ---------------------------------------------------------------------------------------------
# the CI rule for skips (tests/system/conftest.py)

def test_ci_fails_a_skipped_realtime_test_unless_skips_are_allowed():
    """Under CI=true, a real-time test that skips for want of a privilege (here the veth one and
    the TAP one) fails the run, naming the privilege and SATEMU_ALLOW_SKIP; with
    SATEMU_ALLOW_SKIP=1 it is a skip again. SATEMU_TEST_AS_UNPRIVILEGED=1 makes the fixtures act
    as if this were not root."""
    here = Path(__file__).relative_to(ROOT)
    veth_test = f"{here}::test_missing_interface_is_a_clear_error_and_leaves_nothing"
    tap_test = f"{here.with_name('test_tap.py')}::test_realtime_quic_through_the_simulated_board"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k != "SATEMU_ALLOW_SKIP"}
    env.update(CI="true", SATEMU_TEST_AS_UNPRIVILEGED="1")

    def pytest_run(*nodes, **extra):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *nodes], cwd=ROOT, env={**env, **extra}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
        return done.returncode, done.stdout, done.stdout.splitlines()[-1]

    status, out, summary = pytest_run(veth_test, tap_test)
    assert status == 1 and "2 errors" in summary, out
    assert "real-time test needs root" in out and "TAP test needs root" in out, out
    assert "set SATEMU_ALLOW_SKIP=1 to let it skip" in out, out
    status, out, summary = pytest_run(tap_test, SATEMU_ALLOW_SKIP="1")    # the quicker of two
    assert status == 0 and "1 skipped" in summary, out
