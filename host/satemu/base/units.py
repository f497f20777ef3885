# SPDX-License-Identifier: BSD-2-Clause
"""Exact parsing of quantities with units, as written in link profiles ("8.5 Mbit/s", "300 ms").

Values come back as ``fractions.Fraction`` in base units (bit/s, seconds, bytes), so no float
rounding enters a profile. Prefixes are decimal (k = 1000, as in networking); KiB and MiB are
binary.

Every number must be finite and, as written before its unit, 0 or within ``1e-30 .. 1e30`` in
magnitude (``MAGNITUDE``), in at most ``MAX_DIGITS`` digits and a text of at most ``MAX_TEXT``
characters; anything else raises UnitError, in time bounded by those limits, before a Fraction
is built (``"1e9999999 s"`` is refused by its exponent's length, not computed).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["UnitError", "MAGNITUDE", "MAX_DIGITS", "MAX_TEXT", "check_magnitude", "shown",
           "parse_rate", "parse_time", "parse_size", "parse_queue", "parse_probability",
           "format_rate", "format_time", "format_size", "decimal_text"]


class UnitError(ValueError):
    """A quantity that could not be read; the message says what was expected."""


_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exp>[+-]?[0-9]+))?"
_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[^\s0-9].*?)?\s*$")

_RATE = {"bit/s": 1, "bps": 1, "kbit/s": 10**3, "kbps": 10**3, "Mbit/s": 10**6, "Mbps": 10**6,
         "Gbit/s": 10**9, "Gbps": 10**9}
_TIME = {"s": 1, "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6),
         "ns": Fraction(1, 10**9)}
_SIZE = {"B": 1, "bytes": 1, "KB": 10**3, "kB": 10**3, "MB": 10**6, "GB": 10**9,
         "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_PACKETS = {"packets", "packet", "frames", "frame", "pkts"}

MAGNITUDE = 30      # a number is 0 or 10^-MAGNITUDE <= |x| < 10^MAGNITUDE
MAX_DIGITS = 40     # characters of a number's mantissa as written ("0.25": 4)
MAX_TEXT = 100      # characters of a quantity's text
_RANGE = f"numbers are finite, and 0 or 1e-{MAGNITUDE} .. 1e{MAGNITUDE} in magnitude"


def shown(value) -> str:
    """``value`` for a message: its repr (one line), cut to at most about 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} characters)"


