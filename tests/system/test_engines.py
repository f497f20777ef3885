# SPDX-License-Identifier: BSD-2-Clause
"""The two engines are one: the same QUIC transfer across the simulated board (Verilator) and
across the reference models of its frame path gives the same run, frame for frame. Every
datagram's cycle, every delivery's cycle, every counter of both channels and every BoD record
are compared exactly, for a plain profile, a lossy one and a BoD one.

What the model cannot predict it does not pretend to: an overrun of a channel's ingress FIFO
(a burst on the wire longer than the FIFO absorbs) and a late frame (a memory slower than the
traffic). Each run here asserts that the board had neither (its counters) and that the model
saw no burst that could have caused one (``exactness``); docs/architecture.md, "Two engines"."""

import pytest

from satemu.base.pcapng import read_pcapng
from satemu.quic.cosim import differences
from satemu.quic.engine import model_twin
from satemu.quic.settings import EndpointSettings
from satemu.report.metrics import summarize
from sim.engine import run_transfer

# Short paths, so that each board run takes seconds; losses on both channels, with a timeline
# that changes the rate, the delay (up, then cut) and the loss while the transfer runs; BoD on
# the return, with a timeline that changes its grants, slot bytes, background and delay.
LOSSY = """
name = "short-asym-lossy"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
loss = "3%"
queue = "20 packets"
[return]
rate = "1.5 Mbit/s"
delay = "10 ms"
gilbert_elliott = {p = 0.05, r = 0.5, loss_good = 0.01, loss_bad = 0.3}

[[timeline]]
at = "80 ms"
forward = { rate = "4 Mbit/s", delay = "25 ms" }
[[timeline]]
at = "160 ms"
forward = { delay = "5 ms", loss = "1%" }
[[timeline]]
at = "240 ms"
forward = { rate = "8.5 Mbit/s" }
"""

BOD = """
name = "short-asym-bod"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
[return]
delay = "10 ms"
[return.bod]
superframe = "26.5 ms"
slots = 140
slot_bytes = 188
cra = "100 kbit/s"
rbdc_max = "1.5 Mbit/s"
rbdc_timeout = 8
vbdc_max = "64 KB"
request_period = 1
latency = 4
background = 0.5

[[timeline]]
at = "100 ms"
return = { bod = { cra = "300 kbit/s", slot_bytes = 150 } }
[[timeline]]
at = "200 ms"
return = { delay = "20 ms", bod = { background = 0.3, rbdc_max = "1 Mbit/s" } }
"""

# Three terminals on the BoD pool: the client's (satemu.quic.packets.CLIENT's MAC), carrying the
# download's ACKs, and two synthetic ones whose demand loads the pool (docs/bod.md, "Terminals").
TERMS = """
name = "short-asym-terminals"
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
name = "client"
mac = "02:53:41:54:00:02"
[[terminal]]
name = "load"
count = 2
demand = { kind = "onoff", rate = "3 Mbit/s", on = "100 ms", off = "100 ms" }
rbdc_max = "4 Mbit/s"
"""

# Jitter on both channels, kept in order: normal and 25% correlated forward, uniform on the
# return with 1% loss; 2% of the forward frames corrupted (a bit flipped, the FCS recomputed:
# the client's host drops them for their UDP checksum) and 3% of the return frames duplicated
# (the server's QUIC stack discards the copies); a step widens the forward jitter, drops its
# correlation, stops the corruption and raises the duplication to 10%.
JITTER = """
name = "short-asym-jitter"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
jitter = "3 ms"
jitter_distribution = "normal"
jitter_correlation = "25%"
corrupt = "2%"
[return]
rate = "1.5 Mbit/s"
delay = "10 ms"
jitter = "2 ms"
loss = "1%"
duplicate = "3%"

[[timeline]]
at = "120 ms"
forward = { jitter = "6 ms", jitter_correlation = "0%", corrupt = "0%" }
return = { duplicate = "10%" }
"""

