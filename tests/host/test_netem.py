# SPDX-License-Identifier: BSD-2-Clause
"""tc-netem option strings read as satemu channel tables (satemu.link.netem), exactly or refused."""

import time
from fractions import Fraction as F

import pytest

from satemu.base.units import parse_probability, parse_queue, parse_rate, parse_size, parse_time
from satemu.link.channel import CHANNEL_KEYS, GE_KEYS, parse_channel
from satemu.link.netem import (MAX_CHARS, MAX_WORDS, NEW_KEYS, REFUSED, NetemError,
                               netem_channel)

U = "uniform"


def values(table: dict) -> dict:
    """Each value of a channel table as satemu.base.units reads it (exact Fractions)."""
    read = {"delay": parse_time, "jitter": parse_time, "jitter_correlation": parse_probability,
            "loss": parse_probability, "rate": parse_rate, "overhead": parse_size,
            "queue": parse_queue, "seed": int, "jitter_distribution": str,
            "gilbert_elliott": lambda g: tuple(parse_probability(g[k]) for k in GE_KEYS)}
    return {key: read[key](v) for key, v in table.items()}


def mapped(text: str, table: dict, exact: dict) -> None:
    got = netem_channel(text)
    assert got == table
    assert set(got) <= CHANNEL_KEYS | NEW_KEYS
    assert "order" not in got
    assert values(got) == exact
    for key, v in got.items():
        assert isinstance(v, int if key == "seed" else dict if key == "gilbert_elliott" else str)


def refused(text, path: str = "netem") -> str:
    with pytest.raises(NetemError) as e:
        netem_channel(text, path)
    msg = str(e.value)
    assert "\n" not in msg and "\r" not in msg
    assert msg.startswith(f"{path}: ")
    assert isinstance(e.value, ValueError)
    return msg


# -- Every option of tc-netem(8), mapped -----------------------------------------------------

DELAY = [
    ("delay 300ms", {"delay": "300 ms"}, {"delay": F(3, 10)}),
    ("latency 300ms", {"delay": "300 ms"}, {"delay": F(3, 10)}),
    ("delay 300ms 20ms", {"delay": "300 ms", "jitter": "20 ms", "jitter_distribution": U},
     {"delay": F(3, 10), "jitter": F(1, 50), "jitter_distribution": U}),
    ("delay 100ms 10ms 25%",
     {"delay": "100 ms", "jitter": "10 ms", "jitter_correlation": "25%",
      "jitter_distribution": U},
     {"delay": F(1, 10), "jitter": F(1, 100), "jitter_correlation": F(1, 4),
      "jitter_distribution": U}),
    ("delay 100ms 10ms 25", {"delay": "100 ms", "jitter": "10 ms", "jitter_correlation": "25%",
                             "jitter_distribution": U},
     {"delay": F(1, 10), "jitter": F(1, 100), "jitter_correlation": F(1, 4),
      "jitter_distribution": U}),
    ("delay 1.5ms 250us 0.1%",
     {"delay": "1.5 ms", "jitter": "250 us", "jitter_correlation": "0.1%",
      "jitter_distribution": U},
     {"delay": F(3, 2000), "jitter": F(1, 4000), "jitter_correlation": F(1, 1000),
      "jitter_distribution": U}),
]
DELAY += [(f"delay 200ms 10ms distribution {name}",
           {"delay": "200 ms", "jitter": "10 ms", "jitter_distribution": name},
           {"delay": F(1, 5), "jitter": F(1, 100), "jitter_distribution": name})
          for name in ("uniform", "normal", "pareto", "paretonormal")]
DELAY += [
    # tc checks the distribution once every word is read: it may come first.
    ("distribution pareto delay 200ms 10ms 5%",
     {"delay": "200 ms", "jitter": "10 ms", "jitter_correlation": "5%",
      "jitter_distribution": "pareto"},
     {"delay": F(1, 5), "jitter": F(1, 100), "jitter_correlation": F(1, 20),
      "jitter_distribution": "pareto"}),
]

