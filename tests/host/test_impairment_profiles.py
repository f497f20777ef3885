# SPDX-License-Identifier: BSD-2-Clause
"""Profiles with jitter and corruption, and channels written as tc-netem strings: what they
mean in registers, what the boards take, and a one-line error for everything else."""

from fractions import Fraction

import pytest

from satemu.base import distributions
from satemu.base.boards import BOARDS
from satemu.link.profile import ProfileError, parse_profile, override_profile

SIM = BOARDS["sim"].hardware
BASE = """
name = "t"
[forward]
rate = "10 Mbit/s"
delay = "50 ms"
{extra}
[return]
rate = "2 Mbit/s"
delay = "50 ms"
"""


def profile(extra: str, base_dir=None):
    return parse_profile(BASE.format(extra=extra), "t", base_dir=base_dir)


def error(extra: str, base_dir=None, hw=SIM) -> str:
    with pytest.raises(ProfileError) as e:
        profile(extra, base_dir).check(hw)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_jitter_and_corruption_registers():
    p = profile('jitter = "10 ms"\njitter_distribution = "normal"\njitter_correlation = "25%"\n'
                'corrupt = "0.1%"\ncorrupt_correlation = "50%"')
    regs = p.check(SIM)["forward"]
    assert regs.jit_sigma == round(Fraction(1, 100) * SIM.f_clk) and regs.jit_corr == 16384
    assert regs.cor_p == round(Fraction(1, 1000) * 2**32) and regs.cor_corr == 32768
    assert p.jitter_tables() == {"forward": distributions.table("normal")}
    assert p.forward.describe().endswith(
        "jitter 10 ms normal, 25% correlated, in order, 0.1% corrupted, 50% correlated (one "
        "bit, FCS recomputed)")
    assert profile('corrupt = "100%"').check(SIM)["forward"].cor_p == 2**32 - 1


def test_ecn_step_registers():
    p = profile('ecn_step = ["1 ms", "20 packets"]')
    regs = p.check(SIM)["forward"]
    assert (regs.ecn_sojourn, regs.ecn_queue) == (round(Fraction(1, 1000) * SIM.f_clk), 20)
    assert p.forward.describe().endswith(
        "ECN-capable packets marked CE from 1 ms in the queue or 20 packets ahead")
    regs = profile('ecn_step = "5 packets"').check(SIM)["forward"]
    assert (regs.ecn_sojourn, regs.ecn_queue) == (0, 5)
    assert profile('ecn_step = "off"').check(SIM)["forward"].ecn_queue == 0


def test_duplication_registers():
    p = profile('duplicate = "1%"\nduplicate_correlation = "25%"')
    regs = p.check(SIM)["forward"]
    assert regs.dup_p == round(Fraction(1, 100) * 2**32) and regs.dup_corr == 16384
    assert p.forward.describe().endswith("1% duplicated, 25% correlated")
    assert profile('duplicate = "100%"').check(SIM)["forward"].dup_p == 2**32 - 1


def test_a_user_table(tmp_path):
    (tmp_path / "mine.dist").write_text("# a table\n" + " ".join(str(v) for v in range(-4096,
                                                                                    4096, 2)))
    p = profile('jitter = "1 ms"\njitter_distribution = "mine.dist"', tmp_path)
    table = p.forward.jitter_table()
    assert len(table) == 4096 and min(table) == -4096 and max(table) == 4094
    assert "jitter 1 ms table mine.dist" in p.forward.describe()
    (tmp_path / "bad.dist").write_text("1 2 x3")
    assert error('jitter = "1 ms"\njitter_distribution = "bad.dist"', tmp_path) == (
        'forward.jitter_distribution bad.dist line 1: "x3" is not an integer')


@pytest.mark.parametrize("extra, message", [
    ('jitter = "1 ms"\njitter_correlation = "100%"', "forward.jitter_correlation: 1 is outside "
     "0 .. 1, 1 excluded (at 1 the first draw would repeat for ever)"),
    ('jitter = "1 ms"\njitter_correlation = "150%"', "forward.jitter_correlation: "),
    ('corrupt = "150%"', "forward.corrupt: 1.5 is outside 0 .. 1"),
    ('corrupt = "1%"\ncorrupt_correlation = "1"', "forward.corrupt_correlation: 1 is outside "
     "0 .. 1, 1 excluded (at 1 the first decision would repeat for ever)"),
    ('corrupt_correlation = "10%"', "forward.corrupt: missing; corrupt_correlation describes a "
     "corruption, which needs its share"),
    ('duplicate = "101%"', "forward.duplicate: 1.01 is outside 0 .. 1"),
    ('duplicate = "1%"\nduplicate_correlation = "100%"', "forward.duplicate_correlation: 1 is "
     "outside 0 .. 1, 1 excluded (at 1 the first decision would repeat for ever)"),
    ('duplicate_correlation = "10%"', "forward.duplicate: missing; duplicate_correlation "
     "describes a duplication, which needs its share"),
    ('ecn_step = "0 ms"', "forward.ecn_step: '0 ms' would mark nothing; give a time or a "
     'number of packets above 0, or "off"'),
    ('ecn_step = "2 KB"', "forward.ecn_step: '2 KB' is in bytes; the step counts packets "
     "queued ahead"),
    ('ecn_step = "soon"', "forward.ecn_step: expected a time in the queue, such as \"1 ms\""),
    ('ecn_step = "1000 s"', "forward.ecn_step: 1000 s is outside the allowed range"),
    ('ecn_step = "70000 packets"', "forward.ecn_step: 70000 packets is outside the allowed "
     "range 1 packet .. 65535 packets"),
    ('corrupt = "1%"\ncorrupt_fcs = "bad"', 'forward.corrupt_fcs: "bad" (a corrupted frame '
     'leaving with its FCS bad, for the next hop to drop) is not built yet'),
    ('corrupt = "1%"\ncorrupt_fcs = "maybe"', 'forward.corrupt_fcs: expected "recomputed" or '
     '"bad", got \'maybe\''),
    ('jitter = "1 ms"\norder = "free"', 'forward.order: "free" (frames overtaking one another) '
     'is not built yet'),
    ('jitter = "1 ms"\norder = "sorted"', 'forward.order: expected "keep" or "free"'),
    ('jitter_distribution = "normal"', "forward.jitter: missing;"),
    ('jitter = "1 ms"\njitter_distribution = "gaussian"', 'forward.jitter_distribution: '
     "'gaussian' is neither a distribution (uniform, normal, pareto, paretonormal) nor a table "
     "file"),
    ('jitter = "-1 ms"', "forward.jitter: "),
    # A jitter the delay line cannot hold: 4 sigma of 600 s on top of the delay; one its
    # register cannot.
    ('jitter = "600 s"', "forward: delay x rate needs"),
    ('jitter = "3000 s"', "forward.jitter: 3000 s is outside the allowed range 0 s .. 687.195 s "
     "(32-bit register)"),
])
def test_one_line_refusals(extra, message):
    assert error(extra).startswith(message)


