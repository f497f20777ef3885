# SPDX-License-Identifier: BSD-2-Clause
"""The channel model's corruption (satemu.model.corrupt, which the gateware equals draw for
draw): the share of frames corrupted, the correlation of the decisions, the bit's position, the
counters, and the bytes the board model sends."""

from dataclasses import replace

import numpy as np

from satemu.base.ether import PREAMBLE, fcs
from satemu.base.params import ChannelParams, ChannelRegs, Fate
from satemu.model.board import FORWARD, PORT_A, PORT_B, RETURN, BoardModel
from satemu.model.channel import Commit, simulate
from satemu.model.corrupt import Corrupt, flipped

PARAMS = ChannelParams(corrupt=True)
BASE = ChannelRegs(delay=5000, mem_size=1 << 22, seed=3, loss_mode=1, loss_p=1 << 28)


def frames(n: int, length: int = 200):
    return [(1000 + 400 * i, length, 0) for i in range(n)]


def test_share_correlation_and_bits():
    """20,000 frames at 10% with correlation 0 and 0.6: the share is 10% within 0.6 points, the
    lag-1 correlation of the decisions is the declared one within 0.03, and the flipped bits
    cover the frame's 1,600 bits evenly (chi-square over 16 bands, 0.1%: 37.7)."""
    for corr in (0.0, 0.6):
        regs = replace(BASE, cor_p=round(0.1 * 2**32), cor_corr=round(corr * 65536))
        result = simulate(frames(20_000), regs, PARAMS)
        kept = [r for r in result.frames if r.fate is Fate.DELIVERED]
        hits = np.array([r.flip is not None for r in kept], dtype=float)
        assert abs(hits.mean() - 0.1) < 0.006, (corr, hits.mean())
        assert abs(np.corrcoef(hits[:-1], hits[1:])[0, 1] - corr) < 0.03
        assert result.counters["corrupted"] == hits.sum()
        assert result.counters["drop_loss"] > 1000           # loss draws on its own stream
        bits = np.array([r.flip for r in kept if r.flip is not None])
        assert bits.min() >= 0 and bits.max() < 1600
        counts = np.bincount(bits // 100, minlength=16)
        expected = len(bits) / 16
        assert ((counts - expected) ** 2 / expected).sum() < 37.7


def test_loss_draws_do_not_change_and_reseeds():
    """Corruption on or off, the same frames are lost (its streams are its own); a commit with
    RESEED restarts its streams and its last decision."""
    plain = simulate(frames(2000), BASE, PARAMS)
    regs = replace(BASE, cor_p=1 << 30, cor_corr=1 << 15)
    corrupted = simulate(frames(2000), regs, PARAMS)
    assert [r.fate for r in plain.frames] == [r.fate for r in corrupted.frames]
    again = replace(regs, seed=77)
    cut = frames(2000)[1000][0] - 1
    result = simulate(frames(2000), regs, PARAMS, commits=[Commit(cut, again, reseed=True)])
    model = Corrupt(77)
    for r in result.frames[1000:]:
        if r.fate is Fate.DELIVERED:
            assert r.flip == model.draw(again, 200)


def test_the_board_model_sends_the_flipped_bytes():
    """A frame the forward channel corrupts leaves port A with that bit flipped and a good FCS,
    every other frame as it came; BoD and the return channel likewise."""
    regs = {FORWARD: replace(BASE, loss_mode=0, cor_p=1 << 31),
            RETURN: replace(BASE, loss_mode=0, cor_p=1 << 31)}
    model = BoardModel(regs, cycle=1000)
    sent = {}
    for i in range(40):
        frame = bytes([i]) * 6 + bytes(range(100 + i))
        for port in (PORT_A, PORT_B):
            model.send(port, PREAMBLE + frame + fcs(frame), at=2000 + 300 * i)
            sent.setdefault(port, []).append(frame)
    model.run(10**6, halt_on_egress=False)
    model.finish()
    for ch, port in ((FORWARD, PORT_B), (RETURN, PORT_A)):
        results = [r for r in model.results[ch].frames]
        out = model.traffic.egress[ch]
        assert len(out) == 40 and sum(r.flip is not None for r in results) > 10
        for r, e, frame in zip(results, out, sent[port]):
            assert e.wire_ok and e.frame[:len(frame)] == flipped(frame, r.flip)
