# SPDX-License-Identifier: BSD-2-Clause
"""A scenario in real time (satemu.quic.realtime.scenario): each terminal's host in a namespace
of its own with the terminal's MAC, every flow's server behind the other interface, both stacks
and every kind of workload (a download over HTTP/3), the results built from captures. The link
is a veth pair: no emulator in between (tests/system/test_tap.py runs one across the simulated
board)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from satemu.base.pcapng import OUTBOUND, read_pcapng
from satemu.quic.afpacket import read_capture
from satemu.quic.netns import RealtimeError, namespace_owner
from satemu.quic.realtime.scenario import run_realtime_scenario, scenario_hosts
from satemu.quic.scenario import parse_scenario

SCENARIO = """
name = "rt-mixed"
profile = "geo-shared-bod"
seed = 5

[[flow]]
name = "download"
terminal = "client"
ack = "ratio:10"
max_datagram = 1280
workload = {kind = "bulk", size = "300 KB", protocol = "h3"}

[[flow]]
name = "objects"
terminal = "neighbour"
stack = "quinn"
workload = {kind = "objects", sizes = ["40 KB", "100 KB", "20 KB"], order = "parallel", \
over = "connections"}

[[flow]]
name = "upload"
terminal = "neighbour"
start = "0.3 s"
workload = {kind = "upload", size = "200 KB"}

[[flow]]
name = "sequence"
terminal = "client"
stack = "quinn/aioquic"
workload = {kind = "objects", sizes = ["30 KB", "30 KB"], over = "connections"}
"""


def _ours(ip):
    names = subprocess.run([ip, "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in names.splitlines()
            if line.split() and namespace_owner(line.split()[0]) == os.getpid()]


@pytest.fixture(scope="module")
def done(realtime_ip, veth, tmp_path_factory):
    """The scenario's run, once: (ScenarioRun, outdir)."""
    out = tmp_path_factory.mktemp("rt-scenario")
    sc = parse_scenario(SCENARIO)
    a, b = veth()
    try:
        run = run_realtime_scenario(a, b, sc, max_seconds=60, outdir=out)
    finally:
        assert not _ours(realtime_ip), "namespaces left behind"
    from satemu.report.flows import write_scenario
    write_scenario(run, out)
    return run, out


def test_every_flow_completes_with_its_objects(done):
    run, out = done
    s = json.loads((out / "result.json").read_text())
    assert s["engine"] == "realtime" and s["completed"], [f["error"] for f in s["flows"]]
    sizes = {f["name"]: [o["size"] for o in f["objects"]] for f in s["flows"]}
    assert sizes == {"download": [300_000], "objects": [40_000, 100_000, 20_000],
                     "upload": [200_000], "sequence": [30_000, 30_000]}
    for f in s["flows"]:
        for o in f["objects"]:
            assert o["error"] is None and 0 <= o["requested_s"] <= o["completed_s"]
    seq = s["flows"][3]["objects"]              # the second object waits for the first
    assert seq[1]["requested_s"] >= seq[0]["completed_s"]
    assert s["flows"][1]["connections"] == 3 and s["flows"][3]["connections"] == 2
    assert [r.split(",")[0] for r in (out / "flows.csv").read_text().splitlines()[1:]] == \
        ["download", "objects", "upload", "sequence"]


def test_every_datagram_is_captured_and_matched_to_its_senders_record(done):
    run, out = done
    info = json.loads((out / "realtime.json").read_text())
    conns = info["connections"]
    assert len(conns) == 2 * 7                  # 1 + 3 + 1 + 2 connections, both ways
    for key, c in conns.items():
        assert c["logged"] == c["captured_out"] == c["matched"] > 0, key
    assert info["send_errors"] == 0 and run.unrouted == 0 and run.undecodable == 0
    assert len(run.sent) == sum(c["captured_out"] for c in conns.values())
    # the veth loses nothing: every datagram sent is delivered, to its own flow, and found at
    # the other end by its payload's digest, a few microseconds later
    s = json.loads((out / "result.json").read_text())
    for way in ("forward", "return"):
        for i in range(4):
            n = sum(p.direction == way and p.flow == i for p in run.sent)
            assert n == sum(d.direction == way and d.flow == i for d in run.delivered)
            m = s["flows"][i]["one_way"][way]
            assert m["datagrams"] == n and m["lost"] == 0
            assert 0 < m["p50_ms"] <= m["p99_ms"] <= m["max_ms"] < 100
        assert sum(m[way]["datagrams"] for m in s["measured_by_terminal"].values()) == \
            sum(p.direction == way for p in run.sent)


