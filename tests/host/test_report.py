# SPDX-License-Identifier: BSD-2-Clause
"""Transfer summaries, packet CSV, plots, experiment report and progress line on synthetic data."""

import io
import json
from dataclasses import replace

from satemu.report.files import write_packets_csv, write_transfer
from satemu.report.metrics import bin_width, binned, summarize
from satemu.report.plots import plot_transfer
from satemu.report.progress import ProgressLine
from satemu.report.tables import experiment_markdown, format_table
from satemu.quic.transfer import Delivery, PacketRecord, Transfer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
F_CLK = 1000                 # one cycle per millisecond keeps the times readable
ORIGIN = 5000


Rec, Dlv, Xfer = PacketRecord, Delivery, Transfer


def rec(ms, direction, size, ack_only=False):
    return Rec(ORIGIN + ms, direction, size, size - 42, ack_only)


def board(rx_frames, rx_bytes, tx_frames, tx_bytes, **drops):
    stats = dict(rx_frames=rx_frames, rx_bytes=rx_bytes, tx_frames=tx_frames, tx_bytes=tx_bytes,
                 drop_runt=0, drop_oversize=0, drop_error=0, drop_loss=0, drop_queue=0,
                 drop_mem=0, drop_overrun=0, drop_preamble=0, late=0, queue_frames_hwm=3,
                 queue_bytes_hwm=4000)
    stats.update(drops)
    return stats


def transfer(**changes) -> Xfer:
    # Forward: 6 frames, 5000 bytes, one of them ACK-only; the 500-byte one at 300 ms is lost.
    # Return: 4 frames, 1000 bytes, two ACK-only (200 bytes).
    sent = [rec(0, "return", 600), rec(120, "forward", 1500), rec(121, "forward", 1500),
            rec(250, "return", 100, True), rec(300, "forward", 500), rec(310, "forward", 900),
            rec(320, "forward", 100, True), rec(400, "return", 100, True),
            rec(420, "forward", 500), rec(480, "return", 200)]
    delivered = [Dlv(ORIGIN + 60, "return", 600), Dlv(ORIGIN + 180, "forward", 1500),
                 Dlv(ORIGIN + 181, "forward", 1500), Dlv(ORIGIN + 310, "return", 100),
                 Dlv(ORIGIN + 370, "forward", 900), Dlv(ORIGIN + 380, "forward", 100),
                 Dlv(ORIGIN + 460, "return", 100), Dlv(ORIGIN + 480, "forward", 500),
                 Dlv(ORIGIN + 540, "return", 200)]
    t = Xfer(profile="geo", size=3000, ack="ratio:2", cc="reno", seed=7, f_clk=F_CLK,
             completed=True, completion_s=0.5, handshake_s=0.25, sent=sent, delivered=delivered,
             client_stats={"datagrams_sent": 4, "bytes_sent": 832},
             server_stats={"datagrams_sent": 6, "bytes_sent": 4748},
             board_stats={"forward": board(6, 5000, 5, 4500, drop_loss=1),
                          "return": board(4, 1000, 4, 1000)},
             undecodable=0, max_ack_delay_advertised_ms=25.0, max_ack_delay_used_ms=25.0,
             wall_s=2.0, virtual_s=0.6)
    return replace(t, **changes)


def test_summary_figures():
    s = summarize(transfer())
    assert (s["profile"], s["size"], s["ack"], s["cc"], s["seed"]) == ("geo", 3000, "ratio:2",
                                                                        "reno", 7)
    assert s["completed"] is True and s["error"] is None
    assert s["completion_s"] == 0.5 and s["handshake_s"] == 0.25
    assert s["goodput_mbps"] == 0.048                    # 3000 B * 8 / 0.5 s = 48 kbit/s
    assert (s["forward_packets"], s["forward_bytes"], s["forward_udp_bytes"]) == (6, 5000, 4748)
    assert s["forward_ack_only_packets"] == 1
    assert (s["return_packets"], s["return_bytes"], s["return_udp_bytes"]) == (4, 1000, 832)
    assert s["return_share_pct"] == 20.0                 # 1000 / 5000
    assert (s["ack_only_packets"], s["ack_only_bytes"]) == (2, 200)
    assert s["ack_ratio"] == 1.25                        # (6 - 1) ack-eliciting / 4 return
    assert s["forward_pps"] == 12.0 and s["return_pps"] == 8.0
    assert (s["forward_delivered_packets"], s["forward_delivered_bytes"]) == (5, 4500)
    assert (s["return_delivered_packets"], s["return_delivered_bytes"]) == (4, 1000)
    assert s["max_ack_delay_advertised_ms"] == 25.0 and s["max_ack_delay_used_ms"] == 25.0
    assert s["board"]["forward"]["drop_loss"] == 1 and s["board"]["return"]["rx_bytes"] == 1000
    assert s["client_stats"] == {"datagrams_sent": 4, "bytes_sent": 832}
    assert s["wall_s"] == 2.0 and s["virtual_s"] == 0.6 and s["speed"] == 0.3
    assert s["undecodable"] == 0