LOSS = [
    ("loss 1%", {"loss": "1%"}, {"loss": F(1, 100)}),
    ("loss random 1%", {"loss": "1%"}, {"loss": F(1, 100)}),
    ("drop 1%", {"loss": "1%"}, {"loss": F(1, 100)}),
    ("loss 0.1%", {"loss": "0.1%"}, {"loss": F(1, 1000)}),
    ("loss 0.01%", {"loss": "0.01%"}, {"loss": F(1, 10000)}),
    ("loss 1", {"loss": "1%"}, {"loss": F(1, 100)}),            # a bare number is percent
    ("loss 0.5", {"loss": "0.5%"}, {"loss": F(1, 200)}),
    ("loss 1e-2%", {"loss": "0.01%"}, {"loss": F(1, 10000)}),
    ("loss 100%", {"loss": "100%"}, {"loss": F(1)}),
    ("loss 0%", {"loss": "0%"}, {"loss": F(0)}),
    ("loss 0.3% 0%", {"loss": "0.3%"}, {"loss": F(3, 1000)}),   # no correlation: taken
    ("loss random 0.3% 0", {"loss": "0.3%"}, {"loss": F(3, 1000)}),
]


def ge(p, r, good, bad):
    return {"gilbert_elliott": {"p": p, "r": r, "loss_good": good, "loss_bad": bad}}


GEMODEL = [
    ("loss gemodel 1%", ge("1%", "99%", "0%", "100%"),
     {"gilbert_elliott": (F(1, 100), F(99, 100), F(0), F(1))}),
    ("loss gemodel 0.1%", ge("0.1%", "99.9%", "0%", "100%"),
     {"gilbert_elliott": (F(1, 1000), F(999, 1000), F(0), F(1))}),
    ("loss gemodel 1% 10%", ge("1%", "10%", "0%", "100%"),
     {"gilbert_elliott": (F(1, 100), F(1, 10), F(0), F(1))}),
    ("loss gemodel 1% 10% 70%", ge("1%", "10%", "0%", "70%"),
     {"gilbert_elliott": (F(1, 100), F(1, 10), F(0), F(7, 10))}),
    ("loss gemodel 1% 10% 70% 0.1%", ge("1%", "10%", "0.1%", "70%"),
     {"gilbert_elliott": (F(1, 100), F(1, 10), F(1, 1000), F(7, 10))}),
    ("loss gemodel 5 50 100 0", ge("5%", "50%", "0%", "100%"),
     {"gilbert_elliott": (F(1, 20), F(1, 2), F(0), F(1))}),
]

RATE = [
    ("rate 10mbit", {"rate": "10 Mbit/s"}, {"rate": F(10**7)}),
    ("rate 8.5mbit", {"rate": "8.5 Mbit/s"}, {"rate": F(8_500_000)}),
    ("rate 1001bit", {"rate": "1.001 kbit/s"}, {"rate": F(1001)}),  # exact, not tc's 1000
    ("rate 5kbit 20", {"rate": "5 kbit/s", "overhead": "20 B"},
     {"rate": F(5000), "overhead": F(20)}),
    ("rate 5kbit 0", {"rate": "5 kbit/s", "overhead": "0 B"},
     {"rate": F(5000), "overhead": F(0)}),
    ("rate 5kbit 20 0", {"rate": "5 kbit/s", "overhead": "20 B"},
     {"rate": F(5000), "overhead": F(20)}),
    # netem ignores CELLOVERHEAD without a CELLSIZE
    ("rate 5kbit 20 0 5", {"rate": "5 kbit/s", "overhead": "20 B"},
     {"rate": F(5000), "overhead": F(20)}),
    ("rate 5kbit 20 -5", {"rate": "5 kbit/s", "overhead": "20 B"},
     {"rate": F(5000), "overhead": F(20)}),
    # tc's integers are strtol base 0: 0x hex, a leading 0 octal
    ("rate 5kbit 0x14", {"rate": "5 kbit/s", "overhead": "20 B"},
     {"rate": F(5000), "overhead": F(20)}),
    ("rate 5kbit 024", {"rate": "5 kbit/s", "overhead": "20 B"},
     {"rate": F(5000), "overhead": F(20)}),
    ("rate 0bit", {}, {}),                          # netem's rate 0: not shaped
    ("rate 0 20", {}, {}),
]

OTHER = [
    ("limit 1000", {"queue": "1000 packets"}, {"queue": ("frames", 1000)}),
    ("limit 1", {"queue": "1 packet"}, {"queue": ("frames", 1)}),
    ("limit 4294967295", {"queue": "4294967295 packets"}, {"queue": ("frames", 2**32 - 1)}),
    ("seed 42", {"seed": 42}, {"seed": 42}),
    ("seed 0", {"seed": 0}, {"seed": 0}),
    ("seed 18446744073709551615", {"seed": 2**64 - 1}, {"seed": 2**64 - 1}),
    # a netem without options changes nothing
    ("", {}, {}),
    (" \t\n ", {}, {}),
]