# short-asym with ECN marking: CE on ECN-capable packets from 3 ms in the forward queue or 4
# packets queued ahead on the return.
SHORT_ECN = """
name = "short-asym-ecn"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
ecn_step = "3 ms"
[return]
rate = "1.5 Mbit/s"
delay = "10 ms"
ecn_step = "4 packets"
"""

CASES = {
    "plain": ("short-asym", 150_000, "ratio:2", 3),
    "jitter": (JITTER, 150_000, "ratio:2", 9),
    "lossy": (LOSSY, 150_000, "ratio:10", 4),
    "bod": (BOD, 100_000, "adaptive", 5),
    "terminals": (TERMS, 100_000, "ratio:2", 8),
}
# The second stack on the board: a quinn pair with 1280-byte datagrams on the lossy profile, and
# a quinn server sending with BBR that asks an aioquic client for ACK 1:10 (ACK_FREQUENCY across
# the stacks; without loss, as quinn does not resend a lost request: docs/architecture.md), its
# datagrams ECT(1) across a link that marks them.
STACK_CASES = {
    "quinn": (LOSSY, 100_000, "default", 6, ("quinn", "quinn"),
              EndpointSettings(max_datagram=1280)),
    "mixed": (SHORT_ECN, 150_000, "ack-frequency:10", 7, ("aioquic", "quinn"),
              EndpointSettings(cc="bbr", max_datagram=1352, ecn="ect1")),
}


def _profile(tmp_path, case, text) -> str:
    if "\n" not in text:
        return text
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("case", list(STACK_CASES))
def test_second_stack_on_the_board_equals_the_model(board_state, tmp_path, case):
    text, size, ack, seed, stacks, settings = STACK_CASES[case]
    profile = _profile(tmp_path, case, text)
    board = run_transfer(board_state["url"], board_state["eth_port"], profile, size, ack=ack,
                         seed=seed, max_seconds=30, settings=settings, stacks=stacks)
    assert board.completed and board.error is None, board.error
    s = summarize(board)
    assert s["consistency"]["consistent"], s["consistency"]
    assert s["stacks"] == {"client": stacks[0], "server": stacks[1]}
    assert max(r.udp_size for r in board.sent) == settings.max_datagram
    for d in ("forward", "return"):
        assert board.board_stats[d]["drop_overrun"] == 0 and board.board_stats[d]["late"] == 0
    model = model_twin(board, profile, max_seconds=30)
    assert differences(board, model) == []
    # BBR's first flight (quinn's 240,000-byte initial window) can leave port B's wire as a
    # burst near what the ingress FIFO is sure to absorb; the model then cannot promise that the
    # board did not overrun (exact False), and the board's counters above show it did not.
    burst = model.exactness["forward"]
    assert model.exactness["exact"] == (burst["longest_burst_beats"]
                                        <= burst["ingress_fifo_room_beats"])
    if case == "quinn":
        assert board.board_stats["forward"]["drop_loss"] > 0
        _crossed_the_timeline(board)
    if case == "mixed":
        assert board.server_stats["ack_frequency_sent"] >= 1
        assert board.client_stats["ack_frequency_received"] >= 1
        # Every mark the box counted arrived as CE, and the rest as sent, ECT(1).
        assert board.board_stats["forward"]["ce_marked"] > 0
        assert {f.ecn for f in board.fates if f.ecn is not None} == {"ect1", "ce"}
        assert s["fates"]["ce"] == {d: board.board_stats[d]["ce_marked"]
                                    for d in ("forward", "return")}


def _crossed_the_timeline(t) -> None:
    """The transfer ran while every step of its timeline took effect."""
    from satemu.report.metrics import origin_cycle
    start = t.timeline["start_cycle"]
    last = start + round(t.timeline["steps"][-1]["at_s"] * t.f_clk)
    assert origin_cycle(t) < last < t.sent[-1].cycle, (start, last)


