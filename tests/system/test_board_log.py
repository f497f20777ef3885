# SPDX-License-Identifier: BSD-2-Clause
"""The frame log on the simulated board: frames of every fate on both ports, the log read over
the UART (READ_LOG, `satemu capture`) and held to the board model, record by record, across a
wrap of each channel's ring; the pcapng it makes; and the clear errors of capture."""

import random
import re

import pytest

from satemu.base import protocol as P
from satemu.model.board import FORWARD, INGRESS_PORT, RETURN, BoardModel
from satemu.base.boards import BOARDS
from satemu.cli import main
from satemu.box.device import Device
from satemu.base.ether import PREAMBLE, to_wire
from satemu.base.records import INDEX_MOD
from satemu.model.framelog import expected, join
from satemu.base.params import ChannelRegs, Fate
from satemu.base.pcapng import OUTBOUND, PcapngWriter, read_pcapng
from sim.frames import EthPorts, wire_cycles

RING = BOARDS["sim"].log_words // 2
# A lossy profile with short queues: every fate but mem comes up on both channels; and 5% of
# the frames are duplicated (their copies in the log too, with their originals' arrivals).
PROFILE = """
name = "log-test"
[forward]
rate = "20 Mbit/s"
delay = "2 ms"
loss = "5%"
queue = "6 packets"
duplicate = "5%"
[return]
rate = "10 Mbit/s"
delay = "1 ms"
loss = "5%"
queue = "6 packets"
duplicate = "5%"
"""


def _traffic(rng, n):
    """n wire frames: mostly good ones of every size, some runts, fragments and bad FCS."""
    out = []
    for i in range(n):
        kind = rng.random()
        body = rng.randbytes(rng.choice((60, 64, 200, 600, 1400, 1514)))
        if kind < 0.03:
            out.append(to_wire(body[:rng.randint(14, 50)]))           # a runt
        elif kind < 0.05:
            out.append(PREAMBLE + body[:rng.randint(1, 8)])           # a fragment
        elif kind < 0.08:
            out.append(to_wire(body, bad_fcs=True))
        else:
            out.append(to_wire(body))
    return out


