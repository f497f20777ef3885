# SPDX-License-Identifier: BSD-2-Clause
"""Units, profiles and the CLI's profile commands."""

from fractions import Fraction

import pytest

from satemu.cli import main
from satemu.link.profile import ProfileError, builtin_profiles, load_profile, parse_profile
from satemu.base.hardware import Hardware
from satemu.base.params import ChannelParams
from satemu.base.units import (UnitError, parse_probability, parse_queue, parse_rate, parse_size,
    parse_time)


HW75 = Hardware(f_clk=75_000_000, mem_words=6 << 20)     # a 75 MHz clock, 48 MiB delay lines


def test_units_are_exact():
    assert parse_rate("8.5 Mbit/s") == 8_500_000
    assert parse_rate("100 kbit/s") == 100_000
    assert parse_rate("1.5Mbps") == 1_500_000
    assert parse_time("300 ms") == Fraction(3, 10)
    assert parse_time("250 us") == Fraction(1, 4000)
    assert parse_size("637.5 KB") == 637_500
    assert parse_size("2 MiB") == 2 << 20
    assert parse_queue("50 packets") == ("frames", 50)
    assert parse_queue("640 KB") == ("bytes", 640_000)
    assert parse_probability("1%") == Fraction(1, 100)
    assert parse_probability(0.25) == Fraction(1, 4)


@pytest.mark.parametrize("parse, text, message", [
    (parse_rate, "10 Mbit", "unknown unit 'Mbit'"),
    (parse_rate, "10", "needs a unit"),
    (parse_time, "fast", "expected a time"),
    (parse_queue, "2.5 packets", "must be whole"),
    (parse_probability, True, "expected a probability"),
])
def test_unit_errors_say_what_was_expected(parse, text, message):
    with pytest.raises(UnitError, match=message):
        parse(text)


def test_builtin_profiles_load_and_fit_the_hardware():
    profiles = builtin_profiles()
    assert {"geo-testbed", "geo-small", "geo-medium", "geo-large", "geo-constrained-return",
            "sat-endres", "short-asym", "interop-longrtt"} <= set(profiles)
    terms = Hardware(f_clk=75_000_000, mem_words=6 << 20,
                     params=ChannelParams(terminals=8, synthetic=32, demand_levels=256))
    for p in profiles.values():
        if p.terminals is None:
            p.check(HW75)
            continue
        p.check(terms)          # geo-shared-bod: on a box that tells terminals apart only
        with pytest.raises(ProfileError, match="tells no terminals apart"):
            p.check(HW75)


def test_builtin_profiles_cite_their_sources():
    """Each built-in profile names the work it comes from, with its year, and docs/profiles.md
    says what of it was checked."""
    import re
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "profiles.md").read_text()
    for name, p in builtin_profiles().items():
        assert re.search(r"\b20[0-2]\d\b", p.source), name
        assert "project brief" not in p.source and "typical ranges" not in p.source, name
        base = name.removesuffix("-bod").removesuffix("-loss1")
        assert base in doc, name


def test_geo_testbed_registers():
    regs = load_profile("geo-testbed").check(HW75)
    fwd, ret = regs["forward"], regs["return"]
    assert (fwd.rate_q, fwd.rate_num, fwd.rate_den) == (70, 10, 17)    # 1200/17 cycles per byte
    assert fwd.delay == 22_500_000 and fwd.queue_bytes == 637_500
    assert (ret.rate_q, ret.rate_num, ret.rate_den) == (400, 0, 1)
    assert ret.queue_frames == 50


def test_default_queue_is_one_bdp():
    p = parse_profile('[forward]\nrate = "10 Mbit/s"\ndelay = "300 ms"\n'
                      '[return]\nrate = "2 Mbit/s"\ndelay = "300 ms"\n')
    assert p.forward.queue_bytes == 750_000 and p.ret.queue_bytes == 150_000


@pytest.mark.parametrize("text, message", [
    ('[forward]\nrate = "20 Gbit/s"\n[return]\n', r"forward.rate: 20 Gbit/s is outside the allowed range .* 4.8 Gbit/s"),
    ('[forward]\nspeed = "1 Mbit/s"\n[return]\n', r"forward.speed: unknown setting"),
    ('[forward]\n[return]\nloss = "150%"\n', r"return.loss: 1.5 is outside the allowed range 0 .. 1"),
    ('[forward]\ndelay = "5 h"\n[return]\n', r"forward.delay: unknown unit 'h'"),
    ('[forward]\ndelay = "20000 s"\n[return]\n', r"forward.delay: 20000 s is outside the allowed range 0 s .. 14660.2 s"),
    ('[forward]\nqueue = "5000 packets"\n[return]\n', r"forward.queue: 5000 packets is outside the allowed range 1 packet .. 1024 packets"),
    ('[forward]\ngilbert_elliott = {p = 0.1}\n[return]\n', r"forward.gilbert_elliott: expected a table with exactly"),
    ('[forward]\nloss = "1%"\ngilbert_elliott = {p = 0.1, r = 0.5, loss_good = 0, loss_bad = 1}\n[return]\n',
     r"forward.loss: give either loss or gilbert_elliott"),
    ('[forward]\nmax_len = 9000\n[return]\n', r"forward.max_len: 9000 is outside the allowed range 60 .. 2048"),
    ('[forward]\n', r"return: missing"),
    ('[forward\n', r"not valid TOML"),
    ('[forward]\nrate = "1 Gbit/s"\ndelay = "600 s"\nqueue = "100 packets"\n[return]\n',
     r"forward: delay x rate needs 11250\d+ delay-line words .* the channel has 6291456"),
])
def test_profile_errors_name_the_field_and_range(text, message):
    with pytest.raises(ProfileError, match=message):
        parse_profile(text, "t").check(HW75)


def test_cli_profiles_and_show(capsys):
    assert main(["profiles"]) == 0
    assert "geo-testbed" in capsys.readouterr().out
    assert main(["show", "geo-testbed"]) == 0                  # on the simulated board
    out = capsys.readouterr().out
    assert "5 + 15/17 cycles per byte" in out and "50 packets" in out
    assert main(["show", "geo-testbed", "--f-clk", "75000000"]) == 0
    assert "70 + 10/17 cycles per byte" in capsys.readouterr().out


def test_cli_user_mistakes_get_one_line_errors(capsys, tmp_path):
    assert main(["show", "no-such-profile"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: no-such-profile: no built-in profile") and "Traceback" not in err
    bad = tmp_path / "bad.toml"
    bad.write_text('[forward]\nrate = "fast"\n[return]\n')
    assert main(["show", str(bad)]) == 2
    assert "forward.rate: expected a rate" in capsys.readouterr().err
