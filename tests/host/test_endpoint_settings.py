# SPDX-License-Identifier: BSD-2-Clause
"""Each endpoint setting takes effect on the wire (the model engine carries the frames), goes
into result.json and into a sweep's points, and a bad value is one line."""

from __future__ import annotations

import json

import pytest

from satemu.cli import main
from satemu.quic.engine import run_model_transfer
from satemu.quic.packets import HEADERS_BYTES
from satemu.quic.settings import EndpointSettings, parse_setting
from satemu.report.files import write_transfer
from satemu.report.metrics import summarize
from satemu.sweep import plan


def run(profile="short-asym", size=100_000, ack="ratio:2", **settings):
    return run_model_transfer(profile, size, ack=ack, seed=0, max_seconds=60,
                              settings=EndpointSettings(**settings))


@pytest.mark.parametrize("datagram", [1200, 1280, 1352, 1472])
def test_max_datagram_sets_the_frame_length(datagram):
    t = run(max_datagram=datagram)
    assert t.completed
    for direction in ("forward", "return"):
        sizes = [r.udp_size for r in t.sent if r.direction == direction]
        assert max(sizes) == datagram
    full = [r for r in t.sent if r.direction == "forward" and r.udp_size == datagram]
    assert len(full) > 50 and all(r.size == datagram + HEADERS_BYTES for r in full)


def _first_flight(t) -> int:
    """Forward ack-eliciting datagrams in the server's first round trip of 1-RTT data: from its
    first datagram after the handshake's round trip to one RTT (600 ms) later."""
    times = [(r.cycle - t.origin) / t.f_clk for r in t.sent
             if r.direction == "forward" and not r.ack_only]
    start = next(x for x in times if x > 0.6)
    return sum(1 for x in times if start <= x < start + 0.55)


def test_initial_window_bounds_the_first_flight():
    flights = {iw: _first_flight(run("geo-testbed", 300_000, initial_window=iw))
               for iw in (4, 10, 20)}
    for iw, n in flights.items():
        assert iw <= n <= iw + 2, flights          # the window, and HANDSHAKE_DONE's packet
    assert _first_flight(run("geo-testbed", 300_000)) == flights[10]    # aioquic's own: 10


def test_flow_windows_bound_the_first_flight():
    """8 KiB of initial credit, per stream or per connection: the server's first round trip of
    data stops at 8 KiB (aioquic then doubles its credit each time half is used, so the
    window binds the start, not the whole transfer)."""
    full = run("geo-testbed", 300_000)
    for field in ("stream_window", "conn_window"):
        t = run("geo-testbed", 300_000, **{field: 8 << 10})
        assert t.completed
        first = _first_flight(t)
        assert first * 1200 <= (8 << 10) + 2 * 1472 and first < _first_flight(full) - 3
        assert t.completion_s > full.completion_s


def test_congestion_controllers_differ_under_loss():
    reno = run("geo-testbed-loss1", 1_000_000, cc="reno")
    cubic = run("geo-testbed-loss1", 1_000_000, cc="cubic")
    assert reno.completed and cubic.completed
    assert [r.cycle for r in reno.sent] != [r.cycle for r in cubic.sent]


def test_initial_rtt_and_handshake_losses_in_result(tmp_path):
    """A 100 kbit/s return link: the client's padded handshake flight crosses it slowly, and a
    short initial RTT makes both sides resend handshake data that was not lost."""
    declared = {}
    for rtt in (100.0, 333.0, 1000.0):
        t = run("geo-constrained-return", 50_000, initial_rtt_ms=rtt)
        s = write_transfer(t, tmp_path / f"rtt{rtt:g}")
        on_disk = json.loads((tmp_path / f"rtt{rtt:g}" / "result.json").read_text())
        assert on_disk["settings"]["initial_rtt_ms"] == rtt
        assert on_disk["stacks"] == {"client": "aioquic", "server": "aioquic"}
        assert on_disk["handshake_losses"] == s["handshake_losses"]
        declared[rtt] = s["handshake_losses"]["declared"]
        server = s["handshake_losses"]["server"]
        assert server["handshake_congestion_events"] == 0      # aioquic: a PTO is no loss
    assert declared[100.0] > declared[333.0] > declared[1000.0] == 0, declared


