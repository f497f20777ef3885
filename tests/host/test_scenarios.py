# SPDX-License-Identifier: BSD-2-Clause
"""Scenarios (satemu.quic.scenario): several flows of any workload in one virtual time on the
model engine; each workload's bytes arrive exactly, its objects in the order it implies, their
times at the flows' own deliveries; bad scenario files refused in one line."""

import pytest

from satemu.quic.cosim import differences
from satemu.quic.scenario import ScenarioError, parse_scenario, run_scenario
from satemu.quic.workload import Workload, parse_workload
from satemu.report.flows import jain, summarize_scenario

# Two terminals with frames on a short BoD path, and a synthetic one loading the pool.
PROFILE = """
name = "short-shared"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
[return]
delay = "10 ms"
queue = "50 packets"
[return.bod]
superframe = "26.5 ms"
slots = 140
slot_bytes = 188
cra = "100 kbit/s"
rbdc_max = "1.5 Mbit/s"
rbdc_timeout = 8
vbdc_max = "64 KB"
latency = 4
[terminals]
match = "mac"
[[terminal]]
name = "a"
mac = "02:53:41:54:00:02"
[[terminal]]
name = "b"
mac = "02:53:41:54:00:12"
[[terminal]]
name = "load"
demand = { kind = "constant", rate = "2 Mbit/s" }
"""

FLOWS = """
name = "mixed"
profile = "{profile}"
seed = 3

[[flow]]
name = "bulk"
terminal = "a"
ack = "ratio:10"
workload = {{kind = "bulk", size = "120 KB"}}

[[flow]]
name = "parallel"
terminal = "b"
stack = "quinn"
start = "50 ms"
workload = {{kind = "objects", sizes = ["40 KB", "25 KB", "10 KB"], order = "parallel"}}

[[flow]]
name = "sequence"
terminal = "b"
cc = "cubic"
workload = {{kind = "objects", sizes = ["30 KB", "5 KB"], order = "sequence"}}

[[flow]]
name = "connections"
terminal = "a"
stack = "aioquic/quinn"
workload = {{kind = "objects", sizes = ["20 KB", "15 KB"], over = "connections"}}

[[flow]]
name = "upload"
terminal = "b"
workload = {{kind = "upload", size = "30 KB"}}
"""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    d = tmp_path_factory.mktemp("scenario")
    (d / "short-shared.toml").write_text(PROFILE)
    sc = parse_scenario(FLOWS.format(profile="short-shared.toml"), "mixed.toml", d)
    return sc, run_scenario("model", sc, max_seconds=30)


def test_every_flow_gets_its_bytes_in_the_order_its_workload_implies(mixed):
    sc, run = mixed
    assert [f.done for f in run.flows] == [True] * 5 and run.unrouted == run.undecodable == 0
    for f in run.flows:
        objects = [o for c in f.clients for o in c.app.objects]
        assert [o.size for o in sorted(objects, key=lambda o: o.index)] == \
            list(f.spec.workload.sizes)
        for o in objects:
            assert o.error is None and o.completed_at is not None
            if o.method == "GET":
                assert o.received == o.size          # every byte, checked on arrival
            else:
                assert o.answer == f"OK {o.size}\n".encode()
        start = float(f.spec.start)
        times = sorted(objects, key=lambda o: o.index)
        if f.spec.workload.parallel:
            assert all(o.requested_at == start for o in times)
        else:                       # each asked for when the one before completed
            assert times[0].requested_at == start
            assert all(b.requested_at == a.completed_at for a, b in zip(times, times[1:]))
    # the servers took the uploads whole, and served each download's size
    up = run.flows[4]
    assert list(up.servers[0].served.values()) == [0]
    conns = run.flows[3]
    assert [list(s.served.values()) for s in conns.servers] == [[20_000], [15_000]]
    assert len({c.local.port for c in conns.clients}) == 2