def check_magnitude(value: int | float) -> int | float:
    """``value``, an int or a float as TOML gives them, if it is finite and 0 or within
    ``10^-MAGNITUDE .. 10^MAGNITUDE`` in magnitude; UnitError otherwise. Constant time: an
    int's bit length is looked at before anything of its size is computed."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnitError(f"{value!r} is not a finite number; {_RANGE}")
        if abs(value) >= 10.0 ** MAGNITUDE or 0 < abs(value) < 10.0 ** -MAGNITUDE:
            raise UnitError(f"{value:g} is outside the allowed magnitudes; {_RANGE}")
        return value
    if value.bit_length() > 100:             # 2^100 > 10^30: too large, whatever its digits
        raise UnitError(f"an integer of about {value.bit_length() * 3 // 10} digits is too "
                        f"large; {_RANGE}")
    if abs(value) >= 10 ** MAGNITUDE:
        raise UnitError(f"{value} is too large; {_RANGE}")
    return value


def _number(num: str, exp: str | None, text: str) -> Fraction:
    """The Fraction of a mantissa ``num`` and a decimal exponent ``exp`` as written, once their
    lengths and the value's order of magnitude are known to be within range (so that no huge
    power of ten is ever computed)."""
    if len(num) > MAX_DIGITS:
        raise UnitError(f"{text!r}: more than {MAX_DIGITS} digits in a number")
    digits = num.replace(".", "")
    first = len(digits) - len(digits.lstrip("0"))          # index of the first digit not 0
    if first == len(digits):
        return Fraction(0)                                  # 0, whatever its exponent
    sign, magnitude = ("-", exp[1:]) if exp and exp[0] == "-" else ("", (exp or "0").lstrip("+"))
    if len(magnitude.lstrip("0")) > 3:                     # |exponent| >= 1000
        raise UnitError(f"{text!r}: its exponent is outside the allowed magnitudes; {_RANGE}")
    e = int(sign + magnitude)
    order = len(num.split(".")[0]) - 1 - first + e         # 10^order <= value < 10^(order + 1)
    if not -MAGNITUDE <= order < MAGNITUDE:
        raise UnitError(f"{text!r} is outside the allowed magnitudes; {_RANGE}")
    # One Fraction of integers: a trace's rows are parsed by the hundred thousand.
    whole, _, frac = num.partition(".")
    scale = e - len(frac)                                   # |scale| < MAGNITUDE + MAX_DIGITS
    digits = int(whole + frac)
    return Fraction(digits * 10 ** scale) if scale >= 0 else Fraction(digits, 10 ** -scale)


def _split(text, what: str, example: str) -> tuple[Fraction, str | None]:
    if isinstance(text, bool):
        raise UnitError(f"expected {what}, such as {example!r}, got {shown(text)}")
    if isinstance(text, Fraction):
        return text, None
    if isinstance(text, (int, float)):
        value = check_magnitude(text)
        return Fraction(value if isinstance(value, int) else str(value)), None
    if not isinstance(text, str):
        raise UnitError(f"expected {what}, such as {example!r}, got {shown(text)}")
    if len(text) > MAX_TEXT:
        raise UnitError(f"expected {what}, such as {example!r}, got a text of {len(text)} "
                        f"characters (at most {MAX_TEXT})")
    m = _RE.match(text)
    if not m:
        raise UnitError(f"expected {what}, such as {example!r}, got {shown(text)}")
    return _number(m["num"], m["exp"], text), m["unit"]


def _scaled(text, table: dict, what: str, example: str, bare_ok: bool = False) -> Fraction:
    value, unit = _split(text, what, example)
    if unit is None:
        if bare_ok:
            return value
        raise UnitError(f"{text!r} needs a unit ({', '.join(table)}), such as {example!r}")
    if unit not in table:
        raise UnitError(f"unknown unit {unit!r} in {text!r}; expected one of {', '.join(table)}")
    return value * table[unit]


def parse_rate(text) -> Fraction:
    """bit/s, from "10 Mbit/s", "100 kbit/s", "1.5Mbps"."""
    return _scaled(text, _RATE, "a rate", "10 Mbit/s")


def parse_time(text) -> Fraction:
    """Seconds, from "300 ms", "0.6 s", "250 us"."""
    return _scaled(text, _TIME, "a time", "300 ms")


def parse_size(text) -> Fraction:
    """Bytes, from "640 KB", "1500 B", "2 MiB"."""
    return _scaled(text, _SIZE, "a size", "640 KB")


def parse_queue(text) -> tuple[str, int]:
    """("frames", N) from "50 packets", or ("bytes", N) from "640 KB"."""
    value, unit = _split(text, "a queue size", "50 packets")
    if unit in _PACKETS:
        if value.denominator != 1:
            raise UnitError(f"{text!r}: a number of packets must be whole")
        return "frames", int(value)
    size = parse_size(text)
    if size.denominator != 1:
        raise UnitError(f"{text!r} is not a whole number of bytes")
    return "bytes", int(size)


def parse_probability(text) -> Fraction:
    """A probability from "1%", "0.01" or 0.01."""
    if isinstance(text, str) and text.strip().endswith("%"):
        value, unit = _split(text.strip()[:-1], "a percentage", "1%")
        if unit is not None:
            raise UnitError(f"expected a percentage such as '1%', got {shown(text)}")
        return value / 100
    value, unit = _split(text, "a probability", "1%")
    if unit is not None:
        raise UnitError(f"expected a probability such as '1%' or 0.01, got {shown(text)}")
    return value


def _fmt(value: Fraction, table: list[tuple[str, Fraction]]) -> str:
    for unit, scale in table:
        if abs(value) >= scale:
            v = value / scale
            return f"{float(v):g} {unit}"
    return f"{float(value):g} {table[-1][0]}"


def format_rate(bps: Fraction) -> str:
    return _fmt(Fraction(bps), [("Gbit/s", Fraction(10**9)), ("Mbit/s", Fraction(10**6)),
                                ("kbit/s", Fraction(10**3)), ("bit/s", Fraction(1))])


def format_time(s: Fraction) -> str:
    return _fmt(Fraction(s), [("s", Fraction(1)), ("ms", Fraction(1, 10**3)),
                              ("us", Fraction(1, 10**6)), ("ns", Fraction(1, 10**9))])


def format_size(b: Fraction) -> str:
    return _fmt(Fraction(b), [("GB", Fraction(10**9)), ("MB", Fraction(10**6)),
                              ("KB", Fraction(10**3)), ("B", Fraction(1))])


def decimal_text(value) -> str:
    """``value`` written exactly: as a decimal when it has one ("1.5", "60"), else "p/q"."""
    value = Fraction(value)
    d, twos, fives = value.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return str(value)
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10**places // value.denominator
    sign = "-" if value < 0 else ""
    if places == 0:
        return f"{sign}{scaled}"
    whole, frac = divmod(scaled, 10**places)
    return f"{sign}{whole}.{str(frac).rjust(places, '0').rstrip('0')}"
