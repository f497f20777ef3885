# SPDX-License-Identifier: BSD-2-Clause
"""What each packet became, across a lossy, queue-dropping, corrupting link on the model engine."""

import csv
from collections import Counter

import pytest

from satemu.base.pcapng import read_pcapng
from satemu.box.port_capture import CAUSES
from satemu.quic.cosim import differences
from satemu.quic.engine import run_model_transfer
from satemu.quic.transfer import Delivery, PacketRecord, Transfer
from satemu.report.files import write_transfer
from satemu.report.metrics import summarize
from satemu.report.plots import plot_transfer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HARSH = """name = "harsh"
description = "forward: 3% loss, a 10-packet queue, 2% corrupted, 3% duplicated; return: 3% loss, \
2% corrupted, 5% duplicated"
[forward]
rate = "4 Mbit/s"
delay = "20 ms"
queue = "10 packets"
loss = "3%"
corrupt = "2%"
duplicate = "3%"
seed = 3
[return]
rate = "1 Mbit/s"
delay = "20 ms"
loss = "3%"
corrupt = "2%"
duplicate = "5%"
seed = 3
"""
CAUSE_NAMES = sorted(name for name, _, _ in CAUSES.values())
STACKS = {"aioquic": ("aioquic", "aioquic"), "quinn": ("quinn", "quinn"),
          "aioquic-quinn": ("aioquic", "quinn"), "quinn-aioquic": ("quinn", "aioquic")}
COLUMNS = ["time_s", "direction", "size", "ack_only", "fate", "delivered_s", "packet_numbers",
           "packet_types", "frame_types", "largest_acked", "copy", "ecn"]


