# SPDX-License-Identifier: BSD-2-Clause
"""The jitter tables of the named netem distributions, netem ``.dist`` tables, and KS checks."""

# The gateware adds J = (table[i] * sigma) >> 13 to a frame's delay, i a uniform 12-bit index and
# table[] TABLE_SIZE signed 16-bit entries in units of sigma / SCALE (netem's NETEM_DIST_SCALE).
# A table is an inverse CDF sampled uniformly; as the index is drawn uniformly, the entries'
# order does not matter to the distribution.
#
# table(name) holds the quantiles Q(u) of the named distribution at u = (i + 0.5) / TABLE_SIZE,
# in sigma units, times SCALE, rounded to nearest and clipped to [TABLE_MIN, TABLE_MAX] (so to
# [-4, 4) sigma). The distributions are netem's, so that "delay D J distribution X" means what
# it means to tc (iproute2's netem/*.c generators, Linux's sch_netem.c):
#
# uniform       Q(u) = 2u - 1: uniform on [-1, 1), what netem draws with no table (mu +- sigma).
# normal        Q(u) = inverse standard normal CDF: mean 0, sd 1 (iproute2's normal.c).
# pareto        iproute2's pareto.c: X = U^(-1/3) is Pareto with shape a = 3 and x_m = 1 (mean
#               3/2, variance 3/4) and the entry is (X - 3/2) * 4/3. So mean 0, but sd 2/sqrt(3)
#               = 1.1547 and not 1: iproute2's factor 4/3 is 1 / variance, not 1 / sd, and that
#               is the scale netem users get, so it is kept. Support [-2/3, inf); CDF
#               F(y) = 1 - (3/2 + 3y/4)^-3. Clipping at 4 sigma cuts off its top 1/91.125 =
#               1.10 % and with it much of the heavy tail's variance (table sd 0.82, see below).
# paretonormal  iproute2's paretonormal.c: entry = (normal + 3 * pareto) / 4 with both taken at
#               the same u, i.e. Q(u) = Qnormal(u) / 4 + 3 Qpareto(u) / 4: the comonotone sum of
#               a quarter of the normal above and three quarters of the pareto above (not a sum
#               of independent draws, which iproute2 does not do). Mean 0 and sd 1.0518
#               unclipped. Its CDF has no closed form: cdf() inverts Q numerically (it solves
#               z / 4 + 3 Qpareto(Phi(z)) / 4 = x for z by bisection; F(x) = Phi(z)).
#               iproute2 clips the pareto part at 32767 before mixing and truncates the mix toward
#               zero; here only the mix is rounded and clipped, which differs from iproute2's
#               table only in its top 1.1 % (entries from 3.57 up to 4 instead of up to 3.9).
#
# iproute2 samples u at i / TABLE_SIZE (normal, paretonormal: its 16384-step sweep; pareto: from
# 1 down); the midpoints here are the unbiased choice and move each entry by under a quantile
# step. The tables' stats (table_stats) show what the grid and the clipping change:
#
#   name          mean     sd       min     max    mass beyond TABLE_MAX / SCALE (1 - F(3.9999))
#   uniform        0       0.5774   -8190    8190  0
#   normal         0       0.9998  -30051   30051  3.2e-5 (the table's extreme entries are 3.67)
#   pareto        -0.0329  0.8209   -5461   32767  0.01097 (unclipped: mean 0, sd 1.1547)
#   paretonormal  -0.0215  0.8495  -11608   32767  0.00848 (unclipped: mean 0, sd 1.0518)
#
# Sources: iproute2 netem/normal.c, pareto.c, paretonormal.c (the generators of the .dist files
# tc loads), tc/q_netem.c get_distribution() (the .dist format), Linux net/sched/sch_netem.c
# tabledist() (no table: uniform mu +- sigma; a table: mu + entry * sigma / NETEM_DIST_SCALE).

from __future__ import annotations

import functools
import math
import re
from typing import Callable

import numpy as np

__all__ = ["TABLE_SIZE", "SCALE", "TABLE_MIN", "TABLE_MAX", "NAMES", "MAX_VALUES", "MAX_TEXT",
           "PARETO_SHAPE", "PARETO_FACTOR", "PARETONORMAL_WEIGHTS", "DistributionError",
           "table", "cdf", "cdf_array", "normal_quantile", "quantile", "read_table",
           "table_stats", "ks_statistic", "ks_critical"]

TABLE_SIZE = 4096
SCALE = 8192                        # netem's NETEM_DIST_SCALE: an entry of SCALE is one sigma
TABLE_MIN = -32768
TABLE_MAX = 32767
NAMES = ("uniform", "normal", "pareto", "paretonormal")