def test_the_log_holds_what_the_model_says_across_a_wrap(url, board_state, tmp_path, capsys,
                                                         monkeypatch):
    path = tmp_path / "log-test.toml"
    path.write_text(PROFILE)
    assert main(["load", str(path), "--port", url, "--reseed"]) == 0
    assert main(["capture", "--port", url, "--clear"]) == 0
    with Device(url) as dev:
        dev.reset_stats()
        words = dev.hello()["mem_words"]
        regs = {ch: ChannelRegs(**dev.get_profile(ch), mem_size=words) for ch in (FORWARD, RETURN)}
    rng = random.Random(31)
    # Enough frames that each channel's decided and sent records wrap its ring, at a quarter of
    # the wire's rate: no burst outruns a channel's ingress FIFO (an overrun, which the model
    # does not predict), while the queues still overflow.
    n = RING * 5 // 4
    with EthPorts(board_state["eth_port"], timeout=120) as eth:
        start = eth.hold() + 50_000             # held while the frames and the model are made
        model = BoardModel(regs, cycle=start)
        sent = {}
        for ch in (FORWARD, RETURN):
            at = start
            sent[ch] = _traffic(rng, n)
            for wire in sent[ch]:
                eth.send(INGRESS_PORT[ch], wire, at)
                model.send(INGRESS_PORT[ch], wire, at)
                at += 4 * wire_cycles(len(wire)) + rng.choice((0, 5, 40))
        eth.release()
        results = model.finish()
        want_t = model.traffic
        eth.wait({ch: len(want_t.events[ch]) for ch in (FORWARD, RETURN)},
                 {ch: len(want_t.egress[ch]) for ch in (FORWARD, RETURN)}, timeout=300)
    # What a host cabled to port A would have captured of the frames it sent: each frame
    # without preamble and FCS (whole, when it has no SFD), on the host's own clock.
    host = tmp_path / "host-a.pcapng"
    with PcapngWriter(host) as w:
        i = w.interface("eth-a")
        for at, wire in zip(want_t.wire_in[INGRESS_PORT[RETURN]], sent[RETURN]):
            frame = wire[8:-4] if len(wire) > 12 else wire[8:]
            w.packet(i, 10**12 + at * 160, frame, flags=OUTBOUND)
    out = tmp_path / "log.pcapng"
    # The rings wrapped: the capture says it is partial and why, and exits 1. What it read is
    # kept for the checks below (the simulated board's UART is slow: the log is read once).
    import satemu.box.log_capture as logcapture
    read, logs = logcapture.read_box_log, {}

    def keep(dev, ring):
        logs.update(read(dev, ring))
        return logs

    monkeypatch.setattr(logcapture, "read_box_log", keep)
    assert main(["capture", "--port", url, "--out", str(out), "--merge", f"A={host}"]) == 1
    text = capsys.readouterr().out
    assert "PARTIAL" in text and "wrapped" in text and "kB/s" in text
    matched = re.search(r"port A-in: (\d+) of the host's (\d+) frames matched the box's (\d+)",
                        text)
    assert matched and int(matched[1]) == int(matched[3]) and int(matched[2]) == n
    with Device(url) as dev:
        stats = {ch: dev.get_stats(ch) for ch in (FORWARD, RETURN)}
    joined_entries = {}
    for ch in (FORWARD, RETURN):
        log = logs[ch]
        frames = results[ch].frames
        delivered = sum(r.fate is Fate.DELIVERED for r in frames)
        assert log.lost == 0 and log.count == len(frames) + delivered > RING
        assert log.first == log.count - RING and log.ring == RING
        assert log.stale == 0 and len(log.records) == RING
        entries, joined = join(log.records)
        assert joined["unsent"] == 0
        arrivals = [c for c, kind in want_t.events[ch] if kind == "A"]
        offered = results[ch].offered()           # (a copy is its original's frame)
        # The channel numbers the frames it decides from its start, never from a clear: the
        # tests before this one sent frames too. The newest record is this test's last frame.
        offset = (entries[-1].index + 1 - len(frames)) % INDEX_MOD
        want = expected([arrivals[i] for i in offered],
                        [model.taken_lengths[ch][i] for i in offered], frames, first_index=offset)
        wrong = [(e, w) for e in entries
                 for w in [want[(e.index - offset) % INDEX_MOD]] if e != w]
        joined_entries[ch] = entries
        assert entries and not wrong, f"{len(wrong)} records differ, the first {wrong[:3]}"
        fates = {e.fate for e in entries}
        assert {Fate.DELIVERED, Fate.LOSS, Fate.QUEUE} <= fates
        copies = stats[ch]["duplicated"]
        assert copies == sum(r.copy for r in frames) > 0
        assert stats[ch]["rx_frames"] == len(frames) - copies
    cap = read_pcapng(out)
    assert [i.name for i in cap.interfaces] == ["portA-in", "portA-out", "portB-in", "portB-out"]
    assert any("dropped: loss" in p.comments[0] for p in cap.packets)
    assert any("; duplicated, the copy: delivered" in p.comments[0] for p in cap.packets)
    assert any(", the copy of frame " in p.comments[0] for p in cap.packets)
    assert "PARTIAL" in cap.comments[0]
    # Port A's frames in carry the host's bytes at the box's arrival cycles; the host's frames
    # whose records the ring no longer held keep the host's time, moved onto the box's clock.
    a_in = [p for p in cap.packets if p.interface == 0]
    held = [p for p in a_in if "in the host's capture only" not in p.comments[0]]
    assert len(held) == int(matched[3]) and all(p.data for p in held)
    arrivals = {e.index: e.arrival for e in joined_entries[RETURN]}
    for p in held:
        index = int(re.search(r"frame (\d+) in on port A", p.comments[0])[1])
        assert p.timestamp == arrivals[index] * 160
    assert all(p.data == b"" for p in cap.packets if p.interface != 0)


def test_capture_on_a_port_that_does_not_answer_says_so(tmp_path, capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    status = main(["capture", "--port", f"socket://127.0.0.1:{port}", "--timeout", "1",
                   "--out", str(tmp_path / "x.pcapng")])
    err = capsys.readouterr().err
    assert status != 0 and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.pcapng").exists()


def test_merge_with_a_capture_of_another_run_is_refused(url, tmp_path, capsys):
    """A host capture whose frames the box's log does not hold: a log cleared since (as here),
    or one of another run."""
    assert main(["capture", "--port", url, "--clear"]) == 0
    other = tmp_path / "other.pcapng"
    with PcapngWriter(other) as w:
        i = w.interface("eth1")
        for k in range(50):
            w.packet(i, k * 1000, bytes(333), flags=OUTBOUND)       # lengths the box never saw
    status = main(["capture", "--port", url, "--out", str(tmp_path / "m.pcapng"),
                   "--merge", f"A={other}"])
    err = capsys.readouterr().err
    assert status != 0 and "another run" in err
