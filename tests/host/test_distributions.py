# SPDX-License-Identifier: BSD-2-Clause
"""satemu.base.distributions: the named tables are netem's distributions, and .dist parsing."""

import math

import numpy as np
import pytest

from satemu.base.distributions import (NAMES, SCALE, TABLE_MAX, TABLE_MIN, TABLE_SIZE,
    DistributionError, cdf, cdf_array, ks_critical, ks_statistic, normal_quantile, quantile,
    read_table, table, table_stats)

QUANT = 2 / TABLE_SIZE           # the KS bound a table's quantisation allows
HI = TABLE_MAX / SCALE           # the top of the table's range, in sigma units


def clipped(name):
    return lambda xs: cdf_array(name, xs, clipped=True)


def empirical(values):
    """The CDF of a table's values (sigma units), for KS distances between two tables."""
    ordered = np.sort(np.asarray(values, dtype=float))
    return lambda xs: np.searchsorted(ordered, xs, side="right") / ordered.size


def entry(x):
    """``x`` sigma as a table entry: rounded, clipped."""
    return min(TABLE_MAX, max(TABLE_MIN, round(x * SCALE)))


def as_dist(values, per_line=8, header="# This is a test table.\n"):
    """``values`` as iproute2's generators print a .dist file."""
    rows = [" ".join(str(v) for v in values[i:i + per_line])
            for i in range(0, len(values), per_line)]
    return header + "\n".join(rows) + "\n"


# --- the named tables -------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_table_shape(name):
    t = table(name)
    assert isinstance(t, tuple) and len(t) == TABLE_SIZE
    assert all(type(v) is int and TABLE_MIN <= v <= TABLE_MAX for v in t)
    assert list(t) == sorted(t)                     # quantiles at increasing u
    assert table(name) is t                         # cached


def test_uniform_table():
    t = table("uniform")
    assert t == tuple(4 * i + 2 - 8192 for i in range(TABLE_SIZE))    # 2u - 1, u at midpoints
    s = table_stats(t)
    assert -8192 <= s["min"] == -8190 and s["max"] == 8190 <= 8191
    assert s["mean"] == 0.0 and s["sd"] == pytest.approx(1 / math.sqrt(3), abs=1e-6)


def test_normal_table():
    t = table("normal")
    assert all(t[i] == -t[TABLE_SIZE - 1 - i] for i in range(TABLE_SIZE))      # exactly odd
    s = table_stats(t)
    assert abs(s["mean"]) < 0.01 and abs(s["sd"] - 1) < 0.01
    # The midpoint grid stops at the quantile of 0.5 / 4096 (3.67 sd): sd 0.9998.
    assert s["min"] == -30051 and s["max"] == 30051 and s["sd"] == pytest.approx(0.9998, abs=1e-4)


def test_pareto_table():
    """iproute2's pareto: (X - 3/2) * 4/3, X Pareto(a=3, x_m=1): mean 0, sd 2/sqrt(3) unclipped.
    Clipping at TABLE_MAX takes the top 1/91.125 of it; the clipped moments in closed form
    (with c the clip in X): E min(X, c) = 3/2 - 1/(2c^2), E min(X, c)^2 = 3 - 2/c. So clipping
    moves the mean by -0.033 and the sd from 1.155 to 0.821."""
    t = table("pareto")
    c = 1.5 + HI * 3 / 4
    mean = (1.5 - 1 / (2 * c * c) - 1.5) * 4 / 3
    sd = 4 / 3 * math.sqrt(3 - 2 / c - (1.5 - 1 / (2 * c * c)) ** 2)
    assert mean == pytest.approx(-0.0329, abs=1e-4) and sd == pytest.approx(0.8209, abs=1e-4)
    s = table_stats(t)
    assert abs(s["mean"] - mean) < 0.002 and abs(s["sd"] - sd) < 0.002
    assert abs(s["mean"]) < 0.04 and abs(s["sd"] - 1) < 0.2      # "about 0 and 1", as clipped
    assert s["min"] == round(-2 / 3 * SCALE) == -5461 and s["max"] == TABLE_MAX
    clip_mass = 1 - cdf("pareto", HI)
    assert clip_mass == pytest.approx(1 / 91.125, rel=1e-3)
    assert abs(t.count(TABLE_MAX) / TABLE_SIZE - clip_mass) < 1 / TABLE_SIZE


