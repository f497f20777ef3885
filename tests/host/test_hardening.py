# SPDX-License-Identifier: BSD-2-Clause
"""Hostile input never escapes as a traceback (issue 21, point 3).

Property tests (hypothesis, derandomized: every run tries the same cases) feed the profile
loader files that mix valid and hostile values for every field of the format (nan, inf, 1e400,
huge exponents and integers, negative values, wrong types, unknown keys, bad units, nesting,
bytes that are not UTF-8), the unit parsers hostile quantities, and the command line's numeric
options hostile text. Each case must give what it asks (a Profile that passes ``check`` on the
simulated board's hardware, a quantity, an option within its range) or the project's own
one-line error naming the field or option; any other exception is an escape, and no case may
take long. The cases add up to more than 10^5 (``CASES``).

A hypothesis example costs about 0.3 ms of its own, so each draws one byte string that
``Choices`` reads as the case (hypothesis shrinks a failing one towards fewer, lower bytes: the
plainest profile), and the quantity and option tests try each drawn value on every parser and
every option.
"""

import argparse
import os
import re
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from satemu import cli
from satemu.base.boards import BOARDS
from satemu.link.profile import Profile, ProfileError, load_profile, parse_profile
from satemu.base.units import (UnitError, parse_probability, parse_queue, parse_rate, parse_size,
    parse_time)

HW = BOARDS["sim"].hardware
SLOW = 1.0           # CPU seconds of the test's own thread: no case may take longer (a
                     # Fraction of 10^9999999 took 27 s); other threads' time is not the case's
PROFILES, QUANTITIES, OPTION_TEXTS, SHOWS = 12_000, 2_600, 1_500, 150     # hypothesis examples


def cases(n: int):
    """Hypothesis settings for ``n`` repeatable examples (no deadline: SLOW bounds each case)."""
    return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


