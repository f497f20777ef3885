# SPDX-License-Identifier: BSD-2-Clause
"""A Linux tc-netem option string ("delay 300ms 20ms loss 1%") read as a satemu channel table."""

# How tc reads each value, from iproute2's source (tc/q_netem.c, lib/utils.c get_time64,
# lib/utils_math.c get_rate64, tc/tc_util.c parse_percent), its man pages tc-netem(8) and tc(8),
# and the kernel's net/sched/sch_netem.c:
#
# * Times: a decimal number and a unit, case-insensitive: s/sec/secs, ms/msec/msecs,
#   us/usec/usecs, ns/nsec/nsecs. A bare number is nanoseconds to tc since iproute2 6.9 (netem
#   moved to get_time64), microseconds before it (get_time, and tc(8) still says so), and the
#   man page says "expressed in milliseconds": so only a bare 0 is taken; tc refuses negatives.
# * Rates: a number and a unit, case-insensitive: bit, kbit, mbit, gbit, tbit; kibit, mibit,
#   gibit, tibit (x 1024^n); bps, kbps, mbps, gbps, tbps and kibps ... tibps, which are BYTES
#   per second (tc's table spells them Bps, KBps, MiBps...); a bare number is bit/s. A rate in %
#   is a share of the device's speed. tc hands the kernel whole bytes per second (it truncates
#   1001bit to 125 B/s); the table here keeps the rate as written, exactly.
# * Percentages: a number, with or without "%", is a percentage (loss 1 = loss 1%), 0 .. 100;
#   never a fraction.
# * Optional values (JITTER, CORRELATION, gemodel's R, 1-H, 1-K, CELLSIZE) are read only when
#   the next word starts with a digit; PACKETOVERHEAD and CELLOVERHEAD also when it starts with
#   "-". Those integers are C's strtol base 0 (a leading 0 is octal, 0x hex).
# * Without a distribution the kernel's jitter is uniform over delay +- jitter (tabledist with
#   no table; older man pages wrongly said normal); tc refuses a distribution unless delay and
#   jitter are both above 0. iproute2 ships normal, pareto, paretonormal and experimental
#   tables; "uniform" is the man page's name for no table.
# * loss gemodel p [r [1-h [1-k]]]: p good -> bad, r bad -> good, 1-h the loss in Bad, 1-k the
#   loss in Good; defaults r = 1 - p (iproute2 5.2 on; 100% before), 1-h = 100%, 1-k = 0%.
#   The kernel draws the loss in the state a packet finds, the move independently: satemu's
#   model (docs/architecture.md) in distribution.
# * rate 0 is no shaping (the kernel shapes only "if (q->rate)"), and it ignores CELLOVERHEAD
#   without a CELLSIZE. netem's limit (1000 packets when not given) counts every packet netem
#   holds, those inside the delay too; satemu's queue counts those waiting for the shaper, and
#   its default is one bandwidth-delay product: a limit maps to queue, its absence to nothing.

from __future__ import annotations

import re
from fractions import Fraction

from satemu.base.units import (MAGNITUDE, MAX_DIGITS, UnitError, decimal_text,
    parse_probability, parse_queue, parse_rate, parse_size, parse_time, shown)

__all__ = ["NetemError", "NEW_KEYS", "REFUSED", "DISTRIBUTIONS", "MAX_CHARS", "MAX_WORDS",
           "netem_channel"]

# Channel keys this module emits beyond the original satemu.link.channel.CHANNEL_KEYS (the jitter
# keys; "order" is never emitted: netem keeps no order, satemu keeps it by default).
NEW_KEYS = {"jitter", "jitter_distribution", "jitter_correlation", "order", "corrupt",
            "corrupt_correlation", "duplicate", "duplicate_correlation"}

MAX_CHARS = 1000        # the longest text read
MAX_WORDS = 100         # the most words read

DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")