# The examples of tc-netem(8) that the box can do.
MAN_EXAMPLES = [
    ("delay 100ms", {"delay": "100 ms"}, {"delay": F(1, 10)}),
    ("delay 100ms 75ms", {"delay": "100 ms", "jitter": "75 ms", "jitter_distribution": U},
     {"delay": F(1, 10), "jitter": F(3, 40), "jitter_distribution": U}),
    ("delay 10ms 100ms", {"delay": "10 ms", "jitter": "100 ms", "jitter_distribution": U},
     {"delay": F(1, 100), "jitter": F(1, 10), "jitter_distribution": U}),
    ("delay 100ms 20ms distribution normal",
     {"delay": "100 ms", "jitter": "20 ms", "jitter_distribution": "normal"},
     {"delay": F(1, 10), "jitter": F(1, 50), "jitter_distribution": "normal"}),
    ("loss 0.1%", {"loss": "0.1%"}, {"loss": F(1, 1000)}),
]


@pytest.mark.parametrize("text, table, exact", DELAY + LOSS + GEMODEL + RATE + OTHER
                         + MAN_EXAMPLES)
def test_mapped(text, table, exact):
    mapped(text, table, exact)


def test_the_issue_example_maps_fully():
    text = "delay 300ms 20ms 25% distribution normal loss 1% rate 8.5mbit limit 1000"
    mapped(text, {"delay": "300 ms", "jitter": "20 ms", "jitter_correlation": "25%",
                  "jitter_distribution": "normal", "loss": "1%", "rate": "8.5 Mbit/s",
                  "queue": "1000 packets"},
           {"delay": F(3, 10), "jitter": F(1, 50), "jitter_correlation": F(1, 4),
            "jitter_distribution": "normal", "loss": F(1, 100), "rate": F(8_500_000),
            "queue": ("frames", 1000)})


def test_the_issue_example_is_refused_at_reorder():
    text = ("delay 300ms 20ms distribution normal loss 1% duplicate 0.1% corrupt 0.01% "
            "reorder 5% 50%")
    why = "reordering packets: not yet on this box (it keeps every frame in order)"
    assert refused(text) == f'netem: "reorder": {why}'
    assert refused(text, "forward") == f'forward: "reorder": {why}'
    assert netem_channel(text.rsplit(" reorder", 1)[0]) == {
        "delay": "300 ms", "jitter": "20 ms", "jitter_distribution": "normal", "loss": "1%",
        "duplicate": "0.1%", "corrupt": "0.01%"}


# -- Units, as tc reads them -------------------------------------------------------------------

@pytest.mark.parametrize("word, text, seconds", [
    ("250us", "250 us", F(1, 4000)), ("250usec", "250 us", F(1, 4000)),
    ("250usecs", "250 us", F(1, 4000)), ("1.5ms", "1.5 ms", F(3, 2000)),
    ("1.5msec", "1.5 ms", F(3, 2000)), ("2msecs", "2 ms", F(1, 500)),
    ("1s", "1 s", F(1)), ("1sec", "1 s", F(1)), ("2secs", "2 s", F(2)),
    ("1.5s", "1.5 s", F(3, 2)), ("1500ms", "1.5 s", F(3, 2)), ("100ns", "100 ns", F(1, 10**7)),
    ("100nsec", "100 ns", F(1, 10**7)), ("100nsecs", "100 ns", F(1, 10**7)),
    ("300MS", "300 ms", F(3, 10)), ("1.5Sec", "1.5 s", F(3, 2)),       # tc: strcasecmp
    (".5ms", "500 us", F(1, 2000)), ("5.ms", "5 ms", F(1, 200)),
    ("1e3us", "1 ms", F(1, 1000)), ("1E-3s", "1 ms", F(1, 1000)),
    ("0.0001ms", "100 ns", F(1, 10**7)),
    ("0", "0 ms", F(0)), ("0ms", "0 ms", F(0)), ("0.000", "0 ms", F(0)),
    ("0.3333333333333333333333333333333s", "333.3333333333333333333333333333 ms",
     F(3333333333333333333333333333333, 10**31)),
])
def test_times(word, text, seconds):
    assert netem_channel(f"delay {word}") == {"delay": text}
    assert parse_time(text) == seconds
    if word[0].isdigit():                       # tc reads a jitter only if it starts so
        assert netem_channel(f"delay 1s {word}")["jitter"] == text


