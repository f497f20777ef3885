# SPDX-License-Identifier: BSD-2-Clause
"""Bandwidth-on-Demand end to end on the simulated board: a BoD profile loaded through the CLI,
frames on port A's wire, and the per-superframe ring read back over the UART equal to the
reference model's, superframe by superframe."""

import csv
import random

from satemu.model.bod import superframe_cycles
from satemu.model.channel import simulate
from satemu.base.params import ChannelRegs
from satemu.cli import main
from satemu.box.device import Device

PROFILE = """
name = "bod-e2e"
[forward]
rate = "10 Mbit/s"
delay = "10 ms"
[return]
delay = "10 ms"
queue = "200 packets"
[return.bod]
superframe = "5 ms"
slots = 20
slot_bytes = 188
cra = "100 kbit/s"
rbdc_max = "2 Mbit/s"
rbdc_timeout = 6
vbdc_max = "8 KB"
request_period = 1
latency = 4
background = [{level = 0.2, duration = "40 ms"}, {level = 0.9, duration = "30 ms"}]
background_repeat = true
"""


def test_bod_ring_over_the_uart_matches_the_model(url, board_state, tmp_path, capsys):
    from sim.frames import RETURN, expected_egress, observed_egress, run_traffic

    profile = tmp_path / "bod-e2e.toml"
    profile.write_text(PROFILE)
    assert main(["load", str(profile), "--port", url]) == 0
    with Device(url) as dev:
        dev.reset_stats()
    rng = random.Random(11)
    sent = {RETURN: [(bytes(rng.randrange(256) for _ in range(rng.choice([60, 120, 1200, 1500]))),
                      False) for _ in range(120)]}
    traffic, models, taken = run_traffic(url, board_state["eth_port"], sent, load=0.02)
    # Every frame leaves at the cycle the model says, after waiting for its slots.
    assert observed_egress(traffic, RETURN) == expected_egress(sent, models, taken)[RETURN]

    out = tmp_path / "trace.csv"
    plot = tmp_path / "trace.png"
    assert main(["bod-trace", "--port", url, "--out", str(out), "--plot", str(plot)]) == 0
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert plot.stat().st_size > 0 and rows
    with Device(url) as dev:
        trace = dev.bod_trace()
        regs = ChannelRegs(**dev.get_profile(RETURN), mem_size=dev.hello()["mem_words"])
    from satemu.base.boards import BOARDS
    arrivals = traffic.arrivals(RETURN)
    model = simulate(zip(arrivals, [len(sent[RETURN][i][0]) for i in taken[RETURN]],
                         [False] * len(arrivals)), regs, BOARDS["sim"].channel_params(RETURN),
                     bod_start=trace.start,
                     until=trace.start + trace.count * superframe_cycles(regs) - 1)
    assert not trace.lost and trace.records[0].sf == 0
    assert len(model.bod) == trace.count
    assert trace.records == model.bod[:len(trace.records)]
    # The CSV carries the same superframes: the grants and the use the ring recorded.
    assert [int(r["granted_slots"]) for r in rows[:len(model.bod)]] == \
        [r.granted for r in model.bod][:len(rows)]
    assert [int(r["used_slots"]) for r in rows[:len(model.bod)]] == \
        [r.used for r in model.bod][:len(rows)]
    # The traffic really exercised BoD: requests, RBDC and VBDC grants, a full pool.
    assert any(r.g_rbdc for r in model.bod) and any(r.g_vbdc for r in model.bod)
    assert any(r.bg == 18 for r in model.bod) and max(r.backlog for r in model.bod) > 10_000
    with Device(url) as dev:          # leave the board as the other system tests expect it
        dev.reset_stats()


# A short-delay BoD link, so a QUIC download across it takes seconds of link time.
QUIC_PROFILE = """
name = "bod-quic"
[forward]
rate = "10 Mbit/s"
delay = "20 ms"
[return]
delay = "20 ms"
queue = "100 packets"
[return.bod]
superframe = "10 ms"
slots = 40
slot_bytes = 188
cra = "50 kbit/s"
rbdc_max = "2 Mbit/s"
rbdc_timeout = 8
vbdc_max = "16 KB"
latency = 6
background = 0.5
"""


