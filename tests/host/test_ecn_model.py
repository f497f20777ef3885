# SPDX-License-Identifier: BSD-2-Clause
"""ECN marking in the model (satemu.model.ecn, which the gateware equals byte for byte): which
frames are markable, the bytes of a marked one, the step on the sojourn time and on the queue,
the counter, and what the board model sends and its capture says."""

import random
from dataclasses import replace

import pytest

from satemu.base.ether import ECN_IPV4, ECN_IPV6, ECN_VLAN, PREAMBLE, fcs
from satemu.base.params import ChannelParams, ChannelRegs, Fate
from satemu.base.pcapng import read_pcapng
from satemu.box.port_capture import check_counts, write_capture
from satemu.link.registers import channel_registers
from satemu.model.board import FORWARD, PORT_A, PORT_B, RETURN, BoardModel
from satemu.model.channel import simulate
from satemu.model.ecn import ce_marked, ecn_kind
from sim.traffic import overlay_ip

PARAMS = ChannelParams(ecn=True)


def ipv4(ecn: int, vlan: bool = False, length: int = 100) -> bytes:
    header = bytearray(20)
    header[0], header[1], header[8], header[9] = 0x45, 0xB8 | ecn, 64, 17
    header[2:4] = (length - 14).to_bytes(2, "big")
    s = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, 20, 2))
    s = (s & 0xFFFF) + (s >> 16)
    header[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    tag = b"\x81\x00\x00\x05" if vlan else b""
    frame = bytes(12) + tag + b"\x08\x00" + bytes(header)
    return frame + bytes(length - len(frame))


def checksum_ok(frame: bytes, at: int) -> bool:
    s = sum(int.from_bytes(frame[at + i:at + i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


@pytest.mark.parametrize("ecn, want", [(0, 0), (1, ECN_IPV4), (2, ECN_IPV4), (3, ECN_IPV4)])
def test_which_ipv4_frames_are_markable(ecn, want):
    assert ecn_kind(ipv4(ecn)) == want
    assert ecn_kind(ipv4(ecn, vlan=True)) == (want | ECN_VLAN if want else 0)


def test_ipv6_tags_and_other_frames():
    v6 = bytes(12) + b"\x86\xdd" + bytes([0x6B, 0x90]) + bytes(60)      # traffic class ECN 01
    assert ecn_kind(v6) == ECN_IPV6
    assert ecn_kind(bytes(12) + b"\x81\x00\x00\x07" + v6[12:]) == ECN_IPV6 | ECN_VLAN
    assert ecn_kind(v6[:15]) == 0                                       # too short
    assert ecn_kind(ipv4(1)[:25]) == 0 and ecn_kind(ipv4(1)[:26]) == ECN_IPV4
    assert ecn_kind(bytes(12) + b"\x08\x06" + ipv4(1)[14:]) == 0        # ARP
    assert ecn_kind(bytes(12) + b"\x08\x00" + bytes([0x65]) + ipv4(1)[15:]) == 0   # version 6
    marked = ce_marked(v6, ECN_IPV6)
    assert marked[15] == 0xB0 and marked[:15] == v6[:15] and marked[16:] == v6[16:]


def test_marked_ipv4_headers_still_verify():
    """CE set, the checksum updated by RFC 1624 so that the header verifies, nothing else
    changed; a frame already CE unchanged."""
    for ecn in (1, 2):
        for vlan in (False, True):
            frame = ipv4(ecn, vlan)
            at = 18 if vlan else 14
            out = ce_marked(frame, ecn_kind(frame))
            assert out[at + 1] & 3 == 3 and checksum_ok(out, at)
            assert [i for i in range(len(frame)) if out[i] != frame[i]] in (
                [at + 1, at + 10], [at + 1, at + 11], [at + 1, at + 10, at + 11])
    assert ce_marked(ipv4(3), ECN_IPV4) == ipv4(3)
    rng = random.Random(5)
    for _ in range(2000):
        frame = bytes(overlay_ip(bytearray(rng.randbytes(80)), rng))
        kind = ecn_kind(frame)
        if kind & ECN_IPV4:
            assert checksum_ok(ce_marked(frame, kind), 18 if kind & ECN_VLAN else 14)


def test_the_step_on_sojourn_and_on_the_queue():
    """Frames 250 cycles apart into a shaper of 400 a frame: the queue grows, and exactly the
    ECN-capable frames whose departure is at least ecn_sojourn after their arrival (or that
    find ecn_queue frames ahead) are marked; the others never, and loss draws unchanged."""
    base = ChannelRegs(delay=5000, mem_size=1 << 22, seed=3, rate_q=4, queue_frames=200)
    kinds = [ECN_IPV4 if i % 3 else 0 for i in range(300)]
    frames = [(1000 + 250 * i, 100, 0, None, k) for i, k in enumerate(kinds)]
    for regs in (replace(base, ecn_sojourn=5000), replace(base, ecn_queue=15),
                 replace(base, ecn_sojourn=5000, ecn_queue=15)):
        result = simulate(frames, regs, PARAMS)
        queued = 0
        for (a, _, _, _, k), r in zip(frames, result.frames):
            assert r.fate is Fate.DELIVERED
            ahead = sum(1 for (b, *_), q in zip(frames, result.frames) if b < a <= q.departure)
            step = (regs.ecn_sojourn and r.departure - a >= regs.ecn_sojourn
                    or regs.ecn_queue and ahead >= regs.ecn_queue)
            assert r.ce == bool(k and step)
            queued += r.ce
        assert result.counters["ce_marked"] == queued > 50
    plain = simulate([f[:3] for f in frames], base, PARAMS)
    assert [r.egress for r in plain.frames] == [r.egress for r in result.frames]


def test_the_board_model_sends_marked_bytes_and_the_capture_says_so(tmp_path):
    f_clk = 10_000_000
    regs = replace(channel_registers(f_clk=f_clk, rate_bps=5_000_000, mem_size=1 << 20,
                                     seed=5, queue_frames=100), ecn_queue=3)
    model = BoardModel({FORWARD: regs, RETURN: regs}, cycle=1000)
    wires = {}
    for i in range(40):
        frame = ipv4(1 + i % 3, vlan=bool(i % 2), length=200)
        for port in (PORT_A, PORT_B):
            wire = PREAMBLE + frame + fcs(frame)
            model.send(port, wire, at=2000 + 100 * i)
            wires.setdefault(port, []).append((2000 + 100 * i, wire))
    model.run(10**7, halt_on_egress=False)
    model.finish()
    for ch in (FORWARD, RETURN):
        marked = [r.ce for r in model.results[ch].frames]
        assert 10 < sum(marked) < 40
        for r, e, (_, wire) in zip(model.results[ch].frames, model.traffic.egress[ch],
                                   wires[PORT_B if ch == FORWARD else PORT_A]):
            frame = wire[len(PREAMBLE):-4]
            assert e.wire_ok and e.frame[:len(frame)] == (
                ce_marked(frame, ecn_kind(frame)) if r.ce else frame)
    path = tmp_path / "ecn.pcapng"
    summary = write_capture(path, model.traffic, wires, f_clk)
    stats = {"forward": model.stats(FORWARD), "return": model.stats(RETURN)}
    assert check_counts(summary, stats) == []
    comments = [c for p in read_pcapng(path).packets for c in p.comments]
    assert sum(", marked CE (IPv4 in an 802.1Q tag)" in c for c in comments) > 5
    assert sum(", marked CE (IPv4)" in c for c in comments) > 5


ECN_LINK = """
name = "ecn-link"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
ecn_step = "3 ms"
[return]
rate = "1.5 Mbit/s"
delay = "10 ms"
ecn_step = "4 packets"
"""


@pytest.mark.parametrize("stacks", [("aioquic", "aioquic"), ("aioquic", "quinn")])
def test_quic_endpoints_sending_ect_see_the_marks(tmp_path, stacks):
    """Endpoints that send ECT(0) across a link that marks: the datagrams arrive ECT(0) or CE,
    packets.csv says which, and result.json's count of CE arrivals is the channels' ce_marked;
    the same run without ECT sees no mark."""
    import csv

    from satemu.quic.engine import run_model_transfer
    from satemu.quic.settings import EndpointSettings
    from satemu.report.files import write_transfer

    path = tmp_path / "ecn.toml"
    path.write_text(ECN_LINK)
    t = run_model_transfer(str(path), 300_000, seed=2, stacks=stacks,
                           settings=EndpointSettings(ecn="ect0"))
    assert t.completed
    summary = write_transfer(t, tmp_path / "run")
    marks = {d: t.board_stats[d]["ce_marked"] for d in ("forward", "return")}
    assert marks["forward"] > 10 and summary["fates"]["ce"] == marks
    assert summary["fates"]["disagreements"] == []
    with open(tmp_path / "run" / "packets.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    seen = {r["ecn"] for r in rows if r["fate"] == "delivered"}
    assert seen == {"ect0", "ce"}
    plain = run_model_transfer(str(path), 300_000, seed=2, stacks=stacks)
    assert plain.board_stats["forward"]["ce_marked"] == 0
    assert {f.ecn for f in plain.fates if f.ecn} == {"not-ect"}


def test_the_ecn_setting_reads_and_refuses():
    from satemu.quic.settings import EndpointSettings, parse_setting
    assert parse_setting("ecn", " ect1 ") == ("ecn", "ect1")
    with pytest.raises(ValueError, match="^ecn 'ce': one of off, ect1, ect0$"):
        EndpointSettings(ecn="ce")