@pytest.mark.parametrize("word", ["100", "1", "0.5", "1e3"])
def test_a_time_without_a_unit_is_refused(word):
    # tc reads it as ns (iproute2 >= 6.9), as us before, and the man page says ms.
    assert refused(f"delay {word}") == (
        f'netem: "delay {word}": a bare {word} is a time without a unit: tc reads it as '
        f'nanoseconds since iproute2 6.9, microseconds before, and the man page says '
        f'milliseconds; write {word}ms, {word}us or {word}ns')
    assert refused(f"delay 1s {word}").startswith(f'netem: "delay 1s {word}": a bare {word} ')


@pytest.mark.parametrize("word, text, bps", [
    ("1bit", "1 bit/s", F(1)), ("1000", "1 kbit/s", F(1000)),             # bare: bit/s
    ("100kbit", "100 kbit/s", F(10**5)), ("10mbit", "10 Mbit/s", F(10**7)),
    ("1gbit", "1 Gbit/s", F(10**9)), ("2.5gbit", "2.5 Gbit/s", F(25 * 10**8)),
    ("1tbit", "1000 Gbit/s", F(10**12)),
    ("1bps", "8 bit/s", F(8)), ("1kbps", "8 kbit/s", F(8000)),            # bps: BYTES/s
    ("1mbps", "8 Mbit/s", F(8 * 10**6)), ("1.25mbps", "10 Mbit/s", F(10**7)),
    ("1gbps", "8 Gbit/s", F(8 * 10**9)), ("1tbps", "8000 Gbit/s", F(8 * 10**12)),
    ("1kibit", "1.024 kbit/s", F(1024)), ("1mibit", "1.048576 Mbit/s", F(2**20)),
    ("1gibit", "1.073741824 Gbit/s", F(2**30)), ("1tibit", "1099.511627776 Gbit/s", F(2**40)),
    ("1kibps", "8.192 kbit/s", F(8192)), ("1mibps", "8.388608 Mbit/s", F(8 * 2**20)),
    ("10Mbit", "10 Mbit/s", F(10**7)), ("10MBPS", "80 Mbit/s", F(8 * 10**7)),   # strcasecmp
    ("1KiBps", "8.192 kbit/s", F(8192)),
    ("0.5bit", "0.5 bit/s", F(1, 2)), ("1e6bit", "1 Mbit/s", F(10**6)),
])
def test_rates(word, text, bps):
    assert netem_channel(f"rate {word}") == {"rate": text}
    assert parse_rate(text) == bps


@pytest.mark.parametrize("word, text, p", [
    ("1%", "1%", F(1, 100)), ("1", "1%", F(1, 100)), ("0.1%", "0.1%", F(1, 1000)),
    ("0.1", "0.1%", F(1, 1000)), ("100", "100%", F(1)), ("0", "0%", F(0)),
    ("12.5%", "12.5%", F(1, 8)), ("1e1%", "10%", F(1, 10)), ("0.0001%", "0.0001%", F(1, 10**6)),
    ("33.33333333333333333333333333333333%", "33.33333333333333333333333333333333%",
     F(3333333333333333333333333333333333, 10**34)),
])
def test_percentages(word, text, p):
    assert netem_channel(f"loss {word}") == {"loss": text}
    assert parse_probability(text) == p


def test_percentages_are_exact_not_floats():
    assert parse_probability(netem_channel("loss 0.1%")["loss"]) == F(1, 1000)
    assert F(0.001) != F(1, 1000)                   # a float would not have been
    ge = netem_channel("loss gemodel 0.1% 0.3% 99.9% 0.01%")["gilbert_elliott"]
    assert tuple(parse_probability(ge[k]) for k in GE_KEYS) == (
        F(1, 1000), F(3, 1000), F(1, 10**4), F(999, 1000))


def test_corrupt_maps_to_the_channel_s_corruption():
    assert netem_channel("corrupt 0.1%") == {"corrupt": "0.1%"}
    assert netem_channel("corrupt 5% 25%") == {"corrupt": "5%", "corrupt_correlation": "25%"}
    assert parse_probability(netem_channel("corrupt 0.01%")["corrupt"]) == F(1, 10**4)
    assert refused("corrupt") == 'netem: "corrupt": missing its PERCENT, such as corrupt 0.1%'
    assert refused("corrupt 1% corrupt 2%").startswith('netem: "corrupt": corrupt given twice')


def test_duplicate_maps_to_the_channel_s_duplication():
    assert netem_channel("duplicate 1%") == {"duplicate": "1%"}
    assert netem_channel("duplicate 5% 25%") == {"duplicate": "5%",
                                                 "duplicate_correlation": "25%"}
    assert parse_probability(netem_channel("duplicate 0.1%")["duplicate"]) == F(1, 1000)
    assert refused("duplicate") == ('netem: "duplicate": missing its PERCENT, such as '
                                    'duplicate 1%')
    assert refused("duplicate 1% 2% 3%").startswith('netem: "3%"')