# What the box cannot do (yet), by netem word or form: the reason a refusal gives.
REFUSED = {
    "reorder": "reordering packets: not yet on this box (it keeps every frame in order)",
    "gap": "sending every Nth packet early (reorder gap): not yet on this box",
    "ecn": "netem's ecn (loss marks ECN-capable packets instead of dropping them): not on this "
           "box; its ECN marking is a step on the queue, the channel's ecn_step",
    "slot": "slotting: use a [return.bod] table for satemu's slotted return link",
    "loss state": "the 4-state Markov loss model: not on this box; use loss PERCENT, or loss "
                  "gemodel for bursts",
    "loss correlation": "satemu's Bernoulli loss has no correlation; use loss gemodel for bursts",
    "rate cellsize": "cells (CELLSIZE, CELLOVERHEAD) are not modelled on this box; give "
                     "PACKETOVERHEAD only",
    "rate overhead below 0": "a negative packet overhead: satemu's overhead is 0 bytes or more",
    "rate percent": "a rate as a share of the device's speed: the box has no device speed; give "
                    "bit/s, such as 10mbit",
    "distribution": "the box takes uniform, normal, pareto, paretonormal or a table file in the "
                    "profile's jitter_distribution",
}

# Option words in the order tc's matches() tries them: an abbreviation is read as the first one
# it begins ("d" is delay, "l" limit). latency and drop are tc's other names for delay and loss.
_TC_ORDER = ("limit", "latency", "delay", "loss", "drop", "seed", "ecn", "reorder", "corrupt",
             "gap", "duplicate", "distribution", "rate", "slot")
_ALIAS = {"latency": "delay", "drop": "loss"}

_NUMBER = re.compile(r"(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exp>[+-]?[0-9]+))?"
                     r"(?P<unit>.*)\Z", re.DOTALL)
_INT = re.compile(r"(?P<sign>-?)(?P<digits>0[xX][0-9a-fA-F]{1,16}|0[0-7]{0,22}|[1-9][0-9]{0,19})"
                  r"\Z")
_TAME = re.compile(r"[\x21-\x7e]{1,40}\Z")
_RANGE = f"is outside the magnitudes satemu takes (0, or 1e-{MAGNITUDE} .. 1e{MAGNITUDE})"

_NS = Fraction(1, 10**9)
_TIME_UNITS = {}
for _scale, _names in ((Fraction(1), ("s", "sec", "secs")),
                       (Fraction(1, 1000), ("ms", "msec", "msecs")),
                       (Fraction(1, 10**6), ("us", "usec", "usecs")),
                       (_NS, ("ns", "nsec", "nsecs"))):
    _TIME_UNITS.update(dict.fromkeys(_names, _scale))
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
               "kibit": 2**10, "mibit": 2**20, "gibit": 2**30, "tibit": 2**40}
_RATE_UNITS.update({"bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9,
                    "tbps": 8 * 10**12, "kibps": 8 * 2**10, "mibps": 8 * 2**20,
                    "gibps": 8 * 2**30, "tibps": 8 * 2**40})
# The units values are written in, largest first.
_TIME_OUT = [("s", Fraction(1)), ("ms", Fraction(1, 1000)), ("us", Fraction(1, 10**6)),
             ("ns", _NS)]
_RATE_OUT = [("Gbit/s", Fraction(10**9)), ("Mbit/s", Fraction(10**6)),
             ("kbit/s", Fraction(10**3)), ("bit/s", Fraction(1))]


class NetemError(ValueError):
    """A netem text that cannot be read, or that asks for what the box cannot do; the message is
    one line: the path, the netem words in question and why."""


class _Bad(Exception):
    """A value that could not be read; its message is the reason, said of the value."""


def _tok(word: str) -> str:
    """``word`` for a one-line message: as written if tame, else its repr, cut."""
    return word if _TAME.match(word) else shown(word)


