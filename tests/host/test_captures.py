# SPDX-License-Identifier: BSD-2-Clause
"""Captures of the co-simulation (satemu.box.port_capture, satemu.quic.cosim.write_run_capture): every
frame on its interface at its cycle with its fate, read back by satemu.base.pcapng and by tshark,
which decrypts the QUIC packets with the embedded secrets; the counts equal the counters."""

import random
import shutil
import subprocess

import pytest

from satemu.model.board import (FORWARD, INGRESS_PORT, PORT_A, PORT_B, RETURN, BoardModel,
    arrival_from_wire, wire_cycles)
from satemu.base.boards import BOARDS, DEFAULT_BOARD
from satemu.box.port_capture import check_counts, fates_of, write_capture
from satemu.base.ether import PREAMBLE, to_wire
from satemu.base.params import ChannelRegs, Fate
from satemu.base.regmap import LOSS_BERNOULLI
from satemu.base.pcapng import ERR_CRC, ERR_PREAMBLE, ERR_TOO_SHORT, INBOUND, OUTBOUND, read_pcapng
from satemu.quic.engine import run_model_transfer

TSHARK = shutil.which("tshark") or "tshark"        # make's set-up installs it (Debian's)
F_CLK = BOARDS[DEFAULT_BOARD].f_clk
NS = 10**9 // F_CLK                                 # 160 ns a cycle on the simulated board