def test_settings_in_summary_and_defaults():
    s = summarize(run(size=20_000))
    assert s["settings"] == EndpointSettings().to_dict()
    assert s["settings"]["initial_rtt_ms"] == 333.0 and s["settings"]["max_datagram"] == 1472


def test_sweep_axes_over_endpoint_settings():
    points = plan("model", ["short-asym"], [("20KB", 20_000)], ["ratio:2"], ["reno", "cubic"],
                  [0], [("endpoint.max_datagram", ["1280", "1352"]),
                        ("endpoint.initial_rtt", ["100", "333"])])
    assert len(points) == 8
    assert {(p.settings.max_datagram, p.settings.initial_rtt_ms, p.cc) for p in points} == {
        (d, r, c) for d in (1280, 1352) for r in (100.0, 333.0) for c in ("reno", "cubic")}
    assert len({p.id for p in points}) == 8 and len({p.run_rel for p in points}) == 8
    leaf = next(p for p in points if p.settings.max_datagram == 1280 and p.cc == "cubic"
                and p.settings.initial_rtt_ms == 100.0).run_rel.name
    assert leaf == "ratio2-cubic-irtt100-dg1280"


@pytest.mark.parametrize("extra, message", [
    (["--max-datagram", "1199"], "max datagram 1199 B is outside 1200..1472"),
    (["--max-datagram", "1473"], "max datagram 1473 B is outside 1200..1472"),
    (["--max-datagram", "big"], "max datagram 'big': a whole number of B"),
    (["--stack", "msquic"], "stack 'msquic': one of aioquic, quinn"),
    (["--stack", "aioquic/quinn/x"], "stack 'aioquic/quinn/x'"),
    (["--cc", "vegas"], "congestion controller 'vegas': one of reno, cubic, bbr"),
    (["--cc", "bbr"], "congestion controller 'bbr' is not in aioquic"),
    (["--initial-rtt", "nan"], "initial RTT 'nan': a finite number"),
    (["--initial-rtt", "0"], "initial RTT 0.0 ms is outside 1..10000 ms"),
    (["--initial-window", "1"], "initial window 1 packets is outside 2..1000"),
    (["--stream-window", "10"], "stream window 10 B is outside"),
    (["--conn-window", "lots"], "connection window 'lots'"),
    (["--max-ack-delay", "-1"], "max_ack_delay -1.0 ms is outside"),
    (["--stack", "quinn", "--max-ack-delay", "40"], "quinn always advertises 25 ms"),
    (["--stack", "quinn", "--qlog"], "quinn's endpoints write no qlog"),
    (["--stack", "quinn", "--ack", "ratio:10"], "quinn"),
    (["--stack", "aioquic/quinn", "--realtime", "--client-if", "a0", "--server-if", "b0"],
     "--realtime runs aioquic's endpoints"),
])
def test_bad_settings_are_one_line(tmp_path, capsys, extra, message):
    assert main(["quic", "--engine", "model", "--profile", "short-asym", "--size", "10KB",
                 "--out", str(tmp_path / "out")] + extra) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("satemu: ") and message in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_parse_setting_names():
    assert parse_setting("stack", "aioquic/quinn") == ("stacks", ("aioquic", "quinn"))
    assert parse_setting("stream_window", "1MiB") == ("stream_window", 1 << 20)
    assert parse_setting("initial_window", "default") == ("initial_window", None)
    with pytest.raises(ValueError, match="endpoint setting 'mtu'"):
        parse_setting("mtu", "1500")