# -- Refused: what the box cannot do -----------------------------------------------------------

@pytest.mark.parametrize("text, msg", [
    ("delay 10ms reorder 25% 50%", '"reorder": reordering packets: not yet on this box (it '
     'keeps every frame in order)'),
    ("gap 5 delay 10ms", '"gap": sending every Nth packet early (reorder gap): not yet on '
     'this box'),
    ("loss 1% ecn", '"ecn": ' + REFUSED["ecn"]),
    ("loss gemodel 1% 10% ecn", '"ecn": ' + REFUSED["ecn"]),
    ("slot 10ms 20ms", '"slot": slotting: use a [return.bod] table for satemu\'s slotted return '
     'link'),
    ("slot distribution normal 10ms 5ms packets 4 bytes 1500",
     '"slot": slotting: use a [return.bod] table for satemu\'s slotted return link'),
    ("loss state 1%", '"loss state": the 4-state Markov loss model: not on this box; use loss '
     'PERCENT, or loss gemodel for bursts'),
    ("loss state 1% 2% 3% 4% 5%", '"loss state": the 4-state Markov loss model: not on this '
     'box; use loss PERCENT, or loss gemodel for bursts'),
    ("loss 0.3% 25%", '"loss 0.3% 25%": satemu\'s Bernoulli loss has no correlation; use loss '
     'gemodel for bursts'),
    ("loss random 1% 0.1", '"loss random 1% 0.1": satemu\'s Bernoulli loss has no '
     'correlation; use loss gemodel for bursts'),
    ("rate 5kbit 20 100 5", '"rate 5kbit 20 100": cells (CELLSIZE, CELLOVERHEAD) are not '
     'modelled on this box; give PACKETOVERHEAD only'),
    ("rate 5kbit -14", '"rate 5kbit -14": a negative packet overhead: satemu\'s overhead is 0 '
     'bytes or more'),
    ("rate 10%", '"rate 10%": a rate as a share of the device\'s speed: the box has no device '
     'speed; give bit/s, such as 10mbit'),
    ("delay 10ms 5ms distribution experimental", '"distribution experimental": the box takes '
     'uniform, normal, pareto, paretonormal or a table file in the profile\'s '
     'jitter_distribution'),
    ("delay 10ms 5ms distribution Normal", '"distribution Normal": the box takes uniform, '
     'normal, pareto, paretonormal or a table file in the profile\'s jitter_distribution'),
])
def test_refused_features(text, msg):
    assert refused(text) == f"netem: {msg}"


def test_refusal_reasons_are_one_table():
    for word in ("reorder", "gap", "ecn", "slot"):
        assert refused(word) == f'netem: "{word}": {REFUSED[word]}'
    assert all("\n" not in why for why in REFUSED.values())


@pytest.mark.parametrize("text, dist", [
    ("delay 10ms distribution normal", "normal"),                  # no jitter
    ("distribution normal", "normal"),                             # no delay
    ("delay 0ms 10ms distribution pareto", "pareto"),              # tc: latency 0
    ("delay 10ms 0ms distribution uniform", "uniform"),            # tc: jitter 0
    ("distribution paretonormal loss 1%", "paretonormal"),
])
def test_a_distribution_needs_a_delay_and_a_jitter(text, dist):
    assert refused(text) == (f'netem: "distribution {dist}": a distribution shapes the jitter: '
                             f'give delay TIME JITTER, both above 0 (tc refuses it too)')


# -- Refused: malformed ------------------------------------------------------------------------