def test_paretonormal_table():
    """iproute2's paretonormal: (normal + 3 * pareto) / 4 at the same u. Unclipped mean 0 and
    sd 1.0518; clipping (0.85 % of it) moves the mean by -0.022 and the sd to 0.850."""
    t, tn, tp = table("paretonormal"), table("normal"), table("pareto")
    s = table_stats(t)
    assert s["mean"] == pytest.approx(-0.0215, abs=0.001) and abs(s["mean"]) < 0.03
    assert s["sd"] == pytest.approx(0.8495, abs=0.001) and abs(s["sd"] - 1) < 0.2
    assert s["min"] == -11608 and s["max"] == TABLE_MAX
    unclipped = [i for i in range(TABLE_SIZE) if tp[i] < TABLE_MAX and t[i] < TABLE_MAX]
    assert len(unclipped) > 0.98 * TABLE_SIZE
    assert all(abs(4 * t[i] - (tn[i] + 3 * tp[i])) <= 4 for i in unclipped)
    # iproute2's own formula (pareto part clipped first, C division) differs in the top 1.1 %.
    iproute2 = [int((tn[i] + 3 * tp[i]) / 4) for i in range(TABLE_SIZE)]
    differ = sum(abs(a - b) > 1 for a, b in zip(iproute2, t))
    assert 0 < differ <= 0.011 * TABLE_SIZE + 1


@pytest.mark.parametrize("name", NAMES)
def test_table_is_the_declared_distribution(name):
    """The table's values against the declared CDF: only quantisation and (pareto,
    paretonormal) the clipped mass stand between them, and against the clipped CDF only
    quantisation."""
    v = np.array(table(name)) / SCALE
    clip_mass = 1 - cdf(name, HI)
    d = ks_statistic(v, name)
    if name in ("uniform", "normal"):
        assert d < QUANT and clip_mass < 1e-4
    else:
        assert clip_mass - 1e-12 <= d <= clip_mass + QUANT and 0.008 < clip_mass < 0.011
    assert ks_statistic(v, clipped(name)) < QUANT


@pytest.mark.parametrize("seed,name", list(enumerate(NAMES)))
def test_sampled_table_passes_ks(seed, name):
    """20000 uniform 12-bit indices, as the gateware draws them, pass KS at alpha = 0.01."""
    idx = np.random.default_rng(1000 + seed).integers(0, TABLE_SIZE, 20_000)
    samples = np.array(table(name))[idx] / SCALE
    crit = ks_critical(samples.size, 0.01)
    assert ks_statistic(samples, clipped(name)) < crit
    if name in ("uniform", "normal"):
        assert ks_statistic(samples, name) < crit


def test_wrong_pairing_fails_ks():
    idx = np.random.default_rng(7).integers(0, TABLE_SIZE, 20_000)
    crit = ks_critical(idx.size, 0.01)
    normal = np.array(table("normal"))[idx] / SCALE
    assert ks_statistic(normal, "uniform") > 10 * crit
    assert ks_statistic(np.array(table("pareto"))[idx] / SCALE, "normal") > 10 * crit
    assert ks_statistic(np.array(table("paretonormal"))[idx] / SCALE, clipped("pareto")) > crit


# --- CDFs and quantiles -----------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_cdf_inverts_quantile(name):
    us = [1e-6, 0.001, 0.1, 0.3, 0.5, 0.77, 0.95, 0.999, 1 - 1e-6]
    qs = np.array([quantile(name, u) for u in us])
    assert np.all(np.abs(cdf_array(name, qs) - us) < 1e-12)
    assert [cdf(name, q) for q in qs] == list(cdf_array(name, qs))
    xs = np.linspace(-6, 6, 241)
    f = cdf_array(name, xs)
    assert np.all(np.diff(f) >= 0) and f[0] >= 0 and f[-1] <= 1
    assert list(cdf_array(name, [-np.inf, np.inf])) == [0.0, 1.0]
    assert math.isnan(cdf(name, math.nan))
    fc = cdf_array(name, [-4.5, -4.0, 0.0, HI, 5.0], clipped=True)
    assert fc[0] == 0.0 and fc[2] == cdf(name, 0.0) and fc[3] == fc[4] == 1.0