def test_each_flow_leaves_with_its_terminals_mac_and_address(done):
    run, out = done
    sc = run.scenario
    terms = {t.name: t.key.to_bytes(6, "big") for t in sc.profile.terminals.framed}
    ports = {}
    for i, f in enumerate(sc.flows):
        for j in range(len(f.workload.connections())):
            ports[f.client_at(j).port] = (f.terminal, f.client.ipv4)
    seen = set()
    cap = read_pcapng(out / "client.pcapng")
    for p in cap.packets:
        d = p.data
        if p.direction != OUTBOUND or d[12:14] != b"\x08\x00" or d[23] != 17:
            continue
        sport = int.from_bytes(d[34:36], "big")
        terminal, ip = ports[sport]
        assert d[6:12] == terms[terminal] and ".".join(map(str, d[26:30])) == ip
        seen.add(terminal)
    assert seen == {"client", "neighbour"}
    assert {h["mac"] for h in json.loads((out / "realtime.json").read_text())["hosts"]} == \
        {m.hex(":") for m in terms.values()}


def test_a_flow_starts_at_its_start_time(done):
    run, out = done
    first = min(p.cycle for p in run.sent if p.flow == 2 and p.direction == "return")
    assert first - run.origin >= 300_000_000                 # ns: start = "0.3 s"
    assert min(p.cycle for p in run.sent) - run.origin < 300_000_000


def test_the_captures_carry_the_secrets_and_tshark_decrypts_them(done):
    run, out = done
    keys = (out / "keys.log").read_text()
    assert keys.count("CLIENT_TRAFFIC_SECRET_0") == 7        # every connection's client
    shown = subprocess.run([shutil.which("tshark") or "tshark", "-r", str(out / "server.pcapng"),
                            "-Y", "quic.stream.stream_id", "-T", "fields", "-e", "udp.srcport",
                            "-e", "udp.dstport"], capture_output=True, text=True, check=True)
    clients = {f.client_at(j).port for f in run.scenario.flows
               for j in range(len(f.workload.connections()))}
    ports = {int(p) for line in shown.stdout.splitlines() for p in line.split()} - {4433}
    assert ports == clients                  # a STREAM frame decrypted on every connection


def test_read_capture_keeps_only_the_runs_host_pairs(done):
    run, out = done
    pairs = {(f.client.ipv4, f.server.ipv4) for f in run.scenario.flows}
    both, _ = read_capture(out / "server.pcapng", pairs=pairs)
    one, meta = read_capture(out / "server.pcapng", pairs={("10.0.0.2", "10.0.0.1")})
    assert 0 < len(one) < len(both) and meta["other"] > 0
    assert {f.src for f in one} | {f.dst for f in one} == {"10.0.0.2", "10.0.0.1"}


def test_hosts_refuse_one_address_on_two_terminals():
    sc = parse_scenario(SCENARIO.replace('terminal = "neighbour"\nstack',
                                         'terminal = "neighbour"\nclient_ip = "10.0.0.2"\nstack'))
    with pytest.raises(RealtimeError, match="flow.2.client_ip: 10.0.0.2 is also a host's"):
        scenario_hosts(sc)
    hosts = scenario_hosts(parse_scenario(SCENARIO))
    assert hosts == [("02:53:41:54:00:02", ("10.0.0.2",), [0, 3], None),
                     ("02:53:41:54:00:12", ("10.0.1.2",), [1, 2], None)]


def test_a_missing_interface_is_one_line_and_leaves_nothing(realtime_ip, veth, tmp_path):
    a, _b = veth()
    with pytest.raises(RealtimeError, match="does not exist"):
        run_realtime_scenario(a, "nosuchif0", parse_scenario(SCENARIO), outdir=tmp_path)
    assert not _ours(realtime_ip)
    assert subprocess.run([realtime_ip, "link", "show", "dev", a],
                          capture_output=True).returncode == 0


VLAN_PROFILE = (Path(__file__).resolve().parents[2] / "docs" / "examples" /
                "tap-terminals.toml").read_text().replace('match = "mac"', 'match = "vlan"') \
    .replace('mac = "02:53:41:54:00:02"', "vlan = 100") \
    .replace('mac = "02:53:41:54:00:12"', "vlan = 200")