@pytest.mark.parametrize("text, msg", [
    ("delay abc", '"delay abc": abc is not a time, such as 300ms, 1.5s or 250us'),
    ("delay 10xs", '"delay 10xs": 10xs is not a time, such as 300ms, 1.5s or 250us (units: s, '
     'ms, us, ns)'),
    ("delay 10ms 5xs", '"delay 10ms 5xs": 5xs is not a time, such as 300ms, 1.5s or 250us '
     '(units: s, ms, us, ns)'),
    ("delay -5ms", '"delay -5ms": -5ms is a negative time (tc refuses it too)'),
    ("delay nan", '"delay nan": nan is not a time, such as 300ms, 1.5s or 250us'),
    ("delay nanms", '"delay nanms": nanms is not a time, such as 300ms, 1.5s or 250us'),
    ("delay infms", '"delay infms": infms is not a time, such as 300ms, 1.5s or 250us'),
    ("delay 0x10ms", '"delay 0x10ms": 0x10ms is not a time, such as 300ms, 1.5s or 250us '
     '(units: s, ms, us, ns)'),
    ("delay 1e999ms", '"delay 1e999ms": 1e999ms is outside the magnitudes satemu takes (0, or '
     '1e-30 .. 1e30)'),
    ("delay 1e99999999999ms", '"delay 1e99999999999ms": 1e99999999999ms is outside the '
     'magnitudes satemu takes (0, or 1e-30 .. 1e30)'),
    ("delay 1e-31s", '"delay 1e-31s": 1e-31s is outside the magnitudes satemu takes (0, or '
     '1e-30 .. 1e30)'),
    ("delay 1e30s", '"delay 1e30s": 1e30s is outside the magnitudes satemu takes (0, or '
     '1e-30 .. 1e30)'),
    ("delay 10ms 5ms 101%", '"delay 10ms 5ms 101%": 101% is more than 100% (tc refuses it too)'),
    ("delay 10ms 5ms 5x", '"delay 10ms 5ms 5x": 5x is not a percentage, such as 1% or 0.5%'),
    ("loss 150%", '"loss 150%": 150% is more than 100% (tc refuses it too)'),
    ("loss 1%%", '"loss 1%%": 1%% is not a percentage, such as 1% or 0.5%'),
    ("loss -1%", '"loss -1%": -1% is not a percentage from 0% to 100% (tc refuses it too)'),
    ("loss .5%", '"loss .5%": tc reads a loss only if it starts with a digit; write 0.5%'),
    ("loss nan", '"loss nan": not a loss model; tc takes loss PERCENT, loss random PERCENT, loss '
     'state P13 ... or loss gemodel P ...'),
    ("loss random nan", '"loss random nan": nan is not a percentage, such as 1% or 0.5%'),
    ("loss random -1%", '"loss random -1%": -1% is not a percentage, such as 1% or 0.5%'),
    ("loss gemodel 1% 200%", '"loss gemodel 1% 200%": 200% is more than 100% (tc refuses it '
     'too)'),
    ("loss gemodel abc", '"loss gemodel abc": abc is not a percentage, such as 1% or 0.5%'),
    ("rate -1mbit", '"rate -1mbit": -1mbit is not a rate, such as 10mbit'),
    ("rate nanbit", '"rate nanbit": nanbit is not a rate, such as 10mbit'),
    ("rate 1xbit", '"rate 1xbit": 1xbit is not a rate, such as 10mbit (units: bit, kbit, mbit, '
     'gbit, tbit, kibit..tibit; bps, kbps..tbps are bytes/s)'),
    ("rate 1e999bit", '"rate 1e999bit": 1e999bit is outside the magnitudes satemu takes (0, or '
     '1e-30 .. 1e30)'),
    ("rate 1e29tbps", '"rate 1e29tbps": satemu cannot take it: \'800000000000000000000000000000000 '
     'Gbit/s\' is outside the allowed magnitudes; numbers are finite, and 0 or 1e-30 .. 1e30 in '
     'magnitude'),
    ("rate 1mbit 08", '"rate 1mbit 08": 08 is not a packet overhead, a whole number (a leading '
     '0 is octal to tc, 0x hex)'),
    ("rate 1mbit 20x", '"rate 1mbit 20x": 20x is not a packet overhead, a whole number (a '
     'leading 0 is octal to tc, 0x hex)'),
    ("rate 1mbit 2147483648", '"rate 1mbit 2147483648": 2147483648 is outside -2147483648 .. '
     '2147483647 for a packet overhead'),
    ("rate 1mbit 20 4294967296", '"rate 1mbit 20 4294967296": 4294967296 is outside 0 .. '
     '4294967295 for a cell size'),
    ("limit 0", '"limit 0": netem holds no packet at all with limit 0 (it drops them all); '
     'satemu reads a queue of 0 packets as the hardware\'s depth'),
    ("limit 1k", '"limit 1k": 1k is not a number of packets, a whole number such as 1000'),
    ("limit 1.5", '"limit 1.5": 1.5 is not a number of packets, a whole number such as 1000'),
    ("limit -1", '"limit -1": -1 is not a number of packets, a whole number such as 1000'),
    ("limit 4294967296", '"limit 4294967296": 4294967296 is not a number of packets, a whole '
     'number such as 1000'),
    ("seed -1", '"seed -1": -1 is not a seed, a whole number 0 .. 2^64 - 1'),
    ("seed abc", '"seed abc": abc is not a seed, a whole number 0 .. 2^64 - 1'),
    ("seed 18446744073709551616", '"seed 18446744073709551616": 18446744073709551616 is not a '
     'seed, a whole number 0 .. 2^64 - 1'),
])
def test_malformed_values(text, msg):
    assert refused(text) == f"netem: {msg}"