def test_object_times_are_the_flows_own_deliveries(mixed):
    """Each object completes at the cycle one of its flow's frames was delivered (toward its
    client; an upload's answer too), never before its flow started."""
    sc, run = mixed
    for i, f in enumerate(run.flows):
        cycles = {d.cycle for d in run.delivered if d.flow == i and d.direction == "forward"}
        for c in f.clients:
            for o in c.app.objects:
                cycle = run.origin + round(o.completed_at * run.f_clk)
                assert cycle in cycles, (f.spec.name, o.index)
                assert o.requested_at >= float(f.spec.start)
    # every datagram and delivery is some flow's: the flows' records add up to the run's
    assert {p.flow for p in run.sent} == set(range(5))
    assert all(d.flow >= 0 for d in run.delivered)


def test_the_summary_per_flow_and_terminal(mixed):
    sc, run = mixed
    s = summarize_scenario(run)
    flows = {f["name"]: f for f in s["flows"]}
    assert flows["bulk"]["bytes"] == 120_000 and flows["bulk"]["completed"]
    assert flows["bulk"]["ack_ratio"] > flows["sequence"]["ack_ratio"]      # 1:10 against 1:2
    assert flows["upload"]["return_bytes"] > 30_000 > flows["upload"]["forward_bytes"]
    assert flows["parallel"]["start_s"] == 0.05 and flows["connections"]["connections"] == 2
    assert sum(f["forward_packets"] + f["return_packets"] for f in s["flows"]) == len(run.sent)
    terms = {t["terminal"]: t for t in s["terminals"]}
    assert set(terms) == {"a", "b", "load"} and terms["load"]["synthetic"]
    assert terms["a"]["used_slots"] > 0 and terms["b"]["used_slots"] > 0
    assert terms["load"]["granted_slots"] > 0 and terms["load"]["return_bytes"] == 0
    assert terms["a"]["return_bytes"] + terms["b"]["return_bytes"] == \
        sum(f["return_bytes"] for f in s["flows"])
    assert terms["a"]["queueing_delay_s_est"] > 0
    # the channels' own counters of each terminal's frames: all its hosts sent came in
    for name in ("a", "b"):
        c = terms[name]["counters"]
        assert c["return"]["rx_frames"] == terms[name]["return_packets"]
        assert c["forward"]["rx_frames"] == sum(
            f["forward_packets"] for f in s["flows"] if f["terminal"] == name)
    assert terms["load"]["counters"] is None
    assert 0 < s["fairness"]["goodput_jain"] <= 1 and 0 < s["fairness"]["slots_granted_jain"] <= 1


def test_a_scenario_repeats_exactly(mixed):
    sc, run = mixed
    again = run_scenario("model", sc, max_seconds=30)
    assert differences(run, again) == []


def test_jain():
    assert jain([1, 1, 1]) == 1 and jain([1, 0, 0, 0]) == 0.25
    assert jain([]) is None and jain([0, 0]) is None


@pytest.mark.parametrize("table, error", [
    ({"kind": "objects", "sizes": ["0 B"]}, "at least 1"),
    ({"kind": "objects", "sizes": []}, "at least one"),
    ({"kind": "objects", "sizes": ["1 KB"], "order": "random"}, "order"),
    ({"kind": "bulk"}, "needs its size"),
    ({"kind": "upload", "size": "1 KB", "order": "parallel"}, "only objects"),
    ({"kind": "stream", "size": "1 KB"}, "kind"),
    ({"kind": "objects", "sizes": ["1 KB"] * 10, "count": 11}, "at most 100"),
    ({"kind": "bulk", "size": "20 GB"}, "at most"),
    ("1 MB", "a table"),
    ({"kind": "bulk", "size": "1 KB", "protocol": "h2"}, "protocol"),
])
def test_bad_workloads(table, error):
    with pytest.raises(ValueError, match=error) as e:
        parse_workload("flow.1.workload", table)
    assert "\n" not in str(e.value) and str(e.value).startswith("flow.1.workload")


def test_workload_connections():
    w = Workload("objects", (1, 2, 3), "sequence", "connections")
    assert [[r.size for r in c] for c in w.connections()] == [[1], [2], [3]]
    assert Workload.bulk(5).connections()[0][0].line() == b"GET 5\n"


def _scenario(tmp_path, flows: str, profile: str = "short-shared.toml"):
    (tmp_path / "short-shared.toml").write_text(PROFILE)
    return parse_scenario(f'profile = "{profile}"\n' + flows, "bad.toml", tmp_path)