def test_a_vlan_terminals_scenario_in_real_time(realtime_ip, veth, tmp_path):
    """Terminals told apart by VLAN: each host on an 802.1Q interface of the client's, the
    server on one a VLAN; every datagram crosses tagged with its terminal's VLAN ID. A kernel
    without 802.1Q interfaces (this suite's machines: CONFIG_VLAN_8021Q unset) is refused in one
    line, leaving nothing behind."""
    (tmp_path / "vlan.toml").write_text(VLAN_PROFILE)
    sc = parse_scenario(SCENARIO.replace('"geo-shared-bod"', '"vlan.toml"'), "v", tmp_path)
    a, b = veth()
    try:
        run = run_realtime_scenario(a, b, sc, max_seconds=60, outdir=tmp_path / "out")
    except RealtimeError as e:
        assert str(e).startswith("this kernel has no 802.1Q VLAN interfaces"), e
        assert "\n" not in str(e) and not _ours(realtime_ip)
        return
    assert all(f.done for f in run.flows), [f.error for f in run.flows]
    want = {f.client.ipv4: f.client.vlan for f in sc.flows}
    for role in ("client", "server"):
        frames, _ = read_capture(tmp_path / "out" / f"{role}.pcapng",
                                 pairs={(ip, "10.0.0.1") for ip in want})
        assert frames and all(f.vlan == want[f.src if f.src in want else f.dst]
                              for f in frames)


def test_a_capture_shows_the_8021q_tag_the_wire_carried(realtime_ip, veth, tmp_path):
    """A tagged frame sent on one end of a veth is captured on the other with its tag in place,
    though the kernel keeps it beside the frame (VLAN offload: PACKET_AUXDATA)."""
    import socket
    import threading
    import time
    from satemu.quic.afpacket import capture
    from satemu.quic.packets import CLIENT, SERVER, Endpoint, build_frame
    a, b = veth()
    for dev in (a, b):
        subprocess.run([realtime_ip, "link", "set", "dev", dev, "up"], check=True)
    stop = threading.Event()
    out, ready = tmp_path / "b.pcapng", tmp_path / "b.ready"
    t = threading.Thread(target=capture, args=(b, out, ready), kwargs={"should_stop": stop.is_set})
    t.start()
    try:
        while not ready.exists():
            assert t.is_alive()
        tagged = Endpoint(CLIENT.mac, CLIENT.ipv4, CLIENT.port, 100)
        frame = build_frame(tagged, SERVER, b"\x40" * 100, 1)
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
            s.bind((a, 0))
            s.send(frame)
        time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    got = [p for p in read_pcapng(out).packets        # not the kernel's own (IPv6 ND)
           if p.direction != OUTBOUND and p.data[6:12] == CLIENT.mac]
    assert [p.data for p in got] == [frame]
    frames, _ = read_capture(out)
    assert [(f.vlan, f.udp_size, f.length) for f in frames] == [(100, 100, len(frame))]


def test_sigterm_leaves_no_namespace_interface_or_process(realtime_ip, veth, tmp_path):
    """`satemu quic --scenario --realtime` stopped by SIGTERM once every child runs removes its
    namespaces (the client's, the server's and each host's, with the veth and the macvlans)
    and every process it started, then exits 143 and says so on one line."""
    import signal
    import sys
    import time
    (tmp_path / "sc.toml").write_text(SCENARIO.replace('start = "0.3 s"', 'start = "60 s"'))
    a, b = veth()
    run = subprocess.Popen([sys.executable, "-m", "satemu.cli", "quic", "--scenario", "sc.toml",
                            "--realtime", "--client-if", a, "--server-if", b, "--max-time",
                            "120", "--out", "out"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    mine = [f"satemu-c{run.pid}-0", f"satemu-s{run.pid}-0", f"satemu-t{run.pid}-0-0",
            f"satemu-t{run.pid}-0-1"]
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "out" / "go").exists():       # every child ready, the run on
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.05)
        children = [int(p) for ns in mine for p in subprocess.run(
            [realtime_ip, "netns", "pids", ns], capture_output=True, text=True).stdout.split()]
        assert len(children) == 5                # two captures, the server, two hosts' clients
        run.send_signal(signal.SIGTERM)
        _out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 143, err
    said = [line for line in err.splitlines() if "stopped by" in line]
    assert len(said) == 1 and said[0].startswith("satemu: stopped by SIGTERM: stopped 5 ") \
        and all(ns in said[0] for ns in mine), err
    assert not _ours(realtime_ip) and not set(mine) & set(
        subprocess.run([realtime_ip, "netns", "list"], capture_output=True, text=True).stdout
        .split())
    assert subprocess.run([realtime_ip, "link", "show", "dev", a],
                          capture_output=True).returncode != 0
    assert not [p for p in children if os.path.exists(f"/proc/{p}")]