@pytest.mark.parametrize("text, msg", [
    ("delay", '"delay": missing its TIME, such as delay 300ms'),
    ("latency", '"latency": missing its TIME, such as delay 300ms'),
    ("loss", '"loss": missing its model, such as loss 1%'),
    ("loss random", '"loss random": missing its PERCENT, such as loss random 1%'),
    ("loss gemodel", '"loss gemodel": missing its P, such as loss gemodel 1% 10%'),
    ("rate", '"rate": missing its RATE, such as rate 10mbit'),
    ("limit", '"limit": missing its PACKETS, such as limit 1000'),
    ("seed", '"seed": missing its VALUE, such as seed 42'),
    ("delay 1ms distribution", '"distribution": missing its name, such as distribution normal'),
])
def test_missing_values(text, msg):
    assert refused(text) == f"netem: {msg}"


@pytest.mark.parametrize("text, msg", [
    ("delay 1ms delay 2ms", '"delay": delay given twice'),
    ("latency 1ms delay 2ms", '"delay": delay given twice (as latency and delay)'),
    ("loss 1% loss 2%", '"loss": loss given twice'),
    ("loss 1% loss gemodel 1%", '"loss": loss given twice'),
    ("drop 1% loss 2%", '"loss": loss given twice (as drop and loss)'),
    ("rate 1mbit rate 2mbit", '"rate": rate given twice'),
    ("limit 10 limit 20", '"limit": limit given twice'),
    ("seed 1 seed 2", '"seed": seed given twice'),
    ("delay 1ms 1ms distribution normal distribution pareto",
     '"distribution": distribution given twice'),
])
def test_repeated_options(text, msg):
    assert refused(text) == f"netem: {msg}"


@pytest.mark.parametrize("text, msg", [
    ("foo", '"foo": not a netem option; the box reads limit, delay (latency), distribution, '
     'loss (drop), corrupt, duplicate, rate and seed'),
    ("help", '"help": not a netem option; the box reads limit, delay (latency), distribution, '
     'loss (drop), corrupt, duplicate, rate and seed'),
    ("Delay 1ms", '"Delay": not a netem option; the box reads limit, delay (latency), '
     'distribution, loss (drop), corrupt, duplicate, rate and seed'),
    ("random 1%", '"random": not a netem option; the box reads limit, delay (latency), '
     'distribution, loss (drop), corrupt, duplicate, rate and seed'),
    # tc's matches(): an abbreviation is the first word, in tc's order, that it begins
    ("del 1ms", '"del": tc reads this as delay; write the word in full'),
    ("d 1ms", '"d": tc reads this as delay; write the word in full'),
    ("l 10", '"l": tc reads this as limit; write the word in full'),
    ("r 1mbit", '"r": tc reads this as reorder; write the word in full'),
    ("di normal", '"di": tc reads this as distribution; write the word in full'),
    # an optional value is read only right after its option, and only if it starts with a digit
    ("delay 10ms 5ms 25% 5%", '"5%": a value where a netem word belongs: tc reads an option\'s '
     'optional values only right after it, and only those starting with a digit'),
    ("delay 10ms .5ms", '".5ms": a value where a netem word belongs: tc reads an option\'s '
     'optional values only right after it, and only those starting with a digit'),
    ("delay 10ms -5ms", '"-5ms": a value where a netem word belongs: tc reads an option\'s '
     'optional values only right after it, and only those starting with a digit'),
    ("loss gemodel 1% 2% 3% 4% 5%", '"5%": a value where a netem word belongs: tc reads an '
     'option\'s optional values only right after it, and only those starting with a digit'),
])
def test_unknown_words(text, msg):
    assert refused(text) == f"netem: {msg}"


# -- Hostile input -----------------------------------------------------------------------------