def test_cdf_closed_forms():
    assert cdf("uniform", -1) == 0 and cdf("uniform", 0) == 0.5 and cdf("uniform", 0.5) == 0.75
    assert cdf("normal", 0) == 0.5
    assert cdf("normal", 1.959963984540054) == pytest.approx(0.975, abs=1e-15)
    assert cdf("pareto", -2 / 3 - 1e-9) == 0 and cdf("pareto", -2 / 3) == 0
    assert cdf("pareto", 0) == pytest.approx(1 - 1.5 ** -3, abs=1e-15)    # X below its mean
    # paretonormal's median: Q(1/2) = 0 / 4 + 3/4 * (2^(1/3) - 3/2) * 4/3.
    assert cdf("paretonormal", 2 ** (1 / 3) - 1.5) == pytest.approx(0.5, abs=1e-13)


def test_normal_quantile_against_erf():
    for p in (1e-3, 0.02, 0.02425, 0.1, 0.25, 0.5, 0.6, 0.841344746068543, 0.975, 0.999):
        x = normal_quantile(p)
        err = abs(0.5 * (1 + math.erf(x / math.sqrt(2))) - p)
        assert err / math.exp(-x * x / 2) * math.sqrt(2 * math.pi) < 1e-12       # in x
    for p in (1e-300, 1e-100, 1e-20, 1e-10, 1e-5):                # tails: erfc, not 1 + erf
        x = normal_quantile(p)
        assert abs(0.5 * math.erfc(-x / math.sqrt(2)) / p - 1) < 1e-13
    known = {0.5: 0.0, 0.975: 1.959963984540054, 0.95: 1.6448536269514722,
             0.999: 3.090232306167813, 1e-10: -6.361340902404056}
    for p, x in known.items():
        assert normal_quantile(p) == pytest.approx(x, abs=1e-14)
    assert all(normal_quantile((i + 0.5) / 4096) == -normal_quantile((4095 - i + 0.5) / 4096)
               for i in range(0, 4096, 97))
    assert normal_quantile(0) == -math.inf and normal_quantile(1) == math.inf
    assert -38.47 < normal_quantile(5e-324) < -38.46                  # subnormal: no overflow
    with pytest.raises(DistributionError, match=r"^normal quantile of 1\.5: p must be in"):
        normal_quantile(1.5)


def test_unknown_name():
    for call in (lambda: table("gauss"), lambda: cdf("gauss", 0), lambda: quantile("gauss", .5),
                 lambda: ks_statistic([0.0], "gauss")):
        with pytest.raises(DistributionError) as e:
            call()
        assert str(e.value) == ('unknown distribution "gauss": the names are uniform, normal, '
                                'pareto, paretonormal')


# --- statistics -------------------------------------------------------------------------------

def test_table_stats():
    assert table_stats([-8192, 8192]) == {"mean": 0.0, "sd": 1.0, "min": -8192, "max": 8192}
    with pytest.raises(DistributionError, match="empty"):
        table_stats([])


def test_ks_statistic_and_critical():
    unit = lambda x: min(max(x, 0.0), 1.0)           # noqa: E731  a CDF of one float
    assert ks_statistic([0.1, 0.4, 0.7], unit) == pytest.approx(0.3)
    assert ks_statistic([0.5, 0.5], np.vectorize(unit)) == pytest.approx(0.5)   # ties
    midpoints = np.linspace(-1, 1, 2001)[:-1] + 0.0005             # D = 1 / (2n) exactly
    assert ks_statistic(midpoints, "uniform") == pytest.approx(0.5 / 2000, abs=1e-12)
    assert ks_critical(20_000, 0.01) == pytest.approx(0.0115091, abs=1e-6)
    assert ks_critical(1, 0.05) == pytest.approx(1.3581, abs=1e-4)
    for bad in ((0, 0.01), (10, 0.0), (10, 1.0), (2.5, 0.1)):
        with pytest.raises(DistributionError, match="^ks critical: "):
            ks_critical(*bad)
    with pytest.raises(DistributionError, match="^ks statistic: no samples$"):
        ks_statistic([], "normal")