def test_boards_without_the_blocks_say_so():
    versa = BOARDS["versa-ecp5"].hardware
    assert error('jitter = "1 ms"', hw=versa) == (
        "forward.jitter: this box's channels have no jitter block (see 'satemu show --board')")
    assert error('corrupt = "1%"', hw=versa) == (
        "forward.corrupt: this box's channels have no corruption block (see 'satemu show "
        "--board')")
    assert error('ecn_step = "1 ms"', hw=versa) == (
        "forward.ecn_step: this box's channels have no ECN marking (see 'satemu show --board')")
    assert error('duplicate = "1%"', hw=versa) == (
        "forward.duplicate: this box's channels have no duplication block (see 'satemu show "
        "--board')")


def test_jitter_on_a_bod_channel_is_refused():
    text = BASE.format(extra="").replace('rate = "2 Mbit/s"\n', 'jitter = "1 ms"\n') + """
[return.bod]
superframe = "26.5 ms"
slots = 140
slot_bytes = 188
cra = "100 kbit/s"
vbdc_max = "64 KB"
latency = 4
"""
    with pytest.raises(ProfileError, match="return.jitter: a channel BoD serves has no jitter"):
        parse_profile(text, "t").check(SIM)
    with pytest.raises(ProfileError, match="return.ecn_step: a channel BoD serves has no ECN "
                                           "marking yet"):
        parse_profile(text.replace('jitter = "1 ms"', 'ecn_step = "1 ms"'), "t").check(SIM)


def test_netem_strings_in_profiles_and_overrides():
    text = ('name = "n"\nforward = "delay 300ms 20ms 25% distribution normal loss 1% '
            'corrupt 0.1% rate 8.5mbit limit 1000"\nreturn = "delay 300ms rate 1.5mbit"\n')
    p = parse_profile(text, "n")
    f = p.forward
    assert (f.delay, f.jitter, f.jitter_distribution, f.jitter_correlation, f.loss, f.corrupt,
            f.rate, f.queue_frames) == (Fraction(3, 10), Fraction(1, 50), "normal",
                                        Fraction(1, 4), Fraction(1, 100), Fraction(1, 1000),
                                        8_500_000, 1000)
    p.check(SIM)
    with pytest.raises(ProfileError, match='^forward: "reorder": reordering packets: not '
                                           'yet on this box'):
        parse_profile(text.replace("corrupt 0.1%", "reorder 10%"), "n")
    d = parse_profile(text.replace("corrupt 0.1%", "duplicate 0.1% 20%"), "n").forward
    assert (d.duplicate, d.duplicate_correlation) == (Fraction(1, 1000), Fraction(1, 5))
    out = override_profile(BASE.format(extra=""), [("return", "delay 20ms 5ms")], "o")
    assert parse_profile(out, "o").ret.jitter == Fraction(1, 200)
    with pytest.raises(ProfileError, match="a whole channel is a tc-netem option string"):
        override_profile(BASE.format(extra=""), [("return", "3")], "o")


def test_timeline_steps_change_jitter_and_corruption():
    text = BASE.format(extra='jitter = "2 ms"\ncorrupt = "1%"') + """
[[timeline]]
at = "1 s"
[timeline.forward]
jitter = "5 ms"
jitter_correlation = "50%"
corrupt = "0%"
duplicate = "2%"
duplicate_correlation = "10%"
ecn_step = "7 packets"
"""
    p = parse_profile(text, "t")
    from satemu.link.timeline import compile_timeline
    compiled = compile_timeline(p, SIM)
    regs = [c.regs for c in compiled.commits(0, "forward", 1)]
    assert regs[-1].jit_sigma == round(0.005 * SIM.f_clk) and regs[-1].jit_corr == 32768
    assert regs[-1].cor_p == 0
    assert (regs[-1].dup_p, regs[-1].dup_corr) == (round(0.02 * 2**32), round(0.1 * 65536))
    assert (regs[-1].ecn_sojourn, regs[-1].ecn_queue) == (0, 7)
    with pytest.raises(ProfileError, match="jitter_distribution"):
        parse_profile(text.replace('corrupt = "0%"', 'jitter_distribution = "normal"'), "t")