def test_hostile_sizes():
    assert refused("x" * 10_000) == ("netem: a netem text of 10000 characters; at most 1000 "
                                     "are read")
    assert refused("delay 1ms" + " " * (MAX_CHARS - 8)) == (
        "netem: a netem text of 1001 characters; at most 1000 are read")
    assert netem_channel("delay 1ms" + " " * (MAX_CHARS - 9)) == {"delay": "1 ms"}
    assert refused(" ".join(["ecn"] * (MAX_WORDS + 1))) == (
        "netem: a netem text of 101 words; at most 100 are read")
    assert refused(" ".join(["ecn"] * MAX_WORDS)) == 'netem: "ecn": ' + REFUSED["ecn"]
    nines = "'" + "9" * 41 + "ms'"                  # a word of more than 40 characters: its repr
    assert refused("delay " + "9" * 41 + "ms") == (f'netem: "delay {nines}": {nines} has more '
                                                  f'than 40 digits')
    assert "has more than 40 digits" in refused("loss 0." + "0" * 900 + "1%")


@pytest.mark.parametrize("text", [None, 5, 1.5, b"delay 1ms", ["delay", "1ms"], {"delay": 1}])
def test_not_a_string(text):
    assert refused(text).startswith("netem: expected a netem option string such as \"delay "
                                    "300ms loss 1%\", got ")


def test_messages_are_one_line_whatever_the_words():
    # Whitespace of any kind separates words (as a shell would); anything else is shown escaped.
    assert netem_channel("delay 100ms\u2028loss 1%\r\n") == {"delay": "100 ms", "loss": "1%"}
    assert refused("delay\x00 1ms") == ('netem: "\'delay\\x00\'": not a netem option; the box '
                                        'reads limit, delay (latency), distribution, loss (drop), '
                                        'corrupt, duplicate, rate and seed')
    assert refused("delay 1\x1bms").startswith('netem: "delay \'1\\x1bms\'": ')
    assert refused("\u00e9" * 50).startswith("netem: \"'" + "\u00e9" * 10)
    with pytest.raises(NetemError) as e:
        netem_channel("ecn", "bad\npath")
    assert str(e.value) == "'bad\\npath': \"ecn\": " + REFUSED["ecn"]


def test_hostile_input_is_fast():
    start = time.perf_counter()
    for text in ["delay " + "9" * 990 + "ms", "delay 1e" + "9" * 990 + "ms",
                 "rate " + "1" * 40 + "e999tbps", "loss 1e-" + "9" * 990 + "%",
                 " ".join(["delay"] * 100), "delay 1ms " + "5 " * 90, "seed " + "9" * 990,
                 "limit " + "9" * 990, "rate 1bit " + "0" * 990, "rate 1bit 0x" + "f" * 980]:
        with pytest.raises(NetemError):
            netem_channel(text)
    assert time.perf_counter() - start < 0.5


# -- Through the profile loader ----------------------------------------------------------------

RTT = F(6, 10)


def test_through_parse_channel():
    text = "delay 300ms loss 0.1% rate 8.5mbit 14 limit 1000 seed 7"
    table = netem_channel(text)
    assert table == {"delay": "300 ms", "loss": "0.1%", "rate": "8.5 Mbit/s", "overhead": "14 B",
                     "queue": "1000 packets", "seed": 7}
    ch = parse_channel("forward", table, RTT, 1)
    assert (ch.delay, ch.loss, ch.rate, ch.overhead, ch.queue_frames, ch.queue_bytes, ch.seed) \
        == (F(3, 10), F(1, 1000), F(8_500_000), 14, 1000, None, 7)
    assert ch.gilbert_elliott is None


def test_gemodel_through_parse_channel():
    ch = parse_channel("return", netem_channel("delay 250ms loss gemodel 1% 10% 70% 0.1%"),
                       RTT, 1)
    assert ch.delay == F(1, 4)
    assert ch.gilbert_elliott == (F(1, 100), F(1, 10), F(1, 1000), F(7, 10))
    assert ch.loss == 0
    ch = parse_channel("return", netem_channel("loss gemodel 0.5%"), RTT, 1)
    assert ch.gilbert_elliott == (F(1, 200), F(199, 200), F(0), F(1))


@pytest.mark.parametrize("text, rate", [("rate 1kbps", F(8000)), ("rate 1mibit", F(2**20)),
                                        ("rate 10000000", F(10**7)), ("rate 1.25MBps", F(10**7))])
def test_rates_through_parse_channel(text, rate):
    ch = parse_channel("forward", netem_channel(text), RTT, 1)
    assert ch.rate == rate
    assert ch.queue_bytes == max(int(rate * RTT / 8), 1518)    # satemu's default: one BDP


def test_no_options_through_parse_channel():
    assert parse_channel("forward", netem_channel(""), RTT, 3) == parse_channel(
        "forward", {}, RTT, 3)
    assert parse_channel("forward", netem_channel("rate 0bit"), RTT, 3).rate is None