@pytest.fixture(scope="module")
def harsh(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "harsh.toml"
    path.write_text(HARSH)
    return str(path)


@pytest.fixture(scope="module", params=list(STACKS))
def run(request, harsh, tmp_path_factory):
    """A 100 KB download across ``harsh`` with its capture, written out: (client stack, server
    stack), the Transfer, its directory and result.json's content."""
    out = tmp_path_factory.mktemp(request.param)
    t = run_model_transfer(harsh, 100_000, seed=1, stacks=STACKS[request.param],
                           pcap=out / "capture.pcapng")
    return STACKS[request.param], t, out, write_transfer(t, out)


def of(t, direction):
    return [(r, f) for r, f in zip(t.sent, t.fates) if r.direction == direction]


def test_every_datagram_has_a_fate(run):
    _, t, _, _ = run
    assert t.completed and t.fates_error is None and len(t.fates) == len(t.sent) > 100
    allowed = {"delivered", "undecodable"} | {f"dropped:{c}" for c in CAUSE_NAMES}
    assert {f.fate for f in t.fates} <= allowed
    assert {f.copy for f in t.fates} <= allowed | {None}


def test_the_fates_count_as_the_channels_do(run):
    _, t, _, summary = run
    for d in ("forward", "return"):
        by = Counter(f.fate for _, f in of(t, d))
        copies = Counter(f.copy for _, f in of(t, d) if f.copy is not None)
        both = by + copies
        stats = t.board_stats[d]
        assert stats["tx_frames"] == both["delivered"] + both["undecodable"]
        assert stats["duplicated"] == sum(copies.values()) > 0
        for cause in CAUSE_NAMES:
            assert stats.get(f"drop_{cause}", 0) == both[f"dropped:{cause}"], cause
        assert both["undecodable"] <= stats["corrupted"]
        assert summary["fates"][d] == dict(sorted(by.items()))
        assert summary["fates"]["copies"][d] == dict(sorted(copies.items()))
    assert summary["fates"]["disagreements"] == [] and summary["fates"]["error"] is None
    # The link did all it may: the test sees every kind of fate.
    forward = Counter(f.fate for _, f in of(t, "forward"))
    assert forward["dropped:loss"] and forward["dropped:queue"] and forward["undecodable"]
    assert Counter(f.fate for _, f in of(t, "return"))["dropped:loss"]


def test_the_fates_agree_with_the_capture(run):
    _, t, out, _ = run
    assert t.capture["disagreements"] == []
    cap = read_pcapng(out / "capture.pcapng")
    for d, iface in (("forward", "portB-in"), ("return", "portA-in")):
        comments = [p.comments[0] for p in cap.packets
                    if cap.interfaces[p.interface].name == iface]
        mine = of(t, d)
        assert len(comments) == len(mine)
        for text, (_, f) in zip(comments, mine):
            if f.fate.startswith("dropped:"):
                assert f": dropped: {f.fate.partition(':')[2]} (" in text, (f, text)
            else:
                assert ": delivered, left port" in text, (f, text)
            if f.fate == "undecodable":
                assert "flipped, FCS recomputed" in text


def test_delivery_times_are_the_deliveries(run):
    _, t, _, _ = run
    for d in ("forward", "return"):
        mine = of(t, d)
        for r, f in mine:
            assert (f.delivered is None) == f.fate.startswith("dropped:")
            assert f.delivered is None or f.delivered > r.cycle
            assert (f.copy_delivered is None) == (f.copy is None or f.copy.startswith("dropped:"))
            if f.copy_delivered is not None and f.delivered is not None:
                assert f.copy_delivered > f.delivered           # the copy follows
        got = sorted([(f.delivered, r.size) for r, f in mine if f.delivered is not None]
                     + [(f.copy_delivered, r.size) for r, f in mine
                        if f.copy_delivered is not None])
        want = sorted((x.cycle, x.size) for x in t.delivered if x.direction == d)
        assert got == want
        # Deliveries to no endpoint are the undecodable frames (one connection, all routed).
        assert sum(x.flow == -1 for x in t.delivered if x.direction == d) == \
            sum((f.fate == "undecodable") + (f.copy == "undecodable") for _, f in mine)


def test_packet_numbers_increase_per_sender(run):
    """aioquic tells its packets; quinn's are read from the wire with its secrets
    (satemu.quic.wire): the same columns either way."""
    stacks, t, _, _ = run
    assert t.wire_error is None
    sides = {"return": stacks[0], "forward": stacks[1]}
    for d, stack in sides.items():
        mine = of(t, d)
        for r, f in mine:
            assert len(f.types.split()) == len(f.frames.split()) == len(f.numbers) >= 1
            if r.ack_only:
                assert set(f.frames.replace("+", " ").split()) == {"ack"}
                assert f.largest_acked is not None
        if stack == "aioquic":
            numbers = [n for _, f in mine for n in f.numbers]
            assert numbers == list(range(len(numbers)))  # aioquic: one counter, all spaces
        else:                   # quinn: a counter a space, which skips a number now and then
            by_space = {}
            for _, f in mine:
                for kind, n in zip(f.types.split(), f.numbers):
                    by_space.setdefault(kind, []).append(n)
            assert by_space["initial"][0] == 0 and "1RTT" in by_space
            for numbers in by_space.values():
                assert all(a < b for a, b in zip(numbers, numbers[1:]))
        # What a 1-RTT packet's ACK frame acknowledges is a 1-RTT packet of the peer's that
        # reached this side by the time it was sent (by the datagram, or by its copy where
        # duplication made one).
        other = "forward" if d == "return" else "return"
        arrived = {}
        for _, f in of(t, other):
            at = [c for fate, c in ((f.fate, f.delivered), (f.copy, f.copy_delivered))
                  if fate == "delivered"]
            arrived.update({n: min(at) for kind, n in zip(f.types.split(), f.numbers)
                            if kind == "1RTT"} if at else {})
        acks = [(r, f) for r, f in mine if f.largest_acked is not None
                and set(f.types.split()) == {"1RTT"}]
        assert acks
        for r, f in acks:
            assert arrived[f.largest_acked] <= r.cycle


def test_packets_csv(run):
    stacks, t, out, _ = run
    with open(out / "packets.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert reader.fieldnames == COLUMNS and len(rows) == len(t.sent)
    origin = t.sent[0].cycle
    for row, r, f in zip(rows, t.sent, t.fates):
        assert row["direction"] == r.direction and row["fate"] == f.fate
        if f.delivered is None:
            assert row["delivered_s"] == ""
        else:
            assert float(row["delivered_s"]) == pytest.approx((f.delivered - origin) / t.f_clk,
                                                              abs=1e-9)
            assert float(row["delivered_s"]) > float(row["time_s"])
        assert row["packet_numbers"].split() == [str(n) for n in f.numbers]   # both stacks'
        assert row["frame_types"] == f.frames and row["packet_types"] == f.types


def test_the_plots_are_written(run):
    stacks, t, out, _ = run
    expected = ["forward_goodput", "return_pps", "return_sizes", "sender_sequence",
                "return_size_cdf", "ack_sizes"]
    assert sorted(p.stem for p in out.glob("*.png")) == sorted(expected)
    for name in expected:
        data = (out / f"{name}.png").read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 1000
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == \
            (800, 450)


def test_the_first_rtt(run):
    stacks, t, _, summary = run
    s = summary["first_rtt"]
    origin = t.sent[0].cycle
    forward = [f for _, f in of(t, "forward") if f.fate == "delivered"]
    first = min(f.delivered for f in forward if "ack" in f.frames.replace("+", " ").split())
    assert s["ack_told"] is True
    assert s["first_ack_s"] == pytest.approx((first - origin) / t.f_clk, abs=1e-12)
    before = [(r, f) for r, f in of(t, "return") if r.cycle < first]
    assert s["datagrams"] == len(before) == len(s["sent"]) >= 1
    assert s["bytes"] == sum(r.size for r, _ in before)
    assert s["udp_bytes"] == sum(r.udp_size for r, _ in before)
    assert all(x["time_s"] < s["first_ack_s"] for x in s["sent"])
    assert [x["fate"] for x in s["sent"]] == [f.fate for _, f in before]
    numbers = [n for x in s["sent"] for n in x["packet_numbers"]]
    assert len(numbers) == s["packets"]
    if stacks[0] == "aioquic":
        assert numbers == list(range(s["packets"]))
    assert s["sent"][0]["packet_types"][0] == "initial"
    assert s["sent"][0]["frame_types"][0] == "crypto"


def test_a_capture_changes_no_fate(harsh, tmp_path):
    """Without a capture the co-simulation keeps only each frame's head: the same fates."""
    t = run_model_transfer(harsh, 100_000, seed=2, pcap=tmp_path / "capture.pcapng")
    again = run_model_transfer(harsh, 100_000, seed=2)
    assert differences(t, again) == [] and again.fates == t.fates


def test_a_run_that_knows_no_fates(tmp_path):
    """A Transfer without fates (a real-time run's): the columns are there, empty; no fates or
    first RTT in result.json; no plot of them. An engine whose reports did not add up says
    why."""
    sent = [PacketRecord(100, "return", 1200, 1158, False),
            PacketRecord(200, "forward", 1200, 1158, False)]
    delivered = [Delivery(150, "return", 1200), Delivery(250, "forward", 1200)]
    t = Transfer(profile="rt", size=1000, ack="default", cc="reno", seed=0, f_clk=1000,
                 completed=True, completion_s=0.2, handshake_s=0.1, sent=sent,
                 delivered=delivered, client_stats={}, server_stats={}, board_stats={},
                 undecodable=0, max_ack_delay_advertised_ms=25.0, max_ack_delay_used_ms=None,
                 wall_s=1.0, virtual_s=0.3, engine="realtime")
    summary = write_transfer(t, tmp_path)
    assert summary["fates"] is None and summary["first_rtt"] is None
    lines = (tmp_path / "packets.csv").read_text().splitlines()
    assert lines == [",".join(COLUMNS), "0.000000000,return,1200,0,,,,,,,,",
                     "0.100000000,forward,1200,0,,,,,,,,"]
    assert [p.stem for p in plot_transfer(t, tmp_path / "plots")] == [
        "forward_goodput", "return_pps", "return_sizes", "sender_sequence"]
    t.fates, t.fates_error = None, "the forward direction: 2 datagrams sent and 1 delivered"
    assert summarize(t)["fates"] == {"forward": None, "return": None, "disagreements": [],
                                     "error": t.fates_error}