@pytest.mark.parametrize("flows, error", [
    ('[[flow]]\nterminal = "c"\n', r"flow\.1\.terminal: 'c' is not a terminal"),
    ('[[flow]]\nterminal = "load"\n', "synthetic"),
    ('[[flow]]\n', "name the flow's"),
    ('[[flow]]\nterminal = "a"\nclient_port = 5000\n[[flow]]\nterminal = "a"\n'
     'client_port = 5000\n', "two flows on one address and port"),
    ('[[flow]]\nterminal = "a"\nworkload = {kind = "objects", sizes = [0]}\n',
     "at least 1"),
    ('[[flow]]\nterminal = "a"\nstart = "-1 s"\n', "start: expected a time"),
    ('[[flow]]\nterminal = "a"\nspeed = 3\n', "unknown key"),
    ('[[flow]]\nterminal = "a"\ncc = "vegas"\n', r"flow\.1: "),
    ('[[flow]]\nterminal = "a"\nstack = "quinn"\nack = "ratio:10"\n', "aioquic's endpoint"),
    ('[[flow]]\nterminal = "a"\nname = "x"\n[[flow]]\nterminal = "b"\nname = "x"\n',
     "names two flows"),
    ('[[flow]]\nterminal = "a"\nstack = "aioquic/quinn"\n'
     'workload = {kind = "bulk", size = "1 KB", protocol = "h3"}\n',
     r"flow\.1\.workload\.protocol: HTTP/3 runs on aioquic only"),
    ("", "at least one"),
])
def test_bad_scenarios(tmp_path, flows, error):
    with pytest.raises(ScenarioError, match=error) as e:
        _scenario(tmp_path, flows)
    assert "\n" not in str(e.value)


def test_flows_on_terminals_need_a_profile_with_them(tmp_path):
    with pytest.raises(ScenarioError, match="declares no terminals"):
        _scenario(tmp_path, '[[flow]]\nterminal = "a"\n', "short-asym")
    with pytest.raises(ScenarioError, match="profile: .*no built-in"):
        _scenario(tmp_path, '[[flow]]\n', "nowhere")


def test_a_start_beyond_the_time_limit(tmp_path):
    sc = _scenario(tmp_path, '[[flow]]\nterminal = "a"\nstart = "40 s"\n')
    with pytest.raises(ScenarioError, match=r"flow\.1\.start: 40 s is not before"):
        run_scenario("model", sc, max_seconds=30)


def test_a_scenarios_capture(mixed, tmp_path):
    """--pcap: every frame of every flow, with its fate and terminal, the counts agreeing with
    the channels' counters, and every connection's TLS secrets (both stacks')."""
    from satemu.base.pcapng import read_pcapng
    sc, _ = mixed
    run = run_scenario("model", sc, max_seconds=30, pcap=tmp_path / "capture.pcapng")
    assert run.capture["disagreements"] == []
    cap = read_pcapng(tmp_path / "capture.pcapng")
    comments = [c for p in cap.packets for c in p.comments]
    assert any("terminal a" in c for c in comments) and any("terminal b" in c for c in comments)
    keys = (tmp_path / "keys.log").read_text().splitlines()
    randoms = {line.split()[1] for line in keys if line.startswith("CLIENT_TRAFFIC_SECRET_0")}
    assert len(randoms) == sum(len(f.clients) for f in run.flows)       # one a connection


def test_the_run_goes_on_when_a_flow_fails():
    """CoSim.finished: a failed connection (its client's error) ends neither the run nor the
    other flows; a connection waiting for a failed one counts as ended (it never starts)."""
    from types import SimpleNamespace as NS
    from satemu.quic.cosim import CoSim, Pair
    from satemu.quic.packets import CLIENT, SERVER, Endpoint

    def peer(port, done=False, error=None):
        return NS(local=Endpoint(CLIENT.mac, CLIENT.ipv4, port), remote=SERVER, done=done,
                  error=error)
    failed, waiting, running = peer(1, error="reset"), peer(2), peer(3)
    sim = CoSim(None, 1, pairs=[Pair(failed, NS(local=SERVER)), Pair(waiting, NS(local=SERVER),
                                                                  after=0),
                                Pair(running, NS(local=SERVER), flow=1)])
    sim.pairs[0].started = sim.pairs[2].started = True
    assert not sim.finished()                  # flow 1 still runs
    running.done = True
    assert sim.finished()