MAX_VALUES = 65536                  # read_table's limits
MAX_TEXT = 1_000_000

PARETO_SHAPE = 3.0                  # iproute2's pareto.c: a = 3, x_m = 1
_PARETO_MEAN = PARETO_SHAPE / (PARETO_SHAPE - 1)                # 3/2, subtracted as iproute2 does
PARETO_FACTOR = 4.0 / 3.0           # iproute2's scale: 1 / variance (3/4), so sd 2/sqrt(3)
PARETONORMAL_WEIGHTS = (0.25, 0.75)  # iproute2's paretonormal.c: (normal + 3 * pareto) / 4

_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)
_ERFC_OBJECTS = np.frompyfunc(math.erfc, 1, 1)
_CLIP_LO = TABLE_MIN / SCALE
_CLIP_HI = TABLE_MAX / SCALE


class DistributionError(ValueError):
    """A distribution name or a jitter table that cannot be used; the message is one line."""


def _show(token: str, limit: int = 24) -> str:
    """``token`` quoted for a one-line message: cut to ``limit`` characters, unprintable ones
    escaped."""
    cut = token[:limit]
    out = []
    for ch in cut:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return '"' + "".join(out) + ("..." if len(token) > limit else "") + '"'


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in NAMES:
        shown = _show(name) if isinstance(name, str) else type(name).__name__
        raise DistributionError(f"unknown distribution {shown}: the names are "
                                + ", ".join(NAMES))
    return name


# --- the inverse normal CDF -------------------------------------------------------------------

# Acklam's rational approximation (relative error below 1.15e-9), then one Halley step on
# Phi(x) - p with math.erfc, which takes it to the precision of the double arithmetic.
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)
_P_LOW = 0.02425