def tshark(path, *args):
    return subprocess.run([TSHARK, "-r", str(path), *args], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_every_frame_at_its_cycle_with_its_fate(tmp_path):
    """Frames of every fate through the board model, both ways: each frame into a port at the
    cycle its preamble was on the wire, each one out at the cycle its preamble reached the wire,
    the drops with their cause and link-layer error bit, and counts equal to the counters."""
    regs = ChannelRegs(delay=5_000, queue_frames=3, min_len=60, loss_mode=LOSS_BERNOULLI,
                       loss_p=1 << 30, seed=7,
                       mem_size=1 << 20, rate_q=40)
    model = BoardModel({FORWARD: regs, RETURN: regs}, cycle=1000)
    rng = random.Random(5)
    wires = {PORT_A: [], PORT_B: []}
    for ch in (FORWARD, RETURN):
        port, at = INGRESS_PORT[ch], 2000
        for n in range(40):
            kind = n % 8
            body = rng.randbytes(rng.choice((60, 200, 1000)))
            wire = (PREAMBLE + body[:3] if kind == 1 else                     # a fragment
                    to_wire(body, bad_fcs=True) if kind == 2 else
                    to_wire(body, bad_preamble=True) if kind == 3 else
                    to_wire(body))
            model.send(port, wire, at)
            wires[port].append(wire)
            at += wire_cycles(len(wire)) + rng.choice((0, 0, 50))
    model.finish()
    starts = {p: list(zip(model.traffic.wire_in[p], wires[p])) for p in wires}
    summary = write_capture(tmp_path / "c.pcapng", model.traffic, starts, F_CLK, origin=1000)
    stats = {"forward": model.stats(FORWARD), "return": model.stats(RETURN)}
    assert check_counts(summary, stats) == []
    cap = read_pcapng(tmp_path / "c.pcapng")
    assert [i.name for i in cap.interfaces] == ["portA-in", "portA-out", "portB-in", "portB-out"]
    assert all(i.ticks_per_second == 10**9 and i.fcslen == 4 for i in cap.interfaces)
    times = [cap.time_ns(p) for p in cap.packets]
    assert times == sorted(times)
    for ch in (FORWARD, RETURN):
        port = INGRESS_PORT[ch]
        name = "AB"[port]
        inn = [p for p in cap.packets if p.interface == 2 * port]
        out = [p for p in cap.packets if p.interface == 2 * (1 - port) + 1]
        results = fates_of(model.traffic, port, wires[port])
        assert len(inn) == len(wires[port]) and len(out) == stats[
            "forward" if ch == FORWARD else "return"]["tx_frames"]
        egress = iter(model.traffic.egress[ch])
        for p, (start, wire), r in zip(inn, starts[port], results):
            assert p.timestamp == (start - 1000) * NS
            # A frame without an SFD is shown whole: nothing says where it would start.
            assert p.data == (wire[len(PREAMBLE):] if wire.startswith(PREAMBLE) else wire)
            assert p.flags & 3 == INBOUND and (p.flags >> 5) & 0xF == 4
            text = p.comments[0]
            assert f"in on port {name}" in text
            if r.fate is Fate.DELIVERED:
                e = next(egress)
                assert r.egress is e and "delivered" in text
                assert f"arrival {arrival_from_wire(start, len(wire) - 12) - 1000}" in text
            else:
                cause = {Fate.RUNT: "runt", Fate.ERROR: "error", Fate.LOSS: "loss",
                         Fate.QUEUE: "queue", "preamble": "preamble"}[r.fate]
                assert f"dropped: {cause} (" in text
                bit = {"runt": ERR_TOO_SHORT, "error": ERR_CRC, "preamble": ERR_PREAMBLE}
                assert p.flags >> 16 << 16 == bit.get(cause, 0)
        delivered = [r.egress for r in results if r.egress is not None]
        assert [p.timestamp for p in out] == [(e.wire - 1000) * NS for e in delivered]
        assert [p.data for p in out] == [e.data[len(PREAMBLE):] for e in delivered]
        assert all(p.flags & 3 == OUTBOUND for p in out)
        seen = {r.fate for r in results}
        assert {Fate.DELIVERED, Fate.RUNT, Fate.ERROR, Fate.LOSS, "preamble"} <= seen


def test_an_engine_report_that_does_not_match_the_wire_is_refused():
    model = BoardModel({FORWARD: ChannelRegs(mem_size=1 << 16),
                        RETURN: ChannelRegs(mem_size=1 << 16)})
    wire = to_wire(bytes(100))
    model.send(PORT_B, wire, 10)
    with pytest.raises(ValueError, match="only 0 frames left port A"):
        fates_of(model.traffic, PORT_B, [wire])           # before it left
    model.finish()
    with pytest.raises(ValueError, match="ingress events"):
        fates_of(model.traffic, PORT_B, [wire, wire])
    model.traffic.fates[FORWARD].clear()
    with pytest.raises(ValueError, match="no fate"):
        fates_of(model.traffic, PORT_B, [wire])


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    """A download across geo-testbed with 1% forward loss, captured."""
    out = tmp_path_factory.mktemp("lossy")
    t = run_model_transfer("geo-testbed-loss1", 300_000, ack="ratio:10", seed=3,
                           pcap=out / "capture.pcapng")
    return t, out


def test_the_capture_of_a_transfer_agrees_with_the_box(lossy):
    t, out = lossy
    assert t.completed and t.capture["disagreements"] == []
    fwd, ret = t.board_stats["forward"], t.board_stats["return"]
    assert fwd["drop_loss"] > 0
    assert t.capture["interfaces"] == {"A-in": ret["rx_frames"], "A-out": fwd["tx_frames"],
                                       "B-in": fwd["rx_frames"], "B-out": ret["tx_frames"]}
    assert t.capture["fates"]["forward"] == {"delivered": fwd["tx_frames"],
                                             "drop_loss": fwd["drop_loss"]}
    assert (out / "keys.log").read_text().count("TRAFFIC_SECRET_0") == 2


def test_tshark_counts_and_decrypts_the_capture(lossy):
    """tshark: the frames per interface, the dropped ones by their comment, and, with the
    secrets embedded in the file, the QUIC ACK frames of the client's packets."""
    t, out = lossy
    path = out / "capture.pcapng"
    names = tshark(path, "-T", "fields", "-e", "frame.interface_name")
    for iface, n in t.capture["interfaces"].items():
        assert names.count(f"port{iface}") == n
    dropped = tshark(path, "-Y", 'frame.comment contains "dropped: loss"')
    assert len(dropped) == t.board_stats["forward"]["drop_loss"]
    acks = tshark(path, "-Y", 'frame.interface_name == "portA-in" && quic.frame_type == 2',
                  "-T", "fields", "-e", "quic.ack.largest_acknowledged")
    # Every return packet after the handshake's first carries an ACK frame, decrypted.
    assert len(acks) >= t.board_stats["return"]["rx_frames"] - 3
    assert max(int(a.split(",")[-1]) for a in acks) > 100


@pytest.mark.parametrize("stacks", [("quinn", "quinn"), ("quinn", "aioquic")])
def test_quinn_secrets_decrypt_too(tmp_path, stacks):
    """A quinn client's TLS secrets (rustls's key log) decrypt the capture as aioquic's do."""
    t = run_model_transfer("short-asym", 50_000, ack="default", seed=1, stacks=stacks,
                           pcap=tmp_path / "capture.pcapng")
    assert t.completed and t.capture["disagreements"] == []
    acks = tshark(tmp_path / "capture.pcapng", "-Y",
                  'frame.interface_name == "portA-in" && quic.frame_type == 2')
    assert len(acks) >= t.board_stats["return"]["rx_frames"] - 3