def _packets(path):
    """A capture's packets as (interface name, timestamp, bytes, flags, comments)."""
    cap = read_pcapng(path)
    return [(cap.interfaces[p.interface].name, p.timestamp, p.data, p.flags, p.comments)
            for p in cap.packets]


@pytest.mark.parametrize("case", list(CASES))
def test_model_engine_equals_the_board(board_state, tmp_path, case):
    text, size, ack, seed = CASES[case]
    profile = _profile(tmp_path, case, text)
    board = run_transfer(board_state["url"], board_state["eth_port"], profile, size, ack=ack,
                         seed=seed, max_seconds=30, pcap=tmp_path / "board" / "capture.pcapng")
    assert board.completed and board.error is None
    for d in ("forward", "return"):
        # What the model cannot predict did not happen on the board.
        assert board.board_stats[d]["drop_overrun"] == 0 and board.board_stats[d]["late"] == 0
    model = model_twin(board, profile, max_seconds=30,      # with the board's BoD phase
                       pcap=tmp_path / "model" / "capture.pcapng")
    assert model.exactness["exact"]
    assert differences(board, model) == []
    if case in ("lossy", "bod"):
        _crossed_the_timeline(board)
    # The captures too, packet for packet: the board's frames, timed from its cycles and with
    # the fates its channels reported, are the model's; and both agree with the counters.
    assert board.capture["disagreements"] == [] == model.capture["disagreements"]
    assert _packets(tmp_path / "board" / "capture.pcapng") == \
        _packets(tmp_path / "model" / "capture.pcapng")
    # Not vacuous: the runs carried traffic, and the lossy and BoD cases exercised their parts.
    stats = board.board_stats
    assert stats["forward"]["tx_frames"] > 50 and stats["return"]["tx_frames"] > 10
    if case == "lossy":
        assert stats["forward"]["drop_loss"] > 0 and stats["return"]["drop_loss"] > 0
    if case == "jitter":
        assert stats["forward"]["corrupted"] > 0 and board.undecodable > 0
        assert stats["return"]["duplicated"] > 0
    if case in ("bod", "terminals"):
        records = model.bod["records"]
        assert len(records) == len(board.bod["records"]) > 10 and not board.bod["lost"]
        assert sum(r["g_rbdc"] + r["g_vbdc"] for r in records) > 0
        assert sum(r["used"] for r in records) > 0
    if case == "terminals":         # every terminal's records, the synthetic ones requesting
        assert {r["terminal"] for r in records} == {0, 1, 2}
        assert sum(r["g_rbdc"] for r in records if r["terminal"]) > 0
        assert sum(r["used"] for r in records if r["terminal"] == 0) > 0


def test_a_run_killed_mid_transfer_leaves_nothing_for_the_next(board_state, tmp_path):
    """`satemu quic` on the board, killed with SIGKILL while its frames cross the BoD return
    link: the next run finds the board as a fresh one (sim.engine.make_clean: the frames drain,
    the BoD block restarts) and equals the model's run exactly."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    from satemu.box.device import Device

    profile = _profile(tmp_path, "bod", BOD)
    url, eth = board_state["url"], board_state["eth_port"]
    log = tmp_path / "killed.log"
    with open(log, "w") as out:
        killed = subprocess.Popen(
            [sys.executable, "-m", "satemu.cli", "quic", "--profile", profile, "--size", "2MB",
             "--port", url, "--eth-port", str(eth), "--out", str(tmp_path / "killed")],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        # The run holds the board's UART from its load to its end, so it is watched through
        # its progress lines: once the download has bytes, its ACKs cross the BoD return link.
        deadline = time.monotonic() + 300
        while True:
            assert killed.poll() is None, \
                f"the run ended before it could be killed: {log.read_text()[-500:]}"
            assert time.monotonic() < deadline, "the run carried no traffic"
            done = [float(x) for x in re.findall(r"([0-9.]+)%", log.read_text())]
            if any(x > 0 for x in done):
                break
            time.sleep(0.5)
        os.kill(killed.pid, signal.SIGKILL)
        assert killed.wait() == -signal.SIGKILL       # it was running, mid-transfer
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
    with Device(url) as dev:            # what it left: frames in the channels
        left = [dev.get_stats(ch) for ch in (0, 1)]
    assert left[1]["rx_frames"] > 0, log.read_text()[-500:]     # its ACKs had crossed
    text, size, ack, seed = CASES["bod"]
    board = run_transfer(url, eth, profile, size, ack=ack, seed=seed, max_seconds=30)
    assert board.completed and board.error is None
    model = model_twin(board, profile, max_seconds=30)
    assert model.exactness["exact"]
    assert differences(board, model) == [], left


# Several flows in one run (satemu.quic.scenario): two and five flows of mixed workloads and
# both stacks (an upload over HTTP/3), on two terminals with frames and a synthetic one loading
# the pool.
SCENARIOS = {
    "two-flows": """
