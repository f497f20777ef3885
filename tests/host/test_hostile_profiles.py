# SPDX-License-Identifier: BSD-2-Clause
"""Hostile profiles found by the generated-input campaign are refused in one line, early."""

import struct
from fractions import Fraction
from pathlib import Path

import pytest

from satemu import cli
from satemu.box import device as device_mod
from satemu.link import profile as profile_mod, traces
from satemu.base import protocol as P
from satemu.base.boards import BOARDS
from satemu.link.profile import ChannelProfile, ProfileError, parse_profile
from satemu.link.timeline import MAX_CYCLES, MAX_STEPS, MAX_TIME, compile_timeline
from satemu.link.traces import TraceError, read_trace
from satemu.base.validate import U64_MAX

from fake_serial import FakeSerial

LINKS = '[forward]\nrate = "10 Mbit/s"\ndelay = "10 ms"\n[return]\nrate = "1 Mbit/s"\n'


def write(tmp_path: Path, text: str, name: str = "hostile.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def one_line_error(capsys, printed: bool = False) -> str:
    """The command's stderr, asserted to be one line (and, unless ``printed``, nothing on
    stdout: ``show`` lists the profile before it checks the timeline)."""
    out = capsys.readouterr()
    assert out.err.count("\n") == 1 and out.err.startswith("satemu: ")
    assert printed or out.out == ""
    return out.err.rstrip("\n")


@pytest.fixture
def no_port(monkeypatch):
    """Any attempt to open a box's port fails the test: the refusal must come first."""
    opened = []

    def connect(url, **kwargs):
        opened.append(url)
        raise AssertionError(f"the port {url} was opened")
    monkeypatch.setattr(device_mod.serial, "serial_for_url", connect)
    return opened


class HelloBox(FakeSerial):
    """A box of ``hw`` that answers HELLO and records every request's opcode; anything else
    gets BAD_OPCODE."""

    def __init__(self, hw):
        super().__init__()
        self.hw, self.ops = hw, []

    def answer(self, op: int, payload: bytes) -> bytes:
        self.ops.append(op)
        if op == P.Op.HELLO:
            return P.hello_answer(payload, self.hw.limits(), self.hw.bod_mask)
        return bytes([P.Status.BAD_OPCODE])


# ---- 1. a frame of no bytes: ZeroDivisionError on the Versa-5G -------------------------------

@pytest.mark.parametrize("board", sorted(BOARDS))
def test_min_len_0_is_the_field_refusal_on_every_board(tmp_path, capsys, board):
    path = write(tmp_path, LINKS.replace("[return]", "min_len = 0\n[return]"))
    assert cli.main(["show", path, "--board", board]) == 2
    assert one_line_error(capsys) == \
        "satemu: forward.min_len: 0 is outside the allowed range 1 .. 1518"


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_a_step_to_min_len_0_names_the_step(tmp_path, capsys, board):
    path = write(tmp_path, LINKS + '[[timeline]]\nat = "1 s"\nforward = { min_len = 0 }\n')
    assert cli.main(["show", path, "--board", board]) == 2
    assert one_line_error(capsys, printed=True) == ("satemu: timeline[0] (at 1 s): "
                                                    "forward.min_len: 0 is "
                                      "outside the allowed range 1 .. 1518")


def test_frames_of_no_bytes_have_unbounded_traffic():
    hw = BOARDS["versa-ecp5"].hardware
    for min_len, overhead in ((0, 0), (-14, 10), (-20, 0)):
        ch = ChannelProfile(rate=Fraction(10**7), min_len=min_len, overhead=overhead)
        assert ch.traffic_wpc(hw, "forward") == U64_MAX
        # the queue's cap then stays on chip, and the check names the field
        assert ch.frame_cap(hw, "forward")[0] == hw.channel_params("forward").queue_onchip


def test_load_of_min_len_0_is_refused_before_any_profile_is_sent(tmp_path, capsys,
                                                                  monkeypatch):
    box = HelloBox(BOARDS["versa-ecp5"].hardware)
    monkeypatch.setattr(device_mod.serial, "serial_for_url", lambda url, **kw: box)
    path = write(tmp_path, LINKS.replace("[return]", "min_len = 0\n[return]"))
    assert cli.main(["load", path, "--port", "fake://versa"]) == 2
    assert one_line_error(capsys) == \
        "satemu: forward.min_len: 0 is outside the allowed range 1 .. 1518"
    assert set(box.ops) == {P.Op.HELLO}              # no SET_PROFILE, no COMMIT


# ---- 2. a NUL byte in a trace's file name: ValueError -----------------------------------------

NUL_TRACE = '[forward]\ntrace = "a\\u0000b.csv"\n[return]\n'


def test_a_nul_in_a_trace_name_is_refused_by_show(tmp_path, capsys):
    assert cli.main(["show", write(tmp_path, NUL_TRACE)]) == 2
    err = one_line_error(capsys)
    assert err.startswith("satemu: forward.trace: ")
    assert err.endswith("b.csv': a file name cannot hold a NUL byte")


def test_a_nul_in_a_trace_name_is_refused_by_load_before_the_port(tmp_path, capsys, no_port):
    assert cli.main(["load", write(tmp_path, NUL_TRACE), "--port", "loop://"]) == 2
    assert one_line_error(capsys).endswith("a file name cannot hold a NUL byte")
    assert no_port == []


def test_read_trace_refuses_a_nul_in_its_name(tmp_path):
    with pytest.raises(TraceError, match=r"a file name cannot hold a NUL byte$"):
        read_trace(tmp_path / "a\0b.csv")


def test_a_nul_in_a_profile_name_is_refused(capsys):
    assert cli.main(["show", "a\0b.toml"]) == 2
    assert one_line_error(capsys) == "satemu: 'a\\x00b.toml': a file name cannot hold a NUL byte"


# ---- 3. a short repeat laid out over a long run: MemoryError ----------------------------------

REPEAT_10US = (LINKS + 'timeline_repeat = "10 us"\n'
               '[[timeline]]\nat = "0 s"\nforward = { rate = "5 Mbit/s" }\n'
               '[[timeline]]\nat = "5 us"\nforward = { rate = "6 Mbit/s" }\n')


def _repeat_10us():
    text = REPEAT_10US.replace('timeline_repeat = "10 us"\n', "")
    return parse_profile('timeline_repeat = "10 us"\n' + text, "r")


def test_laps_past_the_store_are_refused_from_arithmetic():
    hw = BOARDS["sim"].hardware
    c = compile_timeline(_repeat_10us(), hw)
    assert (c.period, len(c.steps), c.most) == (62, 2, hw.timeline_entries)
    laps = c.laps_within(600 * hw.f_clk)             # 600 s: quic's --max-time default
    with pytest.raises(ProfileError) as e:
        c.commits(0, "forward", laps)
    assert str(e.value) == (
        f"timeline_repeat: {laps:,} laps of 2 steps every 9.92 us are {2 * laps:,} steps, more "
        f"than the 262,144 the model lays out (the entries of the box's timeline store); a "
        f"longer repeat or a shorter run fits")
    most = hw.timeline_entries // 2
    assert len(c.commits(0, "forward", most)) == hw.timeline_entries
    with pytest.raises(ProfileError):
        c.cycles(0, most + 1)


def test_quic_on_a_10us_repeat_is_refused_in_one_line(tmp_path, capsys):
    path = write(tmp_path, REPEAT_10US.replace('timeline_repeat = "10 us"\n', "")
                 .replace("[forward]", 'timeline_repeat = "10 us"\n[forward]'))
    assert cli.main(["quic", "--engine", "model", "--profile", path,
                     "--out", str(tmp_path / "out")]) == 2
    assert "laps of 2 steps every 9.92 us" in one_line_error(capsys)


# ---- 4. traces and timelines past the box's store: refused as they are read --------------------

def test_a_mahimahi_trace_past_the_store_is_refused_at_its_line(tmp_path, capsys):
    """One window of 1 ms per step (1 and 2 opportunities by turns), then garbage: refused at
    the line that makes step MAX_STEPS + 1, before the garbage is reached."""
    lines = []
    for window in range(MAX_STEPS + 100):
        lines += [str(window)] * (1 + window % 2)
    refused_at = sum(1 + w % 2 for w in range(MAX_STEPS + 2))   # window MAX_STEPS + 1 ends
    lines += ["not a timestamp"] * 1000
    (tmp_path / "big.mahi").write_text("\n".join(lines) + "\n")
    path = write(tmp_path, '[forward]\ntrace = "big.mahi"\ntrace_resolution = "1 ms"\n'
                           '[return]\n')
    assert cli.main(["show", path]) == 2
    assert one_line_error(capsys) == (
        f"satemu: forward.trace: {tmp_path / 'big.mahi'}:{refused_at + 1}: more than "
        f"{MAX_STEPS:,} steps at 1 ms resolution; a timeline has at most {MAX_STEPS:,} (the "
        f"entries of a box's timeline store, one or more a step)")


def test_a_csv_trace_past_the_limit_is_refused_at_its_row(tmp_path, monkeypatch):
    monkeypatch.setattr(traces, "MAX_STEPS", 1000)
    rows = [f"{i},{1 + i % 2} Mbit/s" for i in range(1100)] + ["x,y"] * 100
    (tmp_path / "t.csv").write_text("time,rate\n" + "\n".join(rows) + "\n")
    with pytest.raises(TraceError) as e:
        read_trace(tmp_path / "t.csv")
    assert str(e.value) == (f"{tmp_path / 't.csv'}:1002: more than 1,000 steps by this row; a "
                            f"timeline has at most 1,000 (the entries of a box's timeline "
                            f"store, one or more a step)")


def test_csv_rows_that_change_nothing_are_not_steps(tmp_path, monkeypatch):
    monkeypatch.setattr(traces, "MAX_STEPS", 10)
    rows = [f"{i},5 Mbit/s" for i in range(3000)]
    (tmp_path / "t.csv").write_text("time,rate\n" + "\n".join(rows) + "\n")
    trace = read_trace(tmp_path / "t.csv")
    assert [s.at for s in trace.steps] == [0] and trace.period == 3000


def test_a_profile_of_too_many_step_tables_is_refused_before_its_toml(tmp_path, capsys):
    """MAX_STEPS + 1 [[timeline]] headers and then what is not TOML: refused for the count."""
    text = LINKS + "[[timeline]]\n" * (MAX_STEPS + 1) + "=== not TOML ===\n"
    assert cli.main(["show", write(tmp_path, text)]) == 2
    assert one_line_error(capsys) == (
        f"satemu: timeline: more than {MAX_STEPS:,} steps ([[timeline]] tables); a timeline "
        f"has at most {MAX_STEPS:,} (the entries of a box's timeline store, one or more a step)")


def test_a_profile_longer_than_the_limit_is_refused_for_its_size(tmp_path, capsys):
    path = tmp_path / "long.toml"
    path.write_bytes(LINKS.encode() + b"#" * profile_mod.MAX_BYTES + b"\n=== not TOML\n")
    assert cli.main(["show", str(path)]) == 2
    assert one_line_error(capsys) == (
        f"satemu: {path}: more than 16,777,216 bytes; a profile has at most 16,777,216 (64 for "
        f"each of a timeline's {MAX_STEPS:,} steps at most; a longer timeline belongs in a "
        f"trace file)")


# ---- 5. times past the box's 64-bit cycles: struct.error after a half-applied load -------------

TOO_LATE = '[[timeline]]\nat = "0 s"\nforward = { rate = "5 Mbit/s" }\n' \
           '[[timeline]]\nat = "{}"\nforward = {{ rate = "6 Mbit/s" }}\n'


def _step_at(at: str) -> str:
    return LINKS + TOO_LATE.replace("{}", at, 1).replace("{{", "{").replace("}}", "}")


RANGE = (f"is outside the allowed range 0 s .. {int(MAX_TIME)} s (2^63 - 1 cycles at 55 MHz, "
         f"the fastest board's clock: a timeline's cycles from its start fit the box's 64-bit "
         f"counts)")


def test_max_time_is_2_63_cycles_at_the_fastest_clock():
    f_max = max(b.f_clk for b in BOARDS.values())
    assert f_max == 55_000_000 and MAX_TIME == Fraction((1 << 63) - 1, f_max)
    assert MAX_CYCLES == (1 << 63) - 1


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_show_refuses_a_step_at_1e13_s(tmp_path, capsys, board):
    assert cli.main(["show", write(tmp_path, _step_at("1e13 s")), "--board", board]) == 2
    assert one_line_error(capsys) == f"satemu: timeline[1].at: 1e+13 s {RANGE}"


def test_show_refuses_a_repeat_of_1e13_s(tmp_path, capsys):
    text = 'timeline_repeat = "1e13 s"\n' + _step_at("1 s")
    assert cli.main(["show", write(tmp_path, text)]) == 2
    assert one_line_error(capsys) == f"satemu: timeline_repeat: 1e+13 s {RANGE}"


def test_a_trace_repeating_past_the_bound_is_refused(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("time,rate\n0,1 Mbit/s\n1e13,2 Mbit/s\n")
    path = write(tmp_path, '[forward]\nrate = "1 Mbit/s"\ntrace = "t.csv"\n[return]\n')
    assert cli.main(["show", path]) == 2
    assert one_line_error(capsys) == f"satemu: forward.trace: it repeats every 2e+13 s {RANGE}"


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_the_latest_time_that_fits_is_shown_and_packs(tmp_path, capsys, board):
    latest = MAX_TIME.numerator * 10**9 // MAX_TIME.denominator      # in ns, rounded down
    hw = BOARDS[board].hardware
    start = (1 << 63) - 1                           # --start-cycle's largest
    for text in (_step_at(f"{latest} ns"), f'timeline_repeat = "{latest} ns"\n' + _step_at("1 s")):
        assert cli.main(["show", write(tmp_path, text), "--board", board]) == 0
        assert "1.67698e+11 s" in capsys.readouterr().out
        c = compile_timeline(parse_profile(text, "latest"), hw)
        assert c.entries[-1][0] <= MAX_CYCLES and c.period <= MAX_CYCLES
        # What load sends: every entry, and a start the command line allows with the period.
        for entry in c.entries:
            P.timeline_entry(*entry)
        P.TIMELINE_START_REQUEST.pack(len(c.entries), start, c.period)
        assert start + max(c.period, c.entries[-1][0]) < 1 << 64
    one_more = f'timeline_repeat = "{latest + 1} ns"\n' + _step_at("1 s")
    with pytest.raises(ProfileError, match=r"^timeline_repeat: 1\.67698e\+11 s is outside"):
        parse_profile(one_more, "late")


def test_a_cycle_past_64_bits_would_not_pack():
    """What the bound keeps load from: the struct.error the campaign saw."""
    with pytest.raises(struct.error):
        P.timeline_entry(round(Fraction(10**13) * 55_000_000), 0, 0, 0)


def test_load_of_a_step_at_1e13_s_is_refused_before_the_port(tmp_path, capsys, no_port):
    path = write(tmp_path, _step_at("1e13 s"))
    assert cli.main(["load", path, "--port", "loop://"]) == 2
    assert one_line_error(capsys) == f"satemu: timeline[1].at: 1e+13 s {RANGE}"
    assert no_port == []


def test_a_box_clock_above_the_fastest_board_is_checked_in_cycles():
    """A box reporting a faster clock than any board: its cycles are checked at compile."""
    from dataclasses import replace
    hw = replace(BOARDS["sim"].hardware, f_clk=110_000_000)
    latest = int(MAX_TIME)
    p = parse_profile(_step_at(f"{latest} s"), "fast")
    with pytest.raises(ProfileError) as e:
        compile_timeline(p, hw)
    offset = latest * 110_000_000
    assert str(e.value) == (f"timeline[1] (at 1.67698e+11 s): {offset:,} cycles at 110 MHz, "
                            f"above the {MAX_CYCLES:,} a timeline's offset may be")