def _number(text: str) -> tuple[Fraction, str]:
    """(the number ``text`` starts with, the rest of it: its unit); the number as satemu reads
    one: no sign, at most MAX_DIGITS characters, 0 or within 10^-MAGNITUDE .. 10^MAGNITUDE."""
    m = _NUMBER.match(text)
    if not m:
        raise _Bad("")
    num, exp = m["num"], m["exp"]
    if len(num) > MAX_DIGITS:
        raise _Bad(f"has more than {MAX_DIGITS} digits")
    whole, _, frac = num.partition(".")
    digits = int(whole + frac or "0")
    if not digits:
        return Fraction(0), m["unit"]
    e = 0
    if exp:
        magnitude = exp.lstrip("+-").lstrip("0")
        if len(magnitude) > 3:
            raise _Bad(_RANGE)
        e = int(magnitude or "0") * (-1 if exp[0] == "-" else 1)
    value = digits * Fraction(10) ** (e - len(frac))
    if not Fraction(1, 10**MAGNITUDE) <= value < 10**MAGNITUDE:
        raise _Bad(_RANGE)
    return value, m["unit"]


def _in_units(value: Fraction, units: list[tuple[str, Fraction]], zero: str) -> str:
    if value == 0:
        return f"0 {zero}"
    for unit, scale in units:
        if value >= scale:
            break
    return f"{decimal_text(value / scale)} {unit}"


