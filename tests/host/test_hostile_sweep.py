# SPDX-License-Identifier: BSD-2-Clause
"""Sweeps and reports against hostile inputs: duplicated settings, false schedulers, dead links."""

from __future__ import annotations

import csv
import json
import socket
import threading

import pytest

from satemu.cli import main
from satemu.sweep.errors import SweepError
from satemu.quic.settings import SETTING_NAMES, EndpointSettings
from satemu.report.metrics import MAX_BINS, bin_width, binned, handshake_losses, summarize
from satemu.report.plots import transfer_figures
from satemu.sweep import check_scheduler, plan, run_sweep
from satemu.quic.transfer import Delivery, PacketRecord, Transfer

ONE = [("10KB", 10_000)]

# -- 1. a --set endpoint.NAME and NAME's own option ------------------------------------------

# Per setting: what its option says (as plan takes it: the base settings, the stacks or the
# ccs), the --set values, and how the points' value of it reads.
OPTION_AND_SET = {
    "max_datagram": ({"endpoint": EndpointSettings(max_datagram=1300)}, "1280,1352",
                     {1280, 1352}),
    "initial_window": ({"endpoint": EndpointSettings(initial_window=20)}, "default,5",
                       {None, 5}),
    "initial_rtt": ({"endpoint": EndpointSettings(initial_rtt_ms=100.0)}, "50,200",
                    {50.0, 200.0}),
    "cc": ({"ccs": ["reno", "cubic"]}, "bbr", {"bbr"}),
    "stream_window": ({"endpoint": EndpointSettings(stream_window=1 << 20)}, "2MiB,4MiB",
                      {2 << 20, 4 << 20}),
    "conn_window": ({"endpoint": EndpointSettings(conn_window=1 << 20)}, "2MiB,4MiB",
                    {2 << 20, 4 << 20}),
    "max_ack_delay": ({"endpoint": EndpointSettings(max_ack_delay_ms=10.0),
                       "stacks": ("aioquic", "aioquic")}, "20,30", {20.0, 30.0}),
    "ecn": ({"endpoint": EndpointSettings(ecn="ect1")}, "off,ect0", {"off", "ect0"}),
    "stack": ({"stacks": ("aioquic", "aioquic")}, "quinn,aioquic/quinn",
              {("quinn", "quinn"), ("aioquic", "quinn")}),
}


def _value(point, name):
    if name == "stack":
        return point.stacks
    return getattr(point.settings, SETTING_NAMES[name][0])


def test_every_endpoint_setting_has_its_case():
    assert set(OPTION_AND_SET) == set(SETTING_NAMES)


@pytest.mark.parametrize("name", sorted(OPTION_AND_SET))
def test_an_endpoint_set_wins_over_the_setting_s_option(name):
    option, values, expected = OPTION_AND_SET[name]
    kwargs = {"endpoint": option.get("endpoint"),
              "stacks": option.get("stacks", ("quinn", "quinn"))}
    points = plan("model", ["short-asym"], ONE, ["default"], option.get("ccs", ["reno"]), [0],
                  [(f"endpoint.{name}", values.split(","))], **kwargs)
    # One point per --set value: the option's value is replaced, not crossed with them.
    assert len(points) == len(expected)
    assert {_value(p, name) for p in points} == expected
    # The other settings stay as the option gave them.
    if option.get("endpoint") is not None:
        for p in points:
            for attr, value in option["endpoint"].to_dict().items():
                if attr != SETTING_NAMES[name][0]:
                    assert getattr(p.settings, attr) == value


def test_endpoint_cc_with_the_default_cc_plans_one_point_per_value():
    # The campaign's case: --cc's default (reno) and --set endpoint.cc=bbr gave TypeError.
    points = plan("model", ["short-asym"], ONE, ["default"], ["reno"], [0],
                  [("endpoint.cc", ["bbr", "cubic"])], stacks=("quinn", "quinn"))
    assert [(p.cc, p.settings.cc) for p in points] == [("bbr", "bbr"), ("cubic", "cubic")]
    assert points[0].run_rel.name == "default-bbr-quinn"
    with pytest.raises(SweepError, match="congestion controller 'bbr' is not in aioquic"):
        plan("model", ["short-asym"], ONE, ["default"], ["reno"], [0],
             [("endpoint.cc", ["bbr"])])


