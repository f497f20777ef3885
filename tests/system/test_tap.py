# SPDX-License-Identifier: BSD-2-Clause
"""The TAP bridge into the simulated board: QUIC endpoints in real time, in two network
namespaces, through the full RTL. Needs root with CAP_NET_ADMIN, iproute2 and /dev/net/tun
(``tap_ready``, which comes before ``board_state`` so that it skips before a board starts)."""


def test_realtime_quic_through_the_simulated_board(tap_ready, board_state, tmp_path):
    from satemu.box.device import Device
    from satemu.link.profile import load_profile
    from satemu.quic.realtime import run_realtime
    taps, url = board_state["taps"], board_state["url"]
    assert taps, "the session's board has no TAP bridge"
    with Device(url) as dev:
        dev.load(load_profile("short-asym"), reseed=True)
        dev.reset_stats()
    t = run_realtime(taps[0], taps[1], 20_000, ack="ratio:2", timeout=300,
                     outdir=tmp_path / "rt")
    assert t.completed, t.error
    with Device(url) as dev:
        fwd, ret = dev.get_stats(0), dev.get_stats(1)
    # Every QUIC datagram the endpoints sent crossed the channels (the board also carries
    # whatever else the kernel sends: neighbour discovery, ARP).
    sent = {d: sum(p.direction == d for p in t.sent) for d in ("forward", "return")}
    assert fwd["rx_frames"] >= sent["forward"] and ret["rx_frames"] >= sent["return"]
    assert fwd["tx_frames"] >= sum(d.direction == "forward" for d in t.delivered)
    assert fwd["late"] == 0 and ret["late"] == 0


def test_a_scenario_in_real_time_through_the_simulated_board(tap_ready, board_state, tmp_path):
    """Each terminal's host sends with its MAC through the TAP into the RTL, which tells the
    terminals apart: the box's counters of each terminal equal the frames captured leaving
    with its MAC, its BoD records reach the run, and the TAPs are still there afterwards."""
    import json
    import subprocess
    from pathlib import Path
    from satemu.quic.netns import _ip_binary
    from satemu.quic.realtime.scenario import run_realtime_scenario
    from satemu.quic.scenario import load_scenario
    from satemu.report.flows import write_scenario
    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    sc = load_scenario(examples / "tap-scenario.toml")      # the README's example
    taps, url = board_state["taps"], board_state["url"]
    run = run_realtime_scenario(taps[0], taps[1], sc, max_seconds=240, outdir=tmp_path / "rt",
                                box=url)
    s = write_scenario(run, tmp_path / "rt")
    assert s["completed"], [f["error"] for f in s["flows"]]
    check = json.loads((tmp_path / "rt" / "realtime.json").read_text())["box_check"]
    assert check["agrees"] and check["emptied"], json.dumps(check)
    assert {n: r["box_received"] > 0 for n, r in check["terminals"].items()} == \
        {"client": True, "neighbour": True}
    rows = {t["terminal"]: t for t in s["terminals"]}
    assert rows["client"]["counters"]["return"]["rx_frames"] == \
        check["terminals"]["client"]["captured_out"]
    assert all(rows[n]["granted_slots"] > 0 for n in ("client", "neighbour", "load-1"))
    assert rows["neighbour"]["return_packets"] == sum(
        f["return_packets"] for f in s["flows"] if f["terminal"] == "neighbour")
    assert s["board"]["return"]["drop_unclassified"] == 0
    for name, m in s["measured_by_terminal"].items():   # the box's 5 ms each way at least
        for way in ("forward", "return"):
            assert m[way]["lost"] == 0 and m[way]["p50_ms"] >= 5.0, (name, way, m)
    ip = _ip_binary()
    for tap in taps:                    # given back to this namespace: the board's bridge stays
        assert subprocess.run([ip, "link", "show", "dev", tap],
                              capture_output=True).returncode == 0