def test_consistency_pairs():
    c = summarize(transfer())["consistency"]
    assert c["consistent"] is True and c["mismatches"] == []
    assert c["forward"] == {
        "frames_in": {"endpoints": 6, "board": 6, "equal": True},
        "bytes_in": {"endpoints": 5000, "board": 5000, "equal": True},
        "frames_out": {"endpoints": 5, "board": 5, "equal": True},
        "frames_dropped": {"endpoints": 1, "board": 1, "equal": True},
    }
    assert c["return"]["frames_dropped"] == {"endpoints": 0, "board": 0, "equal": True}


def test_consistency_names_the_failing_pair():
    t = transfer()
    t.board_stats["return"]["tx_frames"] = 3
    c = summarize(t)["consistency"]
    assert c["consistent"] is False and c["mismatches"] == ["return.frames_out"]
    assert c["return"]["frames_out"] == {"endpoints": 4, "board": 3, "equal": False}

    t = transfer()
    t.board_stats["forward"]["rx_bytes"] = 4999
    t.board_stats["forward"]["drop_queue"] = 1          # two drops counted, one frame missing
    c = summarize(t)["consistency"]
    assert c["mismatches"] == ["forward.bytes_in", "forward.frames_dropped"]


def test_consistency_counts_port_drops_as_arrivals():
    # A frame the MAC discarded (no preamble) never reaches rx_frames but was sent and dropped.
    t = transfer()
    t.board_stats["forward"].update(rx_frames=5, drop_loss=0, drop_preamble=1)
    c = summarize(t)["consistency"]
    assert c["forward"]["frames_in"] == {"endpoints": 6, "board": 6, "equal": True}
    assert c["forward"]["frames_dropped"]["equal"] is True


def test_summary_of_failed_transfer():
    t = transfer(completed=False, completion_s=None, error="idle timeout", board_stats={})
    s = summarize(t)
    assert s["goodput_mbps"] is None and s["forward_pps"] is None and s["return_pps"] is None
    assert s["error"] == "idle timeout"
    # No board counters (as in real-time mode): nothing to compare, not a disagreement.
    assert s["consistency"] == {"applicable": False, "mismatches": [], "consistent": None}


def test_packets_csv(tmp_path):
    path = write_packets_csv(transfer(), tmp_path / "packets.csv")
    lines = path.read_text().splitlines()
    # (a transfer without fates, as in real time: their columns are empty)
    assert lines[:4] == ["time_s,direction,size,ack_only,fate,delivered_s,packet_numbers,"
                         "packet_types,frame_types,largest_acked,copy,ecn",
                         "0.000000000,return,600,0,,,,,,,,",
                         "0.120000000,forward,1500,0,,,,,,,,",
                         "0.121000000,forward,1500,0,,,,,,,,"]
    assert lines[4] == "0.250000000,return,100,1,,,,,,,,"
    assert len(lines) == 11


def test_binning():
    t = transfer()
    assert bin_width(t) == (100, "100 ms")
    fwd = [d for d in t.delivered if d.direction == "forward"]
    # deliveries at 180, 181, 370, 380, 480 ms; every event lies before 600 ms: six bins
    assert binned(t, fwd, lambda d: d.size) == [0, 3000, 0, 1000, 500, 0]
    assert bin_width(transfer(completion_s=10.5)) == (1000, "1 s")
    assert bin_width(transfer(completion_s=10.0)) == (100, "100 ms")