def test_experiment_under_bod_reports_grants(board_state, tmp_path, capsys):
    """`satemu experiment ack-policy` over a BoD return link: both policies complete, and the
    report gives the slots granted and used and the time to the first demand-driven grant, with
    a demand-against-grant plot; 1:10 ACKing uses fewer return slots than 1:2."""
    import json
    from satemu.cli import main
    profile = tmp_path / "bod-quic.toml"
    profile.write_text(QUIC_PROFILE)
    out = tmp_path / "exp"
    assert main(["experiment", "ack-policy", "--profile", str(profile), "--sizes", "300KB",
                 "--policies", "ratio:2,ratio:10", "--port", board_state["url"],
                 "--eth-port", str(board_state["eth_port"]), "--out", str(out),
                 "--max-time", "30"]) == 0
    report = (out / "report.md").read_text()
    assert "granted slots" in report and "first grant s" in report
    runs, returns = {}, {}
    for ack in ("ratio2", "ratio10"):
        run = out / "bod-quic" / "300KB" / ack
        result = json.loads((run / "result.json").read_text())
        runs[ack], returns[ack] = result["bod"], result["return_packets"]
        assert (run / "demand_grant.png").stat().st_size > 0
        b = runs[ack]
        assert not b["lost"] and b["superframes"] > 10
        assert 0 < b["used_slots"] <= b["granted_slots"]
        # The first RBDC/VBDC grant needs a request and the 6-superframe latency after it.
        assert b["time_to_first_grant_s"] >= 0.06
    assert runs["ratio10"]["used_slots"] < runs["ratio2"]["used_slots"]
    assert returns["ratio10"] < returns["ratio2"]
    with Device(board_state["url"]) as dev:
        dev.reset_stats()



# A link without BoD, and the same with PROFILE's BoD return; a long return delay keeps frames
# in the delay line for seconds of wall time while a load is tried.
HELD = """
name = "held"
[forward]
delay = "10 ms"
[return]
delay = "400 ms"
queue = "200 packets"
"""


def test_a_bod_change_under_traffic_is_refused_whole(url, board_state, tmp_path, capsys):
    """Loading a BoD profile while the return delay line holds frames is refused before
    anything is applied, and `satemu load` says so and exits non-zero; once the frames have
    left, the same load is applied whole."""
    from satemu.base.ether import to_wire
    from satemu.link.profile import parse_profile
    from satemu.base.validate import profile_fields
    from sim.frames import INGRESS_PORT, RETURN, EthPorts
    held, bod = tmp_path / "held.toml", tmp_path / "held-bod.toml"
    held.write_text(HELD)
    bod.write_text(HELD.replace('"held"', '"held-bod"') + "[return.bod]"
                   + PROFILE.split("[return.bod]")[1])
    assert main(["load", str(held), "--port", url]) == 0
    with Device(url) as dev:
        before = dev.get_profile(RETURN)
        want = profile_fields(parse_profile(bod.read_text()).check(dev.hardware())["return"])
    assert not before["bod_flags"] and want["bod_flags"]
    with EthPorts(board_state["eth_port"]) as eth:
        start = eth.now() + 20_000
        for i in range(5):
            eth.send(INGRESS_PORT[RETURN], to_wire(bytes([i + 1]) * 200), start + 2_000 * i)
        eth.wait({RETURN: 5}, {})                          # in the delay line: 400 ms to go
        capsys.readouterr()
        assert main(["load", str(bod), "--port", url]) == 2
        err = capsys.readouterr().err
        assert ("the return channel's BoD settings change only while its delay line is empty"
                in err and "nothing was applied" in err and "Traceback" not in err)
        with Device(url) as dev:
            assert dev.get_profile(RETURN) == before        # nothing in force changed
        eth.wait({}, {RETURN: 5})                          # the frames have left
    assert main(["load", str(bod), "--port", url]) == 0
    with Device(url) as dev:
        assert dev.get_profile(RETURN) == want
        dev.reset_stats()
