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