def _lower_half(q: float) -> float:
    """The normal quantile of 0 < q <= 1/2 (so x <= 0)."""
    if q < _P_LOW:
        r = math.sqrt(-2.0 * math.log(q))
        num = ((((_C[0] * r + _C[1]) * r + _C[2]) * r + _C[3]) * r + _C[4]) * r + _C[5]
        den = (((_D[0] * r + _D[1]) * r + _D[2]) * r + _D[3]) * r + 1.0
        x = num / den
    else:
        r = q - 0.5
        s = r * r
        num = (((((_A[0] * s + _A[1]) * s + _A[2]) * s + _A[3]) * s + _A[4]) * s + _A[5]) * r
        den = ((((_B[0] * s + _B[1]) * s + _B[2]) * s + _B[3]) * s + _B[4]) * s + 1.0
        x = num / den
    # Halley: u = (Phi(x) - q) / phi(x), with 1 / phi(x) = q * sqrt(2 pi) exp(x^2 / 2) / q taken
    # through the logarithm so that it does not overflow for the smallest (subnormal) q.
    e = 0.5 * math.erfc(-x / _SQRT2) - q
    u = e / q * _SQRT2PI * math.exp(math.log(q) + 0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


def normal_quantile(p: float) -> float:
    """The standard normal's inverse CDF at ``p`` (-inf at 0, inf at 1); exactly odd about 1/2
    for the p whose 1 - p is exact. Absolute error under 1e-13 from 1e-300 to 1 - 1e-16."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise DistributionError(f"normal quantile of {p!r}: p must be in [0, 1]")
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p <= 0.5:
        return _lower_half(p)
    return -_lower_half(1.0 - p)


# --- quantiles and CDFs -----------------------------------------------------------------------

def _pareto_quantile(u: float) -> float:
    return ((1.0 - u) ** (-1.0 / PARETO_SHAPE) - _PARETO_MEAN) * PARETO_FACTOR


def quantile(name: str, u: float) -> float:
    """The named distribution's quantile at 0 < u < 1, in sigma units, unrounded and
    unclipped."""
    _check_name(name)
    u = float(u)
    if not 0.0 < u < 1.0:
        raise DistributionError(f"quantile of {u!r}: u must be in (0, 1)")
    if name == "uniform":
        return 2.0 * u - 1.0
    if name == "normal":
        return normal_quantile(u)
    if name == "pareto":
        return _pareto_quantile(u)
    wn, wp = PARETONORMAL_WEIGHTS
    return wn * normal_quantile(u) + wp * _pareto_quantile(u)


def _erfc(z: np.ndarray) -> np.ndarray:
    """math.erfc of each element (numpy has no erfc), as a float array of z's shape."""
    return np.asarray(_ERFC_OBJECTS(z), dtype=float)


def _phi(z: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(-z / _SQRT2)


def _pareto_cdf(x: np.ndarray) -> np.ndarray:
    base = _PARETO_MEAN + x / PARETO_FACTOR          # the Pareto variable X, >= 1 on the support
    return np.where(base >= 1.0, 1.0 - np.maximum(base, 1.0) ** -PARETO_SHAPE, 0.0)


def _paretonormal_cdf(x: np.ndarray) -> np.ndarray:
    """Inverts Q(Phi(z)) = z/4 + 3/4 Qpareto(Phi(z)), increasing in z, by bisection on z in
    [-40, 40] (Phi is 0 and 1 there in doubles); 60 halvings leave a bracket under 1e-16."""
    wn, wp = PARETONORMAL_WEIGHTS
    xs, back = np.unique(x, return_inverse=True)
    lo = np.full(xs.shape, -40.0)
    hi = np.full(xs.shape, 40.0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        tail = np.maximum(0.5 * _erfc(mid / _SQRT2), 1e-300)                   # 1 - Phi(mid)
        q = wn * mid + wp * (tail ** (-1.0 / PARETO_SHAPE) - _PARETO_MEAN) * PARETO_FACTOR
        below = q < xs
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return _phi(0.5 * (lo + hi))[back].reshape(x.shape)


def cdf_array(name: str, xs, clipped: bool = False) -> np.ndarray:
    """The named distribution's CDF at each of ``xs`` (sigma units), as a float array.

    With ``clipped`` it is the CDF of the distribution clipped to the table's range, as the
    table holds it: 0 below TABLE_MIN / SCALE, 1 from TABLE_MAX / SCALE on (the mass beyond
    each end sits on it), the declared CDF between; NaN gives NaN."""
    _check_name(name)
    x = np.asarray(xs, dtype=float)
    if name == "uniform":
        out = np.clip((x + 1.0) / 2.0, 0.0, 1.0)
    elif name == "normal":
        out = _phi(x)
    elif name == "pareto":
        out = _pareto_cdf(x)
    else:
        out = _paretonormal_cdf(x) if x.size else np.zeros(x.shape)
    if clipped:
        out = np.where(x < _CLIP_LO, 0.0, np.where(x >= _CLIP_HI, 1.0, out))
    return np.where(np.isnan(x), np.nan, out)


def cdf(name: str, x: float, clipped: bool = False) -> float:
    """The named distribution's CDF at ``x`` in sigma units (``clipped``: as cdf_array)."""
    return float(cdf_array(name, np.array([float(x)]), clipped)[0])


# --- tables -----------------------------------------------------------------------------------

def _entry(value: float) -> int:
    return min(TABLE_MAX, max(TABLE_MIN, round(value * SCALE)))


@functools.lru_cache(maxsize=None)
def _table(name: str) -> tuple[int, ...]:
    return tuple(_entry(quantile(name, (i + 0.5) / TABLE_SIZE)) for i in range(TABLE_SIZE))


def table(name: str) -> tuple[int, ...]:
    """The named distribution's TABLE_SIZE entries, ascending: the quantile at
    u = (i + 0.5) / TABLE_SIZE, in units of sigma / SCALE, rounded to nearest (ties to even,
    so that normal's table is exactly odd), clipped to [TABLE_MIN, TABLE_MAX]. Deterministic
    and cached."""
    return _table(_check_name(name))


def table_stats(t) -> dict:
    """``mean`` and ``sd`` (population sd: the table is the whole distribution) of a table's
    entries in sigma units, and its ``min`` and ``max`` entries."""
    a = np.asarray(t, dtype=np.int64)
    if a.ndim != 1 or a.size == 0:
        raise DistributionError("table stats: the table is empty")
    v = a / SCALE
    return {"mean": float(v.mean()), "sd": float(v.std()), "min": int(a.min()),
            "max": int(a.max())}


# --- user tables in netem's .dist format ------------------------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+")
_SPACE = re.compile(r"[ \t\r\f\v]+")


def read_table(text: str, source: str = "table") -> tuple[int, ...]:
    """A jitter table from ``text`` in netem's ``.dist`` format (as iproute2 ships in
    /usr/lib/tc or /usr/share/tc): signed decimal integers separated by blanks and newlines,
    in units of sigma / SCALE; blank lines and lines whose first non-blank is ``#`` are comments.

    Stricter than tc's reader (strtol on each line until the first non-number): every token must
    be a decimal integer (tc would read 0x10 as 16 and 010 as 8; here 0x10 is an error and 010
    is ten) in [TABLE_MIN, TABLE_MAX] (tc silently truncates to 16 bits); at least 2 and at most
    MAX_VALUES values (netem itself takes at most 16384); the text at most MAX_TEXT characters.

    A table of TABLE_SIZE values is returned as given, in its order (netem indexes its table
    uniformly at random, so the order does not change the distribution). Any other length n
    is resampled: its values are sorted (which changes nothing for the same reason) and entry i
    is sorted value floor((i + 0.5) * n / TABLE_SIZE). Then the fraction of entries at or below
    any x is ceil(m * TABLE_SIZE / n - 1/2) / TABLE_SIZE where m / n is the given table's, within
    1 / (2 * TABLE_SIZE) of it: the given distribution up to the table's quantisation. (Taking
    those positions of an unsorted table would not keep it: of [-a, a, -a, a, ...] with
    n = 2 * TABLE_SIZE they are all the a's.)

    Raises DistributionError with one line naming ``source`` and, where it applies, the line
    (1-based) and the token."""
    if not isinstance(text, str):
        raise DistributionError(f"{source}: expected text, not {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise DistributionError(f"{source}: {len(text)} characters, more than the {MAX_TEXT} "
                                "a table may have")
    values: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        body = _SPACE.sub(" ", line).strip(" ")
        if not body or body.startswith("#"):
            continue
        for token in body.split(" "):
            if not _INTEGER.fullmatch(token):
                raise DistributionError(f"{source} line {number}: {_show(token)} is not an "
                                        "integer")
            value = int(token)
            if not TABLE_MIN <= value <= TABLE_MAX:
                raise DistributionError(f"{source} line {number}: {_show(token)} is outside "
                                        f"{TABLE_MIN}..{TABLE_MAX}")
            if len(values) == MAX_VALUES:
                raise DistributionError(f"{source} line {number}: more than {MAX_VALUES} "
                                        "values")
            values.append(value)
    if len(values) < 2:
        raise DistributionError(f"{source}: {len(values) or 'no'} value"
                                f"{'' if len(values) == 1 else 's'}, a table needs at least 2")
    n = len(values)
    if n == TABLE_SIZE:
        return tuple(values)
    ordered = sorted(values)
    return tuple(ordered[(2 * i + 1) * n // (2 * TABLE_SIZE)] for i in range(TABLE_SIZE))


# --- Kolmogorov-Smirnov -----------------------------------------------------------------------

def _as_cdf(name_or_cdf) -> Callable[[np.ndarray], np.ndarray]:
    if isinstance(name_or_cdf, str):
        name = _check_name(name_or_cdf)
        return lambda xs: cdf_array(name, xs)
    if not callable(name_or_cdf):
        raise DistributionError("ks statistic: expected a distribution name or a CDF, not "
                                f"{type(name_or_cdf).__name__}")
    f = name_or_cdf

    def vectorised(xs: np.ndarray) -> np.ndarray:
        try:
            out = np.asarray(f(xs), dtype=float)
            if out.shape == xs.shape:
                return out
        except (TypeError, ValueError):      # a CDF of one float (math.erf and the like)
            pass
        return np.array([float(f(float(v))) for v in xs])
    return vectorised


def ks_statistic(samples, name_or_cdf) -> float:
    """The one-sample Kolmogorov-Smirnov statistic D = sup |F_n(x) - F(x)| of ``samples``
    (sigma units) against a named distribution's CDF (as cdf_array) or a callable CDF (of an
    array, or of one float). Exact with ties and with a CDF that jumps (a clipped one, an
    empirical one): the left limit F(x-) is read just below each sample."""
    x = np.sort(np.asarray(samples, dtype=float).ravel())
    n = x.size
    if n == 0:
        raise DistributionError("ks statistic: no samples")
    if np.isnan(x).any():
        raise DistributionError("ks statistic: a sample is NaN")
    f = _as_cdf(name_or_cdf)
    at = f(x)
    before = f(np.nextafter(x, -np.inf))
    rank = np.arange(1, n + 1) / n
    return float(max(np.max(rank - at), np.max(before - (rank - 1.0 / n)), 0.0))


def ks_critical(n: int, alpha: float) -> float:
    """The asymptotic critical D of the one-sample KS test of n samples at level ``alpha``:
    c(alpha) / sqrt(n) with c(alpha) = sqrt(-ln(alpha / 2) / 2) (1.628 at alpha = 0.01)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DistributionError(f"ks critical: n = {n!r}, must be a positive integer")
    if not 0.0 < alpha < 1.0:
        raise DistributionError(f"ks critical: alpha = {alpha!r}, must be in (0, 1)")
    return math.sqrt(-math.log(alpha / 2.0) / 2.0) / math.sqrt(n)