def test_plots_and_write_transfer(tmp_path):
    paths = plot_transfer(transfer(), tmp_path / "plots")
    assert [p.name for p in paths] == ["forward_goodput.png", "return_pps.png",
                                       "return_sizes.png", "sender_sequence.png"]
    for p in paths:
        data = p.read_bytes()
        assert len(data) > 1000 and data[:8] == PNG_MAGIC
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (800, 450)

    out = tmp_path / "run"
    summary = write_transfer(transfer(), out)
    assert json.loads((out / "result.json").read_text()) == summary
    assert (out / "packets.csv").read_text().startswith("time_s,direction,size,ack_only,fate,")
    assert sorted(p.name for p in out.iterdir()) == [
        "forward_goodput.png", "packets.csv", "result.json", "return_pps.png",
        "return_sizes.png", "sender_sequence.png"]


def test_plots_of_empty_transfer(tmp_path):
    t = transfer(sent=[], delivered=[], completed=False, completion_s=None)
    for p in plot_transfer(t, tmp_path):
        assert p.read_bytes()[:8] == PNG_MAGIC


def matrix():
    base = summarize(transfer())
    # ratio:10: half the return packets, three quarters of base's goodput (completion 0.5 -> 0.8)
    sent = [r for r in transfer().sent if not (r.direction == "return" and r.ack_only)]
    other = summarize(transfer(ack="ratio:10", sent=sent, completion_s=0.8,
                               board_stats={"forward": board(6, 5000, 5, 4500, drop_loss=1),
                                            "return": board(2, 800, 4, 1000)}))
    plots = {"forward_goodput": "geo-ratio2/forward_goodput.png"}
    return [(base, plots), (other, {"forward_goodput": "geo-ratio10/forward_goodput.png"})]


def test_experiment_markdown(tmp_path):
    path = experiment_markdown(matrix(), tmp_path / "report.md", "ACK policies on GEO")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# ACK policies on GEO\n")
    assert ("| geo | 3 KB | ratio:2 | 0.500 | 0.048 | 4 | 1000 | 20.00 | 2 | 1.25 | yes |"
            in text)
    assert ("| geo | 3 KB | ratio:10 | 0.800 | 0.030 | 2 | 800 | 16.00 | 0 | 2.50 | no |"
            in text)
    assert ("* 3 KB: ratio:10 sends 2.0× fewer return packets than ratio:2 (2 vs 4; return share "
            "16.00% vs 20.00% of forward bytes) and its goodput is 62.5% of ratio:2's "
            "(0.030 vs 0.048 Mbit/s)." in text)
    assert "![forward goodput](geo-ratio10/forward_goodput.png)" in text


def test_format_table():
    lines = format_table(matrix()).splitlines()
    assert lines[0].split("  ")[0] == "profile"
    assert len(lines) == 4 and len({len(line) for line in lines[:2]}) == 1
    assert lines[2].split() == ["geo", "3", "KB", "ratio:2", "0.500", "0.048", "4", "1000",
                                "20.00", "2", "1.25", "yes"]
    assert lines[3].endswith("no")


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_line_non_tty():
    stream, clock = io.StringIO(), FakeClock()
    p = ProgressLine(4_000_000, stream=stream, every=10.0, width=10, f_clk=75_000_000,
                     clock=clock)
    p.update(1.5, 1_000_000, 37_500_000)
    clock.now += 3
    p.update(2.0, 2_000_000, 37_500_000)             # within 10 s: held back
    assert stream.getvalue() == ("[##........]    1.500 s  1 MB/4 MB   25.0%  0.500 s/s  "
                                 "37.50 Mcycles/s\n")
    clock.now += 10
    p.update(3.0, 3_000_000, 75_000_000)
    clock.now += 1
    p.update(4.0, 4_000_000, 75_000_000)
    p.finish()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[1:] == [
        "[#######...]    3.000 s  3 MB/4 MB   75.0%  1.000 s/s  75.00 Mcycles/s",
        "[##########]    4.000 s  4 MB/4 MB  100.0%  1.000 s/s  75.00 Mcycles/s"]


def test_progress_line_tty():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    p = ProgressLine(1000, stream=stream, width=4, clock=FakeClock())
    p.update(0.0, 500, 1e6)
    p.update(0.0, 1000, 1e6)
    p.finish()
    out = stream.getvalue()
    assert out.startswith("\r[##..]") and "\r[####]" in out and out.endswith("\n")