def test_a_flows_plan_gives_back_the_same_flow():
    """What a real-time run hands its endpoint processes (FlowSpec.to_plan, as JSON) makes the
    very flow again: endpoints, stacks, policy, settings, seed, start and workload."""
    import json
    from satemu.quic.scenario import FlowSpec, builtin_scenarios, parse_scenario
    for name, text in builtin_scenarios().items():
        for f in parse_scenario(text, name).flows:
            assert FlowSpec.from_plan(json.loads(json.dumps(f.to_plan()))) == f, (name, f.name)


def test_http3_carries_every_workload(tmp_path):
    """protocol = "h3": the requests and answers travel as HTTP/3 messages (ALPN h3, HEADERS
    and DATA frames, aioquic's H3Connection on both sides), every byte checked as in the plain
    protocol; the framing costs bytes the plain protocol does not send."""
    flows = ('[[flow]]\nterminal = "a"\nworkload = {kind = "objects", sizes = ["20 KB", '
             '"5 KB"], order = "parallel"PROTO}\n[[flow]]\nterminal = "b"\nworkload = {kind = '
             '"objects", sizes = ["10 KB", "10 KB"], over = "connections"PROTO}\n'
             '[[flow]]\nterminal = "b"\nworkload = {kind = "upload", size = "15 KB"PROTO}\n')
    runs = {}
    for proto in ("plain", "h3"):
        sc = _scenario(tmp_path, flows.replace("PROTO", f', protocol = "{proto}"'))
        runs[proto] = run = run_scenario("model", sc, max_seconds=30)
        assert all(f.done and f.error is None for f in run.flows), [f.error for f in run.flows]
    for f in runs["h3"].flows:
        for c, srv in zip(f.clients, f.servers):
            assert c.conn.tls.alpn_negotiated == "h3" and srv.h3 is not None
            assert sorted(srv.served.values()) == sorted(
                (0 if o.method == "PUT" else o.size) for o in c.app.objects)
    for i in range(3):
        size = {p: sum(x.size for x in r.sent if x.flow == i) for p, r in runs.items()}
        assert size["h3"] > size["plain"], (i, size)
    from satemu.report.flows import write_scenario
    write_scenario(runs["h3"], tmp_path / "out")
    rows = (tmp_path / "out" / "flows.csv").read_text().splitlines()[1:]
    assert [r.split(",")[5] for r in rows] == ["objects/h3", "objects/h3", "upload/h3"]


def test_terminals_told_apart_by_vlan(tmp_path):
    """A profile whose terminals are told apart by VLAN: each flow's frames, both ways, carry
    its terminal's 802.1Q tag, and the channels count them as that terminal's."""
    (tmp_path / "v.toml").write_text(PROFILE.replace('match = "mac"', 'match = "vlan"')
                                     .replace('mac = "02:53:41:54:00:02"', "vlan = 100")
                                     .replace('mac = "02:53:41:54:00:12"', "vlan = 200"))
    sc = parse_scenario('profile = "v.toml"\n[[flow]]\nterminal = "a"\nworkload = {kind = '
                        '"bulk", size = "20 KB"}\n[[flow]]\nterminal = "b"\nworkload = {kind = '
                        '"upload", size = "20 KB"}\n', "v", tmp_path)
    assert [f.client.vlan for f in sc.flows] == [100, 200]
    run = run_scenario("model", sc, max_seconds=30)
    assert all(f.done for f in run.flows)
    for i, name in enumerate(("a", "b")):
        ret = [p for p in run.sent if p.flow == i and p.direction == "return"]
        got = run.terminal_stats["return"][str(i)]
        assert got["rx_frames"] == len(ret) and got["rx_bytes"] == sum(p.size for p in ret)
        fwd = [p for p in run.sent if p.flow == i and p.direction == "forward"]
        assert run.terminal_stats["forward"][str(i)]["rx_frames"] == len(fwd)
    assert run.terminal_stats["return"]["none"]["rx_frames"] == 0
