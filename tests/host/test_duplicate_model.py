# SPDX-License-Identifier: BSD-2-Clause
"""The channel model's duplication (satemu.model.duplicate, which the gateware equals draw for
draw): the share of frames copied, the correlation of the decisions, the copy as a frame of its
own behind its original, the counters, and what the board model and its capture say."""

from dataclasses import replace

import numpy as np

from satemu.base.ether import PREAMBLE, fcs
from satemu.base.params import FATE_COPY, ChannelParams, ChannelRegs, Fate
from satemu.box.port_capture import check_counts, fates_of, write_capture
from satemu.base.pcapng import read_pcapng
from satemu.link.registers import channel_registers
from satemu.model.board import FORWARD, PORT_A, PORT_B, RETURN, BoardModel
from satemu.model.channel import Commit, simulate
from satemu.model.duplicate import Duplicate

PARAMS = ChannelParams(duplicate=True)
BASE = ChannelRegs(delay=5000, mem_size=1 << 22, seed=3, loss_mode=1, loss_p=1 << 28)


def frames(n: int, length: int = 200, gap: int = 400):
    return [(1000 + gap * i, length, 0) for i in range(n)]


def test_share_correlation_and_counters():
    """20,000 frames at 10% with correlation 0 and 0.6: the share copied is 10% within three
    standard errors, the lag-1 correlation of the decisions the declared one within 0.03; each copy
    follows its original, draws its own loss, and the counters add up with the copies."""
    for corr in (0.0, 0.6):
        regs = replace(BASE, dup_p=round(0.1 * 2**32), dup_corr=round(corr * 65536))
        result = simulate(frames(20_000), regs, PARAMS)
        copied = np.array([b.copy for b in result.frames[1:]] + [False], dtype=float)
        hits = np.array([c for r, c in zip(result.frames, copied) if not r.copy])
        assert len(hits) == 20_000
        # (three standard errors; correlated decisions count as (1 - c) / (1 + c) as many)
        assert abs(hits.mean() - 0.1) < 3 * np.sqrt(0.09 / 20_000 * (1 + corr) / (1 - corr))
        assert abs(np.corrcoef(hits[:-1], hits[1:])[0, 1] - corr) < 0.03
        c = result.counters
        assert c["duplicated"] == hits.sum() and c["rx_frames"] == 20_000
        drops = sum(v for k, v in c.items() if k.startswith("drop_"))
        assert c["rx_frames"] + c["duplicated"] == c["tx_frames"] + drops
        copies = [r for r in result.frames if r.copy]
        # The copy's loss is its own draw: some copies lost, some originals lost and not the copy.
        assert any(r.fate is Fate.LOSS for r in copies)
        pairs = [(a, b) for a, b in zip(result.frames, result.frames[1:]) if b.copy]
        assert any(a.fate is Fate.LOSS and b.fate is Fate.DELIVERED for a, b in pairs)
        for a, b in pairs:
            if a.fate is Fate.DELIVERED and b.fate is Fate.DELIVERED:
                assert b.egress > a.egress and b.departure >= a.departure
        assert result.offered()[-1] == 19_999


def test_the_copy_takes_the_rate_and_the_queue():
    """Shaped at 200 cycles a frame, frames every 400 cycles all copied: every copy leaves one
    serialisation time behind its original; then, with frames every 200 cycles, the queue
    fills and drops copies and originals alike."""
    regs = replace(BASE, loss_mode=0, rate_q=1, dup_p=2**32 - 1, queue_frames=8)
    result = simulate(frames(100), regs, PARAMS)
    for a, b in zip(result.frames[::2], result.frames[1::2]):
        assert b.copy and not a.copy and b.departure - a.departure == 200
    dense = simulate(frames(400, gap=200), regs, PARAMS)
    assert dense.counters["drop_queue"] > 100
    assert any(r.copy and r.fate is Fate.QUEUE for r in dense.frames)


def test_draws_reseed_and_loss_draws_are_unchanged_without_copies():
    """Duplication at 0% changes no frame (its streams are its own); a commit with RESEED
    restarts its streams and its last decision."""
    plain = simulate(frames(2000), BASE, PARAMS)
    none = simulate(frames(2000), replace(BASE, dup_p=1), PARAMS)
    assert [r.fate for r in plain.frames] == [r.fate for r in none.frames]
    regs = replace(BASE, dup_p=1 << 30, dup_corr=1 << 15)
    again = replace(regs, seed=77)
    cut = frames(2000)[1000][0] - 1
    result = simulate(frames(2000), regs, PARAMS, commits=[Commit(cut, again, reseed=True)])
    model = Duplicate(77)
    after = result.frames[result.offered().index(1000):]
    want = []
    for r in after:
        if not r.copy:
            want.append(model.draw(again))
    got = [b.copy for b in after[1:]] + [False]
    assert [g for r, g in zip(after, got) if not r.copy] == want


def test_the_board_model_sends_both_and_the_capture_says_so(tmp_path):
    """Each port's frames, half copied: the copy leaves right behind its original with the same
    bytes, the fate reports mark it, the pcapng's comments say so and its counts agree with the
    counters."""
    f_clk = 10_000_000
    base = channel_registers(f_clk=f_clk, rate_bps=10_000_000, mem_size=1 << 20, seed=5,
                             loss=0.1)
    regs = {ch: replace(base, dup_p=1 << 31) for ch in (FORWARD, RETURN)}
    model = BoardModel(regs, cycle=1000)
    wires = {}
    for i in range(60):
        frame = bytes([i]) * 6 + bytes(range(100 + i))
        for port in (PORT_A, PORT_B):
            wire = PREAMBLE + frame + fcs(frame)
            model.send(port, wire, at=2000 + 300 * i)
            wires.setdefault(port, []).append((2000 + 300 * i, wire))
    model.run(10**7, halt_on_egress=False)
    model.finish()
    for ch, port in ((FORWARD, PORT_B), (RETURN, PORT_A)):
        reports = model.traffic.fates[ch]
        assert sum(f & FATE_COPY != 0 for f in reports) == model.results[ch].counters[
            "duplicated"] > 10
        got = fates_of(model.traffic, port, [w for _, w in wires[port]])
        for (_, wire), f in zip(wires[port], got):
            if f.copy is not None and f.copy.egress is not None:
                assert f.copy.egress.data == f.egress.data if f.egress else True
                assert f.copy.egress.data[len(PREAMBLE):] == wire[len(PREAMBLE):]
                if f.egress is not None:
                    assert f.copy.egress.start > f.egress.start
    path = tmp_path / "dup.pcapng"
    summary = write_capture(path, model.traffic, wires, f_clk)
    stats = {"forward": model.stats(FORWARD), "return": model.stats(RETURN)}
    assert check_counts(summary, stats) == []
    comments = [c for p in read_pcapng(path).packets for c in p.comments]
    assert any("; duplicated, the copy: delivered, left port" in c for c in comments)
    assert any("; duplicated, the copy: dropped: loss" in c for c in comments)