class _Reader:
    """One netem text's words, read left to right into a channel table."""

    def __init__(self, path: str, words: list[str]):
        self.path, self.words, self.i = path, words, 0
        self.out: dict = {}
        self.given: dict[str, str] = {}         # option -> the word it was given as

    def fail(self, start: int, why: str, end: int | None = None):
        """NetemError about the words from ``start`` to ``end`` (the current one)."""
        end = self.i if end is None else end
        phrase = " ".join(_tok(w) for w in self.words[start:end + 1])
        raise NetemError(f"{self.path}: \"{phrase}\": {why}")

    # The words after an option's.
    def value(self, start: int, what: str) -> str:
        if self.i + 1 >= len(self.words):
            self.fail(start, f"missing its {what}")
        self.i += 1
        return self.words[self.i]

    def next_is(self, signed: bool = False) -> bool:
        """Whether tc would read the next word as an optional value of this option."""
        if self.i + 1 >= len(self.words):
            return False
        first = self.words[self.i + 1][0]
        return first in "0123456789" or (signed and first == "-")

    # Values.
    def time(self, start: int) -> Fraction:
        text = self.words[self.i]
        try:
            value, unit = _number(text)
        except _Bad as e:
            why = (f"{_tok(text)} is not a time, such as 300ms, 1.5s or 250us" if not str(e)
                   else f"{_tok(text)} {e}")
            if text.startswith("-"):
                why = f"{_tok(text)} is a negative time (tc refuses it too)"
            self.fail(start, why)
        if not unit:
            if value:
                self.fail(start, f"a bare {_tok(text)} is a time without a unit: tc reads it as "
                                 f"nanoseconds since iproute2 6.9, microseconds before, and the "
                                 f"man page says milliseconds; write {_tok(text)}ms, "
                                 f"{_tok(text)}us or {_tok(text)}ns")
            return Fraction(0)
        if unit.lower() not in _TIME_UNITS:
            self.fail(start, f"{_tok(text)} is not a time, such as 300ms, 1.5s or 250us (units: "
                             f"s, ms, us, ns)")
        return value * _TIME_UNITS[unit.lower()]

    def percent(self, start: int, what: str = "a percentage") -> Fraction:
        text = self.words[self.i]
        try:
            value, unit = _number(text)
        except _Bad as e:
            self.fail(start, f"{_tok(text)} {e}" if str(e) else
                      f"{_tok(text)} is not {what}, such as 1% or 0.5%")
        if unit not in ("", "%"):
            self.fail(start, f"{_tok(text)} is not {what}, such as 1% or 0.5%")
        if value > 100:
            self.fail(start, f"{_tok(text)} is more than 100% (tc refuses it too)")
        return value / 100

    def rate(self, start: int) -> Fraction:
        text = self.words[self.i]
        if "%" in text:
            self.fail(start, REFUSED["rate percent"])
        try:
            value, unit = _number(text)
        except _Bad as e:
            why = f"{_tok(text)} {e}" if str(e) else f"{_tok(text)} is not a rate, such as 10mbit"
            self.fail(start, why)
        if unit and unit.lower() not in _RATE_UNITS:
            self.fail(start, f"{_tok(text)} is not a rate, such as 10mbit (units: bit, kbit, "
                             f"mbit, gbit, tbit, kibit..tibit; bps, kbps..tbps are bytes/s)")
        return value * _RATE_UNITS.get(unit.lower(), 1)

    def integer(self, start: int, what: str, lo: int, hi: int) -> int:
        """A whole number as C's strtol base 0 reads it, within lo .. hi."""
        text = self.words[self.i]
        m = _INT.match(text)
        if not m:
            self.fail(start, f"{_tok(text)} is not {what}, a whole number (a leading 0 is octal "
                             f"to tc, 0x hex)")
        digits = m["digits"]
        base = 16 if digits[1:2] in ("x", "X") else 8 if len(digits) > 1 and digits[0] == "0" \
            else 10
        n = int(digits, base) * (-1 if m["sign"] else 1)
        if not lo <= n <= hi:
            self.fail(start, f"{_tok(text)} is outside {lo} .. {hi} for {what}")
        return n

    # Output, checked by reading it back as a profile would.
    def put(self, start: int, key: str, text: str, parse, expect, into: dict | None = None):
        try:
            got = parse(text)
        except UnitError as e:
            self.fail(start, f"satemu cannot take it: {e}")
        if got != expect:                                   # not expected: a bug here
            self.fail(start, f"{text!r} would read back as {got!r}, not {expect!r}")
        (self.out if into is None else into)[key] = text

    def put_time(self, start: int, key: str, value: Fraction):
        try:
            text = _in_units(value, _TIME_OUT, "ms")
        except _Bad as e:
            self.fail(start, f"{_tok(self.words[self.i])} {e}")
        self.put(start, key, text, parse_time, value)

    def put_percent(self, start: int, key: str, value: Fraction, into: dict | None = None):
        try:
            text = f"{decimal_text(value * 100)}%"
        except _Bad as e:
            self.fail(start, f"{_tok(self.words[self.i])} {e}")
        self.put(start, key, text, parse_probability, value, into)

    # Options.
    def once(self, start: int, option: str):
        word = self.words[start]
        if option in self.given:
            also = "" if word == option and self.given[option] == option else \
                f" (as {self.given[option]} and {word})"
            self.fail(start, f"{option} given twice{also}", start)
        self.given[option] = word

    def read(self) -> dict:
        dist_at = None
        while self.i < len(self.words):
            start, word = self.i, self.words[self.i]
            option = _ALIAS.get(word, word)
            if option in REFUSED and option != "distribution":
                self.fail(start, REFUSED[option])
            if option not in ("limit", "delay", "loss", "rate", "seed", "distribution",
                              "corrupt", "duplicate"):
                self.unknown(start, word)
            self.once(start, option)
            if option == "distribution":
                name = self.value(start, "name, such as distribution normal")
                if name not in DISTRIBUTIONS:
                    self.fail(start, REFUSED["distribution"])
                dist_at = start
            else:
                getattr(self, "opt_" + option)(start)
            self.i += 1
        self.finish(dist_at)
        return self.out

    def unknown(self, start: int, word: str):
        full = next((w for w in _TC_ORDER if w.startswith(word)), None)
        if full is not None:
            self.fail(start, f"tc reads this as {full}; write the word in full")
        if word[0] in "0123456789.-+":
            self.fail(start, "a value where a netem word belongs: tc reads an option's optional "
                             "values only right after it, and only those starting with a digit")
        self.fail(start, "not a netem option; the box reads limit, delay (latency), "
                         "distribution, loss (drop), corrupt, duplicate, rate and seed")

    def opt_delay(self, start: int):
        self.value(start, "TIME, such as delay 300ms")
        self.put_time(start, "delay", self.time(start))
        if self.next_is():
            self.i += 1
            self.put_time(start, "jitter", self.time(start))
            if self.next_is():
                self.i += 1
                self.put_percent(start, "jitter_correlation", self.percent(start))

    def opt_loss(self, start: int):
        model = self.value(start, "model, such as loss 1%")
        if model[0] in "0123456789":
            self.i -= 1                                 # tc's older form: loss PERCENT
        elif model == "state":
            self.fail(start, REFUSED["loss state"])
        elif model == "gemodel":
            return self.gemodel(start)
        elif model != "random":
            why = ("not a loss model; tc takes loss PERCENT, loss random PERCENT, loss state "
                   "P13 ... or loss gemodel P ...")
            if model[0] == ".":
                why = f"tc reads a loss only if it starts with a digit; write 0{_tok(model)}"
            elif model[0] in "-+":
                why = f"{_tok(model)} is not a percentage from 0% to 100% (tc refuses it too)"
            self.fail(start, why)
        self.value(start, "PERCENT, such as loss random 1%")
        self.put_percent(start, "loss", self.percent(start))
        if self.next_is():
            self.i += 1
            if self.percent(start, "a correlation"):
                self.fail(start, REFUSED["loss correlation"])

    def opt_corrupt(self, start: int):
        """corrupt PERCENT [CORRELATION]: one bit of a share of the packets flipped (satemu's
        corruption flips one bit of a frame, as netem's does; its FCS is computed again)."""
        self.value(start, "PERCENT, such as corrupt 0.1%")
        self.put_percent(start, "corrupt", self.percent(start))
        if self.next_is():
            self.i += 1
            self.put_percent(start, "corrupt_correlation", self.percent(start))

    def opt_duplicate(self, start: int):
        """duplicate PERCENT [CORRELATION]: a share of the packets sent twice (satemu's copy is a
        frame of its own right behind the original, as netem's enters its qdisc again)."""
        self.value(start, "PERCENT, such as duplicate 1%")
        self.put_percent(start, "duplicate", self.percent(start))
        if self.next_is():
            self.i += 1
            self.put_percent(start, "duplicate_correlation", self.percent(start))

    def gemodel(self, start: int):
        self.value(start, "P, such as loss gemodel 1% 10%")
        p = self.percent(start)
        ge = {"p": p, "r": 1 - p, "loss_bad": Fraction(1), "loss_good": Fraction(0)}
        for key in ("r", "loss_bad", "loss_good"):      # r, 1-h, 1-k as netem orders them
            if not self.next_is():
                break
            self.i += 1
            ge[key] = self.percent(start)
        table: dict = {}
        for key in ("p", "r", "loss_good", "loss_bad"):
            self.put_percent(start, key, ge[key], into=table)
        self.out["gilbert_elliott"] = table

    def opt_rate(self, start: int):
        self.value(start, "RATE, such as rate 10mbit")
        rate = self.rate(start)
        overhead = None
        if self.next_is(signed=True):
            self.i += 1
            overhead = self.integer(start, "a packet overhead", -2**31, 2**31 - 1)
            if overhead < 0:
                self.fail(start, REFUSED["rate overhead below 0"])
        if self.next_is():
            self.i += 1
            if self.integer(start, "a cell size", 0, 2**32 - 1):
                self.fail(start, REFUSED["rate cellsize"])
        if self.next_is(signed=True):                   # ignored without a cell size, as netem
            self.i += 1
            self.integer(start, "a cell overhead", -2**31, 2**31 - 1)
        if not rate:                                    # netem's rate 0: not shaped
            return
        try:
            text = _in_units(rate, _RATE_OUT, "bit/s")
        except _Bad as e:
            self.fail(start, f"{_tok(self.words[self.i])} {e}")
        self.put(start, "rate", text, parse_rate, rate)
        if overhead is not None:
            self.put(start, "overhead", f"{overhead} B", parse_size, overhead)

    def opt_limit(self, start: int):
        text = self.value(start, "PACKETS, such as limit 1000")
        if not re.fullmatch(r"[0-9]{1,10}", text) or int(text) > 2**32 - 1:
            self.fail(start, f"{_tok(text)} is not a number of packets, a whole number such "
                             f"as 1000")
        n = int(text)
        if n == 0:
            self.fail(start, "netem holds no packet at all with limit 0 (it drops them all); "
                             "satemu reads a queue of 0 packets as the hardware's depth")
        self.put(start, "queue", f"{n} packet" + ("" if n == 1 else "s"), parse_queue,
                 ("frames", n))

    def opt_seed(self, start: int):
        text = self.value(start, "VALUE, such as seed 42")
        if not re.fullmatch(r"[0-9]{1,20}", text) or int(text) > 2**64 - 1:
            self.fail(start, f"{_tok(text)} is not a seed, a whole number 0 .. 2^64 - 1")
        self.out["seed"] = int(text)

    def finish(self, dist_at: int | None):
        """What tc checks once every word is read: a distribution needs a delay and a jitter
        above 0; a jitter without one is uniform."""
        if dist_at is not None:
            delay = parse_time(self.out.get("delay", "0 s"))
            jitter = parse_time(self.out.get("jitter", "0 s"))
            if not (delay and jitter):
                self.fail(dist_at, "a distribution shapes the jitter: give delay TIME JITTER, "
                                   "both above 0 (tc refuses it too)", dist_at + 1)
            self.out["jitter_distribution"] = self.words[dist_at + 1]
        elif "jitter" in self.out:
            self.out["jitter_distribution"] = "uniform"