class Choices:
    """Choices read off hypothesis's bytes, a byte or two each, 0 once the bytes run out."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1] if self.at <= len(self.data) else 0

    def below(self, n: int) -> int:
        """0 .. n - 1, for n up to 2^16."""
        return (self.byte() << 8 | self.byte()) % n

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def raw(self, n: int) -> bytes:
        return bytes(self.byte() for _ in range(n))


BYTES = st.binary(min_size=320, max_size=320)     # of one size: drawn at once, not byte by byte

# -- values, as TOML literal text ------------------------------------------------------------

RATE_UNITS = ["bit/s", "bps", "kbit/s", "kbps", "Mbit/s", "Mbps", "Gbit/s", "Gbps"]
TIME_UNITS = ["s", "ms", "us", "µs", "ns"]
SIZE_UNITS = ["B", "bytes", "KB", "kB", "MB", "GB", "KiB", "MiB", "GiB"]
PACKET_UNITS = ["packets", "packet", "frames", "frame", "pkts"]
BAD_UNITS = ["", "h", "min", "Mbit", "kb/s", "%", "%%", "bits", "M bit/s", "s s", "°", "ms\u200b",
             "ｍｓ", "packet s", "B/s", "1", "e", "\t"]
UNITS = RATE_UNITS + TIME_UNITS + SIZE_UNITS + PACKET_UNITS + BAD_UNITS

# Literals that broke the loader or the CLI before, and their relatives.
HOSTILE = [
    "nan", "+nan", "-nan", "inf", "+inf", "-inf", "1e400", "-1e400", "1e-400", "1e308",
    "1.7976931348623157e308", "5e-324", "-0.0", "0.0", "-1", "0", "1", "-9223372036854775808",
    "9223372036854775807", "18446744073709551616", "1" + "0" * 30, "-" + "9" * 40, "9" * 400,
    "9" * 4301, "0x7fffffffffffffff", "0o777", "0b101", "1_000_000", "true", "false",
    "1979-05-27", "1979-05-27T07:32:00Z", "07:32:00", "[]", "[1, 2, 3]", '["1 s", nan]', "{}",
    "{a = 1}", "[[[[[[[[[[1]]]]]]]]]]", "[" * 1200 + "]" * 1200, '""', '"   "', "''",
    '"nan ms"', '"inf bit/s"', '"-inf s"', '"NaN %"', '"1e400 bit/s"', '"1e-400 s"',
    '"1e9999999 s"', '"1e-9999999 s"', '"1e+9999999 ms"', '"1e99999999999999999999 B"',
    '"0e9999999 s"', '"' + "9" * 60 + ' ms"', '"0.' + "0" * 35 + '1 s"', '"1e29 Gbit/s"',
    '"1e30 bit/s"', '"1e-30 ns"', '"1e-31 s"', '"-5 ms"', '"+5 ms"', '"5 h"', '"10"',
    '"10 Mbit"', '"1%%"', '"150%"', '"-1%"', '"1e2%"', '"0x10 B"', '"1_000 B"', '"１０ ms"',
    '"10 µs"', '"1.5.5 s"', '"..5 s"', '"5. s"', '".5 s"', '"e5 s"', '"1e s"', '"1e+ s"',
    '"\\u0000 s"', '"5\\ns"', '"' + "a" * 200 + '"', '"1 ' + " " * 500 + 'x"',
    '"""multi\nline"""', "'literal 5 ms'", '"2.5 packets"', '"0 packets"', '"-3 packets"',
    '"1e3 packets"', '"1.5 B"', '"0.5 KB"',
]
# The edges of fields' ranges and of the numbers a profile takes.
BOUNDARY = [
    "0", "-1", "1", "2", "-0.0", "0.5", "1e29", "1e-29", "65535", "65536", "4294967295",
    "4294967296", "18446744073709551615", "18446744073709551616", "9" * 29, "-" + "9" * 29,
    '"0 s"', '"0 B"', '"0 bit/s"', '"0 packets"', '"1e29 s"', '"1e-29 s"', '"1e29 Gbit/s"',
    '"1e-29 bit/s"', '"1e29 GiB"', '"1e-29 B"', '"1e29 packets"', '"-1 s"', '"0%"', '"100%"',
    '"1e29%"', '"1e-29%"', '[{level = 0.5, duration = "0 s"}]', '[{level = -1, duration = "-1 s"}]',
    '[{level = 1e29, duration = "1e29 s"}]', '[{level = 0.5, duration = "1e-29 s"}]',
    '["1 packets", "1 B"]', '["1e29 packets", "1e29 B"]', '["0 packets", "0 B"]',
]


def mantissa(c: Choices) -> str:
    digits = "".join(str(c.byte() % 10) for _ in range(c.pick([1, 1, 2, 3, 6, 12, 45])))
    return c.pick([digits, digits, f"{digits}.{c.byte() % 100}", f".{digits}", f"{digits}.",
                   f"0.{'0' * c.byte()}{digits}"])


def exponent(c: Choices) -> str:
    return c.pick(["", "", "", f"e{c.below(81) - 40}", f"E+{c.byte()}",
                   f"e-{c.below(10 ** 4)}{c.below(10 ** 4)}", f"e{'9' * c.byte()}"])


def quantity(c: Choices, units=UNITS) -> str:
    """A quantity's text: some mantissa and exponent, a unit (of any kind, or a bad one)."""
    return f"{mantissa(c)}{exponent(c)}{c.pick(['', ' ', ' ', '  '])}{c.pick(units)}"


def hostile(c: Choices) -> str:
    """Any value at all, as TOML: a known hostile literal, any float, any integer, any
    quantity, a valid value of another kind, or a structure."""
    kind = c.below(9)
    if kind == 0:
        return c.pick(HOSTILE)
    if kind >= 7:
        return c.pick(BOUNDARY)
    if kind == 1:
        return repr(struct.unpack("<d", c.raw(8))[0])
    if kind == 2:
        return ("-" if c.byte() & 1 else "") + str(int.from_bytes(c.raw(c.below(24)), "big"))
    if kind == 3:
        return f'"{quantity(c)}"'
    if kind == 4:
        return c.pick(list(VALID.values()))(c)
    if kind == 5:
        return f"[{hostile(c)}, {hostile(c)}]" if c.byte() & 1 else f"{{x = {hostile(c)}}}"
    return f'"{c.pick(["-", "+", ""])}{quantity(c, RATE_UNITS + TIME_UNITS)}"'