def test_endpoint_cc_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["experiment", "ack-policy", "--engine", "model", "--profile", "short-asym",
                 "--sizes", "10KB", "--policies", "default", "--max-time", "5", "--jobs", "1",
                 "--stack", "quinn", "--cc", "cubic", "--set", "endpoint.cc=bbr",
                 "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["cc"], r["completed"]) for r in rows] == [("bbr", "True")]
    result = json.loads((out / rows[0]["run_dir"] / "result.json").read_text())
    assert result["settings"]["cc"] == "bbr" and result["cc"] == "bbr"


# -- 2. --dask ADDRESS that is not a scheduler -----------------------------------------------

class FakePeer:
    """A TCP server on 127.0.0.1 (an ephemeral port) whose every connection ``behave`` serves,
    in a thread; closed with the ``with`` block."""

    def __init__(self, behave):
        self.behave = behave
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.conns: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()
        for conn in self.conns:
            conn.close()

    def _serve(self):
        self.sock.settimeout(0.05)              # to see ``stop`` soon
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self.conns.append(conn)
            try:
                self.behave(conn)
            except OSError:
                pass


def silent(conn):
    """Accepts, never speaks."""


def http(conn):
    """An HTTP server: reads what it is sent, answers 400."""
    conn.settimeout(5)
    conn.recv(4096)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def zeros(conn):
    """Sends zero bytes."""
    conn.sendall(bytes(64))


def closes(conn):
    """Hangs up at once."""
    conn.close()


@pytest.mark.parametrize("behave, why", [
    (silent, "no greeting within 0.5 s"),
    (http, "its first 8 bytes, b'HTTP/1.1', claim a message of"),
    (zeros, "its first 8 bytes, b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00', claim a message "
            "of 0 bytes"),
    (closes, "it closed the connection unasked"),
])
def test_a_peer_that_is_no_scheduler_is_refused_in_time(behave, why):
    with FakePeer(behave) as peer, pytest.raises(SweepError) as e:
        check_scheduler(peer.address, timeout=0.5)
    message = str(e.value)
    assert message.startswith(f"--dask {peer.address}: not a Dask scheduler ({why}"), message
    assert message.endswith(")") and "\n" not in message


def test_a_silent_peer_is_refused_by_the_sweep_before_anything_runs(tmp_path):
    points = plan("model", ["short-asym"], ONE, ["default"], ["reno"], [0])
    with FakePeer(silent) as peer, pytest.raises(SweepError, match="not a Dask scheduler "
                                                 r"\(no greeting within 0.5 s\)"):
        run_sweep(points, tmp_path, dask=peer.address, dask_timeout=0.5)
    assert list(tmp_path.iterdir()) == []


def test_an_http_peer_is_one_line_on_the_command_line(tmp_path, capsys):
    with FakePeer(http) as peer:
        assert main(["experiment", "ack-policy", "--engine", "model", "--profile",
                     "short-asym", "--sizes", "10KB", "--policies", "default",
                     "--dask", peer.address, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"satemu: --dask {peer.address}: not a Dask scheduler (its first "
                              f"8 bytes, b'HTTP/1.1', claim a message of "), err
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize("address, message", [
    ("inproc://somewhere", "a tcp:// or tls:// scheduler address, or 'local'"),
    ("tcp://127.0.0.1", "missing port number"),
    ("tcp://127.0.0.1:99999", "port 99999 is outside 1..65535"),
    ("tls://127.0.0.1:8786", "tls:// needs Dask's TLS settings"),
])
def test_an_address_that_cannot_be_a_scheduler_s(address, message):
    with pytest.raises(SweepError, match=message):
        check_scheduler(address, timeout=0.5)


def test_a_scheduler_passes_the_check():
    from distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        check_scheduler(cluster.scheduler_address, timeout=5)
        check_scheduler(cluster.scheduler_address.removeprefix("tcp://"), timeout=5)


def test_a_local_cluster_does_not_need_port_8787(tmp_path, capsys):
    """--dask local while another cluster holds 8787 (Dask's default HTTP port): no warning
    (an error here) and the point runs."""
    points = plan("model", ["short-asym"], ONE, ["default"], ["reno"], [0])
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:
        pass                                    # held already: the case itself
    try:
        outcome = run_sweep(points, tmp_path, jobs=1, dask="local")
    finally:
        holder.close()
    assert outcome.ran == points and not outcome.failed


# -- 3. a run whose handshake never completes ------------------------------------------------

F_CLK = 50_000_000


def _transfer(events, client=None, server=None, **changes) -> Transfer:
    """A transfer that never completed, with a 1000-byte datagram at each (second,
    direction) of ``events``, delivered at once."""
    sent = [PacketRecord(round(s * F_CLK), d, 1000, 958, False) for s, d in events]
    delivered = [Delivery(r.cycle, r.direction, r.size) for r in sent]
    fields = dict(profile="slow", size=10_000, ack="default", cc="reno", seed=0, f_clk=F_CLK,
                  completed=False, completion_s=None, handshake_s=None, sent=sent,
                  delivered=delivered, client_stats=client or {}, server_stats=server or {},
                  board_stats={}, undecodable=0, max_ack_delay_advertised_ms=25.0,
                  max_ack_delay_used_ms=None, wall_s=1.0, virtual_s=2.0)
    fields.update(changes)
    return Transfer(**fields)


DROP_ALL = """name = "drop-all"
description = "every frame lost, both ways"
[forward]
rate = "10 Mbit/s"
delay = "10 ms"
loss = "100%"
[return]
rate = "10 Mbit/s"
delay = "10 ms"
loss = "100%"
"""


@pytest.fixture
def drop_all(tmp_path):
    path = tmp_path / "drop-all.toml"
    path.write_text(DROP_ALL)
    return path


def test_a_quinn_run_without_a_handshake_writes_its_results(tmp_path, drop_all, capsys):
    out = tmp_path / "run"
    assert main(["quic", "--engine", "model", "--stack", "quinn", "--profile", str(drop_all),
                 "--size", "10KB", "--max-time", "2", "--out", str(out)]) == 1
    stdout = capsys.readouterr().out.splitlines()
    s = json.loads((out / "result.json").read_text())
    assert s["completed"] is False and s["error"] is None and s["handshake_s"] is None
    assert s["outcome"].startswith("time limit: the handshake never completed in ")
    # The line says how far the run got, as result.json's outcome does.
    assert stdout[0].endswith(f": NOT completed ({s['outcome']})"), stdout
    assert s["client_stats"]["stack"] == "quinn" and s["client_stats"]["datagrams_sent"] > 0
    assert s["client_stats"]["handshake_lost_packets"] is None
    assert s["handshake_losses"]["declared"] == s["client_stats"]["lost_packets"]
    assert s["return_packets"] > 0 and s["forward_packets"] == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "forward_goodput.png", "packets.csv", "result.json", "return_pps.png",
        "return_sizes.png", "sender_sequence.png"]


def test_a_sweep_point_without_a_handshake_is_recorded(tmp_path, drop_all, capsys):
    out = tmp_path / "out"
    assert main(["experiment", "ack-policy", "--engine", "model", "--stack", "quinn",
                 "--profile", str(drop_all), "--sizes", "10KB", "--policies", "default",
                 "--max-time", "2", "--jobs", "1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "NOT completed (time limit: the handshake never completed in " in err, err
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]["completed"] == "False"
    assert rows[0]["outcome"].startswith("time limit: the handshake never completed")
    assert (out / rows[0]["run_dir"] / "result.json").exists()


def test_quinn_s_unset_handshake_count_counts_every_loss_so_far():
    t = _transfer([(0, "return")], client={"stack": "quinn", "lost_packets": 3,
                                           "handshake_lost_packets": None},
                  server={"stack": "quinn", "lost_packets": 1, "handshake_lost_packets": 1})
    assert handshake_losses(t)["declared"] == 4
    s = summarize(t)
    assert s["outcome"] == "time limit: the handshake never completed in 2.000 s"
    assert summarize(_transfer([(0, "return")], error="idle timeout"))["outcome"] == \
        "failed: idle timeout"


# -- 4. a long run on a slow link: bins bounded ----------------------------------------------

@pytest.mark.parametrize("last_s, width", [
    (1999.5, (1000, "1 s")),                # 2000 bins of 1 s: as before
    (2000.0, (2000, "2 s")),                # 2001 would be one too many
    (999_999, (500_000, "500 s")),
    (1e6, (1_000_000, "1000 s")),           # a 1 bit/s link's run at --max-time's limit
    (1e9, (1_000_000_000, "1000000 s")),
])
def test_a_long_run_has_at_most_max_bins(last_s, width):
    t = _transfer([(0, "return"), (1.5, "forward"), (last_s / 2, "return"),
                   (last_s, "forward")])
    assert bin_width(t) == width
    assert len(binned(t, t.delivered)) <= MAX_BINS


def test_the_plot_of_a_long_slow_run_draws_a_bounded_number_of_bins():
    # One frame an hour for a million seconds (11.6 days): at 1 s bins, a million bars.
    t = _transfer([(h * 3600.0, "forward" if h % 2 else "return") for h in range(278)])
    figures = dict(transfer_figures(t))
    goodput = figures["forward_goodput"].axes[0]
    pps = figures["return_pps"].axes[0]
    # A series is one artist (a filled step outline), whatever its bins ...
    assert len(goodput.patches) == 1 and len(pps.patches) == 2
    # ... and has at most MAX_BINS of them: 997,200 s in 1995 bins of 500 s.
    for patch in goodput.patches + pps.patches:
        assert len(patch.get_data().values) == 1995 <= MAX_BINS
    assert "per 500 s" in goodput.get_title()
    assert sum(goodput.patches[0].get_data().values) > 0


def test_a_long_slow_run_s_timeline_plot_is_bounded_too(tmp_path):
    from satemu.report.timeline_plot import plot_link_timeline
    t = _transfer([(h * 3600.0, "forward") for h in range(278)],
                  timeline={"start_cycle": 0, "period_s": 0, "steps": [
                      {"at_s": 0.0, "forward": {"rate_bps": 1.0, "delay_s": 0.3, "loss": 0.0},
                       "return": {"rate_bps": 1.0, "delay_s": 0.3, "loss": 0.0}}]})
    assert plot_link_timeline(t, tmp_path / "tl.png").stat().st_size > 1000