[[flow]]
terminal = "client"
ack = "ratio:10"
workload = {kind = "bulk", size = "60 KB"}
[[flow]]
terminal = "neighbour"
stack = "quinn"
start = "30 ms"
workload = {kind = "objects", sizes = ["20 KB", "10 KB"], order = "parallel"}
""",
    "five-flows": """
[[flow]]
terminal = "client"
workload = {kind = "bulk", size = "40 KB"}
[[flow]]
terminal = "neighbour"
workload = {kind = "objects", sizes = ["15 KB", "5 KB"], order = "sequence"}
[[flow]]
terminal = "neighbour"
stack = "aioquic/quinn"
workload = {kind = "objects", sizes = ["10 KB", "10 KB"], over = "connections"}
[[flow]]
terminal = "client"
workload = {kind = "upload", size = "12 KB", protocol = "h3"}
[[flow]]
terminal = "neighbour"
stack = "quinn"
start = "20 ms"
workload = {kind = "bulk", size = "30 KB"}
""",
}


SCENARIOS["two-flows-vlan"] = SCENARIOS["two-flows"]     # terminals told apart by 802.1Q tag


@pytest.mark.parametrize("case", list(SCENARIOS))
def test_a_scenario_on_the_board_equals_the_model(board_state, tmp_path, case):
    from satemu.quic.scenario import parse_scenario, run_scenario, scenario_twin
    from satemu.quic.engine import make_engine
    text = TERMS.replace('[[terminal]]\nname = "load"',
                         '[[terminal]]\nname = "neighbour"\nmac = "02:53:41:54:00:12"\n'
                         '[[terminal]]\nname = "load"').replace("count = 2", "count = 1")
    if case.endswith("-vlan"):
        text = text.replace('match = "mac"', 'match = "vlan"').replace(
            'mac = "02:53:41:54:00:02"', "vlan = 100").replace('mac = "02:53:41:54:00:12"',
                                                              "vlan = 200")
    (tmp_path / "shared.toml").write_text(text)
    sc = parse_scenario('profile = "shared.toml"\nseed = 9\n' + SCENARIOS[case], case, tmp_path)
    engine = make_engine("board", board_state)
    board = run_scenario(engine, sc, max_seconds=30)
    assert all(f.done and f.error is None for f in board.flows), [f.error for f in board.flows]
    for d in ("forward", "return"):
        assert board.board_stats[d]["drop_overrun"] == 0 and board.board_stats[d]["late"] == 0
    model = scenario_twin(board, max_seconds=30)
    assert model.exactness["exact"]
    assert differences(board, model) == []
    assert {p.flow for p in board.sent} == set(range(len(sc.flows)))
    # each terminal's own counters, read over the UART, are the model's (differences above)
    assert board.terminal_stats["return"]["1"]["rx_frames"] > 0
    records = board.bod["records"]
    assert {r["terminal"] for r in records} == {0, 1, 2} and not board.bod["lost"]
    assert all(sum(r["used"] for r in records if r["terminal"] == t) > 0 for t in (0, 1))