def probability(c: Choices) -> str:
    return c.pick([f'"{c.below(101)}%"', repr(c.below(1001) / 1000), "0", '"0.5%"'])


def background(c: Choices) -> str:
    if c.byte() & 1:
        return probability(c)
    levels = [f'{{level = {probability(c)}, duration = "{1 + c.below(60)} s"}}'
              for _ in range(1 + c.below(8))]
    return f"[{', '.join(levels)}]"


VALID = {   # a value of each kind that is fine on its own (a profile may still not fit)
    "rate": lambda c: c.pick([f'"{1 + c.below(100)} Mbit/s"', f'"{10 + c.below(5000)} kbit/s"']),
    "bod_rate": lambda c: f'"{c.below(400)} kbit/s"',
    "delay": lambda c: c.pick([f'"{c.below(700)} ms"', f'"{c.below(1000)} us"', '"0.3 s"']),
    "queue": lambda c: c.pick([f'"{1 + c.below(1024)} packets"', f'"{2 + c.below(2000)} KB"',
                               f'["{1 + c.below(1024)} packets", "{2 + c.below(2000)} KB"]']),
    "probability": probability,
    "seed": lambda c: str(c.below(1 << 16)),
    "min_len": lambda c: str(60 + c.below(64)),
    "max_len": lambda c: str(1000 + c.below(519)),
    "overhead": lambda c: f'"{c.below(65)} B"',
    "flag": lambda c: c.pick(["false", "true"]),
    "superframe": lambda c: f'"{5 + c.below(96)} ms"',
    "slots": lambda c: str(50 + c.below(450)),
    "slot_bytes": lambda c: c.pick([str(100 + c.below(1400)), f'"{100 + c.below(1400)} B"']),
    "superframes": lambda c: str(1 + c.below(64)),
    "period": lambda c: str(1 + c.below(8)),
    "background": background,
}
CHANNEL = {"rate": "rate", "delay": "delay", "queue": "queue", "loss": "probability",
           "overhead": "overhead", "seed": "seed", "min_len": "min_len", "max_len": "max_len"}
BOD = {"superframe": "superframe", "slots": "slots", "slot_bytes": "slot_bytes",
       "latency": "superframes", "cra": "bod_rate", "rbdc_max": "bod_rate",
       "rbdc_timeout": "superframes",
       "vbdc_max": "overhead", "fca": "flag", "request_period": "period",
       "background": "background", "background_repeat": "flag"}
BOD_REQUIRED = ("superframe", "slots", "slot_bytes", "latency")
UNKNOWN = ["speed", "Rate", "ratee", "bod_", "x-y", '"a.b"', '"a\\nb"', '"' + "k" * 80 + '"',
           "rate", "delay"]     # the last two: a known key given twice, or given at the top