def netem_channel(text: str, path: str = "netem") -> dict:
    """The satemu channel table (a ``[forward]`` or ``[return]``) a tc-netem option string says:
    the words after ``tc qdisc add dev X root netem``, such as
    ``"delay 300ms 20ms 25% distribution normal loss 1% rate 8.5mbit limit 1000"``.

    The table holds the keys a profile would, with values in satemu's units exactly as written
    in TOML ("300 ms", "1%", "8.5 Mbit/s", "1000 packets", "20 B"; ``gilbert_elliott`` a table
    of four percentages, ``seed`` an int), each read back by ``satemu.base.units`` to the exact
    value netem's text says (no float enters: "0.1%" is 1/1000). An empty text is a netem
    without options, which changes nothing: ``{}``.

    delay TIME [JITTER [CORRELATION]] gives delay, jitter and jitter_correlation; distribution
    NAME gives jitter_distribution (uniform when a jitter has none, as netem's). loss [random]
    PERCENT gives loss; loss gemodel P [R [1-H [1-K]]] gives gilbert_elliott {p, r, loss_bad =
    1-H, loss_good = 1-K}, with netem's defaults R = 1 - P, 1-H = 100%, 1-K = 0%. rate RATE
    [PACKETOVERHEAD] gives rate (tc's bps is bytes/s) and overhead; rate 0 is not shaped. limit
    PACKETS gives queue; seed VALUE gives seed; corrupt PERCENT [CORRELATION] gives corrupt and
    corrupt_correlation; duplicate PERCENT [CORRELATION] gives duplicate and
    duplicate_correlation. A correlation of 0 on loss (none) is taken.
    Everything else the box cannot do is refused (REFUSED says why), as are repeated options,
    abbreviations, and values tc refuses or reads differently from version to version (a time
    without a unit, but 0).

    NetemError (one line: ``path``, the netem words and why) for anything not read. At most
    MAX_CHARS characters and MAX_WORDS words are read."""
    where = path if isinstance(path, str) and _TAME.match(path) else shown(path)
    if not isinstance(text, str):
        raise NetemError(f"{where}: expected a netem option string such as \"delay 300ms loss "
                         f"1%\", got {shown(text)}")
    if len(text) > MAX_CHARS:
        raise NetemError(f"{where}: a netem text of {len(text)} characters; at most "
                         f"{MAX_CHARS} are read")
    words = text.split()
    if len(words) > MAX_WORDS:
        raise NetemError(f"{where}: a netem text of {len(words)} words; at most {MAX_WORDS} "
                         f"are read")
    return _Reader(where, words).read()