# --- user tables ------------------------------------------------------------------------------

def test_read_table_round_trips():
    for name in NAMES:
        assert read_table(as_dist(table(name))) == table(name)
    shuffled = [int(v) for v in np.random.default_rng(3).permutation(table("pareto"))]
    assert read_table(as_dist(shuffled, per_line=5)) == tuple(shuffled)     # order kept


def test_read_table_comments_and_blanks():
    text = ("# a comment\n\n   # an indented one\n  1 -2\t3\r\n\n+4 -0\n# 99 not data\n"
            + " ".join(["5"] * 4091) + "\n")
    t = read_table(text)
    assert len(t) == TABLE_SIZE and t == (1, -2, 3, 4, 0) + (5,) * 4091


def test_read_table_resamples_16384_entries():
    """iproute2-sized (16384) normal table: the sorted values' every fourth, shifted to the
    midpoints; the shuffled table gives the same table."""
    big = [entry(normal_quantile((j + 0.5) / 16384)) for j in range(16384)]
    t = read_table(as_dist(big))
    assert t == tuple(big[4 * i + 2] for i in range(TABLE_SIZE))
    assert ks_statistic(np.array(t) / SCALE, empirical(np.array(big) / SCALE)) <= 0.5 / 4096
    assert ks_statistic(np.array(t) / SCALE, "normal") < QUANT
    mixed = [int(v) for v in np.random.default_rng(5).permutation(big)]
    assert read_table(as_dist(mixed)) == t


def test_read_table_resamples_100_entries():
    small = [entry(quantile("paretonormal", (j + 0.5) / 100)) for j in range(100)]
    mixed = [int(v) for v in np.random.default_rng(9).permutation(small)]
    t = read_table(" ".join(map(str, mixed)))
    assert list(t) == sorted(t) and set(t) == set(small)
    assert {t.count(v) for v in small} == {40, 41}                  # 4096 / 100 = 40.96
    assert ks_statistic(np.array(t) / SCALE, empirical(np.array(small) / SCALE)) <= 0.5 / 4096


def test_read_table_two_values():
    assert read_table("-8192 8192") == (-8192,) * 2048 + (8192,) * 2048


@pytest.mark.parametrize("text,message", [
    ("1 2\n3 12a 4\n", 'jitter table x.dist line 2: "12a" is not an integer'),
    ("# h\n0x10 1\n", 'jitter table x.dist line 2: "0x10" is not an integer'),
    ("1.5 2", 'jitter table x.dist line 1: "1.5" is not an integer'),
    ("1 2 # trailing", 'jitter table x.dist line 1: "#" is not an integer'),
    ("1 \x002", 'jitter table x.dist line 1: "\\x002" is not an integer'),
    ("7 " + "9" * 30, 'jitter table x.dist line 1: "999999999999999999999999..." is outside '
                      '-32768..32767'),
    ("0\n1\n32768\n", 'jitter table x.dist line 3: "32768" is outside -32768..32767'),
    ("-32769 0", 'jitter table x.dist line 1: "-32769" is outside -32768..32767'),
    ("", "jitter table x.dist: no values, a table needs at least 2"),
    ("# only comments\n\n  \n", "jitter table x.dist: no values, a table needs at least 2"),
    ("# one\n-32768\n", "jitter table x.dist: 1 value, a table needs at least 2"),
    ("0 " * 65536 + "\n1\n", "jitter table x.dist line 2: more than 65536 values"),
    ("0 " * 500_001, "jitter table x.dist: 1000002 characters, more than the 1000000 a table "
                     "may have"),
])
def test_read_table_errors(text, message):
    with pytest.raises(DistributionError) as e:
        read_table(text, "jitter table x.dist")
    assert str(e.value) == message and "\n" not in str(e.value)


def test_read_table_limits_are_inclusive():
    assert len(read_table("-32768 32767 " * 32768)) == TABLE_SIZE          # 65536 values
    text = "1 2" + " " * (1_000_000 - 3)
    assert len(text) == 1_000_000 and read_table(text)[0] == 1
    with pytest.raises(DistributionError, match="^table: expected text, not bytes$"):
        read_table(b"1 2")