GE_KEYS = ["p", "r", "loss_good", "loss_bad"]
NAMES = ['"fuzz"', '"µ ünïcode"', "'literal'"]
# Bytes that are not UTF-8: a stray continuation, a Latin-1 µ, a surrogate, an overlong form.
BAD_BYTES = [b"\xff", b"\x80", b"\xb5", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xfe\xff"]


def profile_bytes(c: Choices) -> bytes:
    """A profile file: each field present or not, valid or (at a rate the first choice sets)
    hostile; BoD on a channel or not; now and then a top-level surprise or bytes that are not
    UTF-8. All-zero choices give the plainest profile, ``[forward]`` and ``[return]``."""
    hostility = c.pick([0, 0, 8, 32, 96, 192])       # of 256: how often a choice is hostile

    def surprise(share: int = 4) -> bool:
        return 255 - c.byte() < hostility // share     # never once the bytes run out

    def value(kind: str) -> str:
        return hostile(c) if surprise(1) else VALID[kind](c)

    lines = [f"{key} = {c.pick(NAMES) if not surprise() else hostile(c)}"
             for key in ("name", "description", "source") if c.byte() & 1]
    if surprise():
        lines.append(f"{c.pick(UNKNOWN)} = {value('rate')}")
    bod_side = c.pick(["forward", "return", None] if surprise() else [None, "return"])
    for side in (("return", "forward") if surprise(8) else ("forward", "return")):
        if surprise(16):
            lines.append(f"{side} = {hostile(c)}" if c.byte() & 1 else "")   # not a table; none
            continue
        bod, ge = side == bod_side, c.byte() % 4 == 1
        keys = [key for key in CHANNEL if c.byte() & 1]
        if not surprise():          # what the format allows: no rate with BoD, loss or GE
            keys = [key for key in keys if not (key == "rate" and bod or key == "loss" and ge)]
        lines.append(f"[{side}]")
        lines += [f"{key} = {value(CHANNEL[key])}" for key in keys]
        if ge:
            ge_keys = GE_KEYS if not surprise() else c.pick([GE_KEYS[:3], GE_KEYS + ["q"]])
            lines.append("gilbert_elliott = {" + ", ".join(
                f"{k} = {value('probability')}" for k in ge_keys) + "}")
        if surprise():
            lines.append(f"{c.pick(UNKNOWN)} = {value('delay')}")
        if bod:                     # the required keys and some capacity, unless a surprise
            lines.append(f"[{side}.bod]")
            lines += [f"{key} = {value(kind)}" for key, kind in BOD.items()
                      if (key in BOD_REQUIRED + ("cra",) and not surprise()) or c.byte() & 1]
    data = "\n".join(lines).encode() + b"\n"
    if surprise():
        at = c.below(len(data) + 1)
        data = data[:at] + c.pick(BAD_BYTES) + data[at:]
    return data


# A field's path: a channel's key (forward.rate, return.bod.background[0].level, forward: for
# the channel as a whole), a top-level key, or an unknown key as the profile spelled it.
ONE_LINE_FIELD = re.compile(r"(?:(?:forward|return)\b[^:]*|name|description|source|speed|Rate"
                            r"|ratee|bod_|x-y|rate|delay|['\"].*?): ")


def assert_one_line(message: str, where: str) -> None:
    """The project's error: one line of reasonable length, naming a field or the file."""
    assert "\n" not in message and 0 < len(message) <= 400, message
    assert ONE_LINE_FIELD.match(message) or message.startswith(where + ": "), message


def check_profile(profile: Profile) -> None:
    """A profile the loader accepted is one the simulated board can run, all of it."""
    regs = profile.check(HW)
    assert set(regs) == {"forward", "return"}
    for name, ch in profile.channels():
        assert ch.budget_words(HW, name) <= HW.mem_words
        assert 0 <= ch.loss <= 1 and (ch.rate is None or ch.rate > 0)
        assert ch.describe(HW, name)
        ch.traffic_wpc(HW, name)


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("hardening") / "fuzz.toml"
    path.write_bytes(b"")
    return path


def rewrite(path, data: bytes) -> None:
    """``path`` made to hold ``data``: written over in place, then cut to its length (truncating
    a file to nothing first makes ext4 flush it, a few ms each time)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


# geo-testbed-bod with every optional field given (and a background schedule): the base of
# the field-by-field sweep.
BASE = {"forward": {"rate": '"8.5 Mbit/s"', "delay": '"300 ms"', "queue": '"637.5 KB"',
                    "loss": '"1%"', "overhead": '"4 B"', "seed": "7", "min_len": "60",
                    "max_len": "1518"},
        "return": {"delay": '"300 ms"', "queue": '"50 packets"', "overhead": '"0 B"',
                   "seed": "2", "min_len": "64", "max_len": "1500",
                   "gilbert_elliott": "{p = 0.01, r = 0.5, loss_good = 0, loss_bad = 0.5}"},
        "return.bod": {"superframe": '"26.5 ms"', "slots": "140", "slot_bytes": "188",
                       "cra": '"100 kbit/s"', "rbdc_max": '"1.5 Mbit/s"', "rbdc_timeout": "8",
                       "vbdc_max": '"64 KB"', "fca": "false", "request_period": "1",
                       "latency": "26", "background_repeat": "true", "background":
                       '[{level = 0.5, duration = "10 s"}, {level = 0.2, duration = "5 s"}]'}}
SWEEP = [(table, key, value) for table in BASE for key in BASE[table]
         for value in HOSTILE + BOUNDARY]


def test_every_field_takes_every_hostile_value():
    """Each field of a full, valid BoD profile set to each hostile and boundary literal, one at
    a time: a profile that fits, or an error that names a field of that channel (min_len's
    range depends on max_len) or the file's TOML."""
    check_profile(parse_profile("".join(f"[{t}]\n" + "".join(f"{k} = {v}\n" for k, v in
                                                              BASE[t].items()) for t in BASE)))
    for table, key, value in SWEEP:
        text = "".join(f"[{t}]\n" + "".join(f"{k} = {value if (t, k) == (table, key) else v}\n"
                                            for k, v in BASE[t].items()) for t in BASE)
        start = time.thread_time()
        try:
            check_profile(parse_profile(text, "fuzz"))
        except ProfileError as e:
            assert_one_line(str(e), "fuzz")
            # That field, or (a range that depends on it) another of its channel's.
            assert str(e).startswith(("fuzz: not valid TOML", table.split(".")[0])), \
                (table, key, value, str(e))
        assert time.thread_time() - start < SLOW, text


def test_profile_choices_cover_both_outcomes(fuzz_file):
    """The generator is not all hostile: of a sample, many profiles load and many do not."""
    loaded = 0
    for i in range(200):
        rewrite(fuzz_file, profile_bytes(Choices(i.to_bytes(2, "big") * 200)))
        try:
            check_profile(load_profile(str(fuzz_file)))
            loaded += 1
        except ProfileError:
            pass
    assert 20 <= loaded <= 180


@given(data=BYTES)
@cases(PROFILES)
def test_hostile_profile_files_give_a_profile_or_a_one_line_error(fuzz_file, data):
    text = profile_bytes(Choices(data))
    rewrite(fuzz_file, text)
    start = time.thread_time()
    try:
        check_profile(load_profile(str(fuzz_file)))
    except ProfileError as e:
        assert_one_line(str(e), str(fuzz_file))
    assert time.thread_time() - start < SLOW, text


PARSERS = [parse_rate, parse_time, parse_size, parse_queue, parse_probability]
QUANTITY_VALUES = 5        # per example: 4 quantities read off the bytes, and one other value
OTHER = st.one_of(st.text(max_size=40), st.integers(), st.floats(),
                  st.sampled_from([True, None, [], {}, b"1 s", "1" * 5000, "1e9999999 s"]))


@given(data=BYTES, other=OTHER)
@cases(QUANTITIES)
def test_quantities_give_a_fraction_or_a_unit_error(data, other):
    c = Choices(data)
    for value in [quantity(c) for _ in range(QUANTITY_VALUES - 1)] + [other]:
        for parse in PARSERS:
            start = time.thread_time()
            try:
                parse(value)
            except UnitError as e:
                assert "\n" not in str(e) and len(str(e)) <= 300, str(e)
            assert time.thread_time() - start < SLOW, value


# -- the command line's numeric options ------------------------------------------------------

PORT = ["--port", "socket://127.0.0.1:9"]
# (argv before the option, the option, its attribute, the range it must give)
OPTIONS = [
    (["show", "geo-testbed"], "--f-clk", "f_clk", (1, 2 ** 32 - 1)),
    (["show", "geo-testbed"], "--mem-words", "mem_words", (1, 2 ** 32 - 1)),
    (["show", "geo-testbed"], "--mem-wpc", "mem_wpc", (0, 2 ** 32 - 1)),
    (["load", "geo-testbed"] + PORT, "--timeout", "timeout", (0, 86400)),
    (["stats"] + PORT, "--timeout", "timeout", (0, 86400)),
    (["stats"] + PORT, "--watch", "watch", (0, 86400)),
    (["bod-trace"] + PORT, "--from", "from_sf", (0, 2 ** 32 - 1)),
    (["quic", "--profile", "geo-testbed"], "--seed", "seed", (0, 2 ** 64 - 1)),
    (["quic", "--profile", "geo-testbed"], "--max-time", "max_time", (0, 1e6)),
    (["quic", "--profile", "geo-testbed"], "--eth-port", "eth_port", (1, 65535)),
    (["experiment", "ack-policy"], "--jobs", "jobs", (1, 1024)),
    (["experiment", "ack-policy"], "--seed", "seed", (0, 2 ** 64 - 1)),
    (["experiment", "ack-policy"], "--max-time", "max_time", (0, 1e6)),
    (["experiment", "ack-policy"], "--eth-port", "eth_port", (1, 65535)),
    (["sim", "start"], "--port", "port", (1, 65535)),
]
CASES = (len(SWEEP) + PROFILES + 200 + QUANTITIES * QUANTITY_VALUES * len(PARSERS)
         + OPTION_TEXTS * len(OPTIONS) + SHOWS)


def option_text(c: Choices) -> str:
    kind = c.below(5)
    if kind == 0:
        return c.pick(["nan", "inf", "-inf", "1e400", "-1", "0", "-0", "0.0", "1e-400", "", " ",
                       "+5", "+-5", "0x10", "1_000", "１２", "²", "5e2", "1.5", "9" * 5000,
                       "-" + "9" * 31, "1" * 30, "1" * 31, "10 s", "5\n", "\x00", "86400",
                       "86400.0000001", "4294967295", "4294967296", "65535", "65536", "1024",
                       "1025", "18446744073709551615", "18446744073709551616", "1e6", "1000001"])
    if kind == 1:
        return repr(struct.unpack("<d", c.raw(8))[0])
    if kind == 2:
        return str(c.below(70_000) - 5)
    if kind == 3:
        return ("-" if c.byte() & 1 else "") + str(int.from_bytes(c.raw(c.below(10)), "big"))
    return quantity(c)


@pytest.fixture(scope="module")
def parser():
    """The command line's parser, once. argparse looks its messages up in gettext catalogues,
    which stats a dozen files per message; there are none, so the lookup is skipped here (a
    third of the test's time), which changes no message."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse, "_", lambda message: message)
        yield cli.build_parser()


@given(text=st.one_of(BYTES.map(lambda b: option_text(Choices(b))), st.text(max_size=12)))
@cases(OPTION_TEXTS)
def test_numeric_options_are_in_range_or_a_usage_error(parser, text, capsys):
    for before, option, attr, (lo, hi) in OPTIONS:
        start = time.thread_time()
        try:
            args = parser.parse_args(before + [f"{option}={text}"])
        except SystemExit as e:
            assert e.code == 2
            err = capsys.readouterr().err
            assert f"argument {option}" in err and "Traceback" not in err, err
        else:
            value = getattr(args, attr)
            assert lo <= value <= hi, (option, text, value)
            assert value > lo or isinstance(value, int), (option, text, value)   # seconds: above
        assert time.thread_time() - start < SLOW, text


SHOW_VALUE = st.one_of(st.integers(-3, 2 ** 33).map(str), st.integers(0, 300).map(str),
                       st.sampled_from(["nan", "inf", "1e400", "-1", "0", "6250000",
                                        "75000000", "4294967295", "1", "2", "64", "9" * 40]))


@given(f_clk=SHOW_VALUE, mem_words=SHOW_VALUE, mem_wpc=SHOW_VALUE,
       profile=st.sampled_from(["geo-testbed", "geo-testbed-bod", "short-asym", "sat-endres"]),
       board=st.sampled_from(["sim", "versa-ecp5", "colorlight-5a-75b"]),
       options=st.sets(st.sampled_from(["--f-clk", "--mem-words", "--mem-wpc"])))
@cases(SHOWS)
def test_show_on_any_hardware_prints_or_says_why(f_clk, mem_words, mem_wpc, profile, board,
                                                 options, capsys):
    values = {"--f-clk": f_clk, "--mem-words": mem_words, "--mem-wpc": mem_wpc}
    argv = ["show", profile, "--board", board] + [f"{o}={values[o]}" for o in sorted(options)]
    start = time.thread_time()
    try:
        status = cli.main(argv)
    except SystemExit as e:
        assert e.code == 2
        assert "Traceback" not in capsys.readouterr().err
    else:
        out, err = capsys.readouterr()
        assert status in (0, 2), argv
        if status == 0:
            assert "delay line: at most" in out
        else:
            assert err.startswith("satemu: ") and err.count("\n") == 1, err
    assert time.thread_time() - start < SLOW, argv


def test_the_suite_tries_over_10_5_cases():
    assert CASES >= 10 ** 5


# -- what the adversarial run found, one by one ------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("[forward]\nloss = nan\n[return]\n", r"^forward\.loss: nan is not a finite number; .*"
                                          r"0 or 1e-30 \.\. 1e30 in magnitude$"),
    ("[forward]\nloss = inf\n[return]\n", r"^forward\.loss: inf is not a finite number"),
    ("[forward]\ndelay = -inf\n[return]\n", r"^forward\.delay: -inf is not a finite number"),
    ('[forward]\ndelay = "nan ms"\n[return]\n', r"^forward\.delay: expected a time"),
    ("[forward]\nrate = 1e400\n[return]\n", r"^forward\.rate: inf is not a finite number"),
    ('[forward]\nrate = "1e400 bit/s"\n[return]\n',
     r"^forward\.rate: '1e400 bit/s' is outside the allowed magnitudes"),
    ('[forward]\noverhead = "1e-31 B"\n[return]\n', r"^forward\.overhead: .* magnitudes"),
    ("[forward]\nseed = 1" + "0" * 40 + "\n[return]\n", r"^forward\.seed: an integer .* large"),
    ("[forward]\nseed = " + "9" * 5000 + "\n[return]\n", r"^fuzz: not valid TOML: .*4300"),
    ("[forward]\nloss = " + "[" * 5000 + "\n[return]\n", r"^fuzz: not valid TOML: .*nested"),
    ('[forward]\n[return]\n[return.bod]\nsuperframe = "26.5 ms"\nslots = 140\nslot_bytes = 188\n'
     'latency = 26\ncra = "100 kbit/s"\nbackground = nan\n',
     r"^return\.bod\.background: nan is not a finite number"),
    ('[forward]\n[return]\n[return.bod]\nsuperframe = "26.5 ms"\nslots = 140\nslot_bytes = 188\n'
     'latency = 26\ncra = "100 kbit/s"\nbackground = [{level = inf, duration = "1 s"}]\n',
     r"^return\.bod\.background\[0\]\.level: inf is not a finite number"),
    ('name = 5\n[forward]\n[return]\n', r"^name: expected a string, got 5$"),
])
def test_non_finite_and_absurd_numbers_name_the_field_and_range(text, message):
    with pytest.raises(ProfileError, match=message):
        parse_profile(text, "fuzz").check(HW)


@pytest.mark.parametrize("quantity", ["1e9999999 s", "1e-9999999 s", "0.1e+99999999999 ms",
                                      "1e" + "9" * 90 + " s"])
def test_huge_exponents_are_refused_in_constant_time(quantity):
    start = time.thread_time()
    with pytest.raises(ProfileError, match=r"^forward\.delay: .*outside the allowed magnitudes"):
        parse_profile(f'[forward]\ndelay = "{quantity}"\n[return]\n', "fuzz")
    assert time.thread_time() - start < 0.01
    assert parse_time("0e9999999 s") == 0 and parse_time("1e-30 s") > 0


def test_a_profile_that_is_not_utf8_is_named(tmp_path, capsys):
    bad = tmp_path / "latin1.toml"
    bad.write_bytes('[forward]\ndelay = "250 µs"\n[return]\n'.encode("latin-1"))
    assert cli.main(["show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == (f"satemu: {bad}: not UTF-8 text (byte 0xb5 at offset 23); a profile is a "
                   f"UTF-8 TOML file\n")
