# SPDX-License-Identifier: BSD-2-Clause
"""The channel model's jitter (satemu.model.jitter, which the gateware equals draw for draw):
each frame's delay follows the declared distribution, correlation repeats draws at the declared
rate, and frames never overtake one another."""

from dataclasses import replace

import numpy as np
import pytest

from satemu.base import distributions
from satemu.base.params import ChannelParams, ChannelRegs, Fate
from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import JITTER_SEED_XOR
from satemu.model.channel import Commit, simulate
from satemu.model.jitter import Jitter

PARAMS = ChannelParams(jitter=True)
SIGMA = 40_000                     # cycles: one sigma of the table
DELAY = 400_000                    # far above the floor and 8 sigma, so nothing is clamped
BASE = ChannelRegs(delay=DELAY, mem_size=1 << 22, queue_frames=1024, jit_sigma=SIGMA, seed=11)
ALPHA = 0.001                      # the significance of each Kolmogorov-Smirnov test


def spaced(n: int, gap: int = 400_000) -> list[tuple[int, int, int]]:
    """n frames far enough apart that none waits for the one ahead: each leaves at its own
    departure plus its delay."""
    return [(1000 + gap * i, 100, 0) for i in range(n)]


def jitters(result) -> np.ndarray:
    """Each delivered frame's jitter, in sigmas: its egress less its departure and the delay,
    plus a cycle (J = floor(entry x sigma / 8192), so entry / 8192 lies in [J, J + 1) / sigma:
    J + 1 is within a cycle above it, below the next entry)."""
    out = [(r.egress - r.departure - DELAY + 1) / SIGMA for r in result.frames
           if r.fate is Fate.DELIVERED]
    return np.array(out)


@pytest.mark.parametrize("name", distributions.NAMES)
def test_delays_follow_the_declared_distribution(name):
    """5,000 frames of a seeded run: the KS statistic of their jitter against the declared
    distribution (as the table holds it: clipped to +-4 sigma, netem's range) is below the
    critical value at 0.1%; and against another distribution it is far above it."""
    table = distributions.table(name)
    frames = spaced(5000)
    result = simulate(frames, BASE, PARAMS, jitter=(table, table))
    x = jitters(result)
    assert len(x) == 5000
    d = distributions.ks_statistic(x, lambda v: distributions.cdf_array(name, v, clipped=True))
    assert d < distributions.ks_critical(len(x), ALPHA), (name, d)
    other = "normal" if name != "normal" else "uniform"
    wrong = distributions.ks_statistic(x, lambda v: distributions.cdf_array(other, v,
                                                                            clipped=True))
    assert wrong > 3 * distributions.ks_critical(len(x), ALPHA), (name, other, wrong)


def test_jitter_is_the_table_entry_scaled_exactly():
    """Each frame's jitter is floor(entry x sigma / 2^13) of the entry its draw indexes, from the
    jitter's own stream (the seed xored with JITTER_SEED_XOR): the loss draws are untouched."""
    table = distributions.table("normal")
    regs = replace(BASE, jit_sigma=12_345)
    frames = spaced(300)
    result = simulate(frames, regs, PARAMS, jitter=(table, table))
    prng = Xoshiro128pp(regs.seed ^ JITTER_SEED_XOR)
    for r in result.frames:
        entry = table[prng.next() & 4095]
        assert r.egress - r.departure == DELAY + ((entry * 12_345) >> 13)


def test_correlation_repeats_draws_at_its_rate():
    """At correlation c a frame repeats the previous frame's entry with probability c (as well
    as by chance), so successive jitters correlate by about c and the marginal distribution
    stays the table's."""
    table = distributions.table("normal")
    for corr in (0.25, 0.75):
        regs = replace(BASE, jit_corr=round(corr * 65536))
        x = jitters(simulate(spaced(20_000), regs, PARAMS, jitter=(table, table)))
        r1 = np.corrcoef(x[:-1], x[1:])[0, 1]
        assert abs(r1 - corr) < 0.03, (corr, r1)
        r2 = np.corrcoef(x[:-2], x[2:])[0, 1]
        assert abs(r2 - corr ** 2) < 0.03, (corr, r2)
        d = distributions.ks_statistic(x, lambda v: distributions.cdf_array("normal", v,
                                                                            clipped=True))
        # Repeats make the sample's effective size smaller: n (1 - c) / (1 + c).
        n_eff = len(x) * (1 - corr) / (1 + corr)
        assert d < distributions.ks_critical(int(n_eff), ALPHA), (corr, d)


def test_frames_keep_their_order():
    """Dense traffic with jitter far wider than the frames' spacing: no frame starts before the
    one ahead of it has left, and one whose own delay is shorter waits for it."""
    table = distributions.table("pareto")
    frames = [(1000 + 700 * i, 60 + (i * 37) % 1400, 0) for i in range(3000)]
    regs = replace(BASE, jit_sigma=200_000, rate_q=1)
    result = simulate(frames, regs, PARAMS, jitter=(table, table))
    out = [(r.egress, r.departure) for r in result.frames if r.fate is Fate.DELIVERED]
    egress = [e for e, _ in out]
    assert all(b > a for a, b in zip(egress, egress[1:]))
    held = sum(e > d + DELAY + ((table[0] * 200_000) >> 13) for e, d in out)
    assert held > 100          # many frames left later than their own draw said: held back


def test_the_floor_and_reseeds():
    """A jitter that would take the delay below the latency floor waits for the floor; a commit
    with RESEED restarts the jitter's stream (and its last index) as it restarts the loss's."""
    table = distributions.table("uniform")
    regs = replace(BASE, delay=3000, jit_sigma=8000)
    frames = spaced(400, gap=50_000)
    result = simulate(frames, regs, PARAMS, jitter=(table, table))
    waits = [r.egress - r.departure for r in result.frames]
    assert min(waits) == PARAMS.latency_floor and waits.count(PARAMS.latency_floor) > 20
    again = replace(regs, seed=99)
    cut = frames[200][0] - 1
    result = simulate(frames, regs, PARAMS, jitter=(table, table),
                      commits=[Commit(cut, again, reseed=True)])
    model = Jitter(99, (table, table))
    for r in result.frames[200:]:
        j = model.draw(again)
        assert r.egress - r.departure == max(3000 + j, PARAMS.latency_floor)


def test_two_banks_and_bad_banks():
    """A commit may switch the bank in force; a model given banks of the wrong size refuses."""
    normal, uniform = distributions.table("normal"), distributions.table("uniform")
    frames = spaced(100)
    both = simulate(frames, replace(BASE, jit_bank=1), PARAMS, jitter=(normal, uniform))
    alone = simulate(frames, BASE, PARAMS, jitter=(uniform, normal))
    assert [r.egress for r in both.frames] == [r.egress for r in alone.frames]
    with pytest.raises(ValueError, match="two banks of 4096"):
        simulate(frames, BASE, PARAMS, jitter=(normal,))
