# SPDX-License-Identifier: BSD-2-Clause
"""QUIC across the simulated board in virtual time: aioquic endpoints on ports A and B exchange
real Ethernet/IPv4/UDP frames through the full RTL, in lock-step with its clock."""

import pytest

from sim.engine import run_transfer

SIZE = 60_000
PROFILE = "short-asym"          # 8.5 / 1.5 Mbit/s, 10 ms one way: short in virtual time


def relative(transfer):
    """Per-packet results with cycles counted from the transfer's first packet."""
    origin = transfer.sent[0].cycle
    return ([(p.cycle - origin, p.direction, p.size, p.ack_only) for p in transfer.sent],
            [(d.cycle - origin, d.direction, d.size) for d in transfer.delivered])


@pytest.fixture(scope="module")
def runs(board_state):
    """ratio:2 twice with one seed, and ratio:10 once."""
    go = lambda ack: run_transfer(board_state["url"], board_state["eth_port"], PROFILE,  # noqa: E731
                                  SIZE, ack=ack, seed=11, max_seconds=20)
    return {"a": go("ratio:2"), "b": go("ratio:2"), "c": go("ratio:10")}


def test_transfer_completes_across_the_rtl(runs):
    t = runs["a"]
    assert t.completed and t.error is None and t.undecodable == 0
    # A 600 ms-free short path: the handshake takes at least one RTT of 20 ms plus serialisation.
    assert 0.020 < t.handshake_s < t.completion_s < 5
    forward = [p for p in t.sent if p.direction == "forward"]
    assert sum(p.udp_size for p in forward) > SIZE


def test_endpoints_agree_with_the_emulators_counters(runs):
    """What the endpoints sent and received equals what the channels counted, per direction."""
    for t in runs.values():
        for direction in ("forward", "return"):
            board = t.board_stats[direction]
            sent = [p for p in t.sent if p.direction == direction]
            got = [d for d in t.delivered if d.direction == direction]
            drops = sum(board[k] for k in board if k.startswith("drop_"))
            assert board["rx_frames"] == len(sent)
            assert board["rx_bytes"] == sum(p.size for p in sent)
            assert board["tx_frames"] == len(got)
            assert board["tx_bytes"] == sum(d.size for d in got)
            assert len(sent) - len(got) == drops and board["late"] == 0


def test_same_seed_same_packets(runs):
    """The same seed and profile give identical per-packet results: every datagram's size,
    kind and cycle, and every delivery's cycle."""
    assert relative(runs["a"]) == relative(runs["b"])
    assert runs["a"].completion_s == runs["b"].completion_s


def test_ack_ratio_changes_the_return_link(runs):
    def ret(t):
        return [p for p in t.sent if p.direction == "return"]
    r2, r10 = ret(runs["a"]), ret(runs["c"])
    assert sum(p.ack_only for p in r10) * 3 < sum(p.ack_only for p in r2)
    # (The handshake's padded Initials dominate the return bytes of so short a transfer.)
    assert sum(p.size for p in r10) < sum(p.size for p in r2)


def test_cli_quic_writes_results_consistent_with_the_board(board_state, tmp_path, capsys):
    """`satemu quic` as a user runs it: the result files, and the emulator's own counters for
    the run agree with what the endpoints did."""
    import csv
    import json
    from satemu.cli import main
    out = tmp_path / "run"
    assert main(["quic", "--profile", PROFILE, "--size", "40KB", "--ack", "adaptive",
                 "--port", board_state["url"], "--eth-port", str(board_state["eth_port"]),
                 "--out", str(out), "--max-time", "20", "--qlog"]) == 0
    text = capsys.readouterr().out
    assert "emulator counters agree with the endpoints" in text
    result = json.loads((out / "result.json").read_text())
    assert result["completed"] and result["consistency"]["consistent"]
    assert result["board"]["forward"]["rx_frames"] == result["forward_packets"]
    with (out / "packets.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == result["forward_packets"] + result["return_packets"]
    assert sum(r["ack_only"] == "1" for r in rows) >= result["ack_only_packets"]
    for name in ("forward_goodput", "return_pps", "return_sizes", "sender_sequence"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # qlog carries the board's virtual time, not the wall clock.
    for side in ("client", "server"):
        qlog = json.loads((out / "qlog" / f"{side}.qlog").read_text())
        times = [e["time"] for trace in qlog["traces"] for e in trace["events"]]
        assert times and max(times) < 20_000          # milliseconds of link time


def test_cli_experiment_reports_a_matrix(board_state, tmp_path, capsys):
    from satemu.cli import main
    out = tmp_path / "exp"
    assert main(["experiment", "ack-policy", "--profile", PROFILE, "--sizes", "30KB",
                 "--policies", "ratio:2,ack-frequency:10", "--port", board_state["url"],
                 "--eth-port", str(board_state["eth_port"]), "--out", str(out),
                 "--max-time", "20"]) == 0
    report = (out / "report.md").read_text()
    assert "ratio:2" in report and "ack-frequency:10" in report
    assert (out / PROFILE / "30KB" / "ack-frequency10" / "result.json").exists()
    assert "ack-frequency:10" in capsys.readouterr().out


# The ACK ratio each policy achieves on a known path: forward data packets per return ACK-only
# packet, in a 300 KB download on short-asym (8.5 Mbit/s: a full frame every 1.43 ms, so ten of
# them take 14 ms, under the 25 ms max_ack_delay). Seed 5 measured 1.33, 2.39, 9.21, 3.9 and
# 8.87; the forward queue overflows in slow start, so the gaps bring immediate ACKs and
# retransmissions (ratio:2 can exceed 2 because an ACK may also travel with other frames).
ACHIEVED = {"default": (1.0, 1.6), "ratio:2": (1.8, 2.6), "ratio:10": (7.0, 10.5),
            "adaptive": (2.5, 6.0), "ack-frequency:10": (7.0, 10.5)}


@pytest.mark.parametrize("ack", list(ACHIEVED))
def test_each_policy_achieves_its_ratio(board_state, ack):
    t = run_transfer(board_state["url"], board_state["eth_port"], PROFILE, 300_000, ack=ack,
                     seed=5, max_seconds=20)
    assert t.completed
    data = sum(p.direction == "forward" and not p.ack_only for p in t.sent)
    acks = sum(p.direction == "return" and p.ack_only for p in t.sent)
    lo, hi = ACHIEVED[ack]
    assert lo <= data / acks <= hi, (ack, data, acks)
    if ack == "ack-frequency:10":
        # Negotiated: the server sent its ACK_FREQUENCY frame and the client applied it.
        assert t.server_stats["ack_frequency_sent"] >= 1
        assert t.client_stats["ack_frequency_received"] == 1
