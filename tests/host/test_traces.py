# SPDX-License-Identifier: BSD-2-Clause
"""Link traces (satemu.link.traces): Mahimahi opportunities and CSV rows to exact timeline steps."""

from fractions import Fraction as F

import pytest

from satemu.link import traces
from satemu.base.boards import BOARDS
from satemu.link.profile import parse_profile
from satemu.base.protocol import PROFILE_FIELDS
from satemu.link.timeline import compile_timeline
from satemu.link.traces import Trace, TraceError, TraceStep, read_csv, read_mahimahi, read_trace
from satemu.base.validate import profile_fields

MS = F(1, 1000)
PACKET_BITS = 1500 * 8          # one default packet


def rate_steps(trace):
    """(at, rate) of each step of a Mahimahi trace, which only ever sets the rate."""
    assert all(set(s.changes) == {"rate"} for s in trace.steps)
    return [(s.at, s.changes["rate"]) for s in trace.steps]


def exact(trace):
    """Every time and value of ``trace`` is a Fraction; steps start at 0 and increase."""
    assert type(trace.period) is F
    ats = [s.at for s in trace.steps]
    assert ats[0] == 0 and all(a < b for a, b in zip(ats, ats[1:])) and ats[-1] < trace.period
    for s in trace.steps:
        assert type(s.at) is F and all(type(v) is F for v in s.changes.values())
    return trace


def mahimahi(text, res_ms=100, **kw):
    return exact(read_mahimahi(text, name="x.up", resolution=res_ms * MS, **kw))


# --- Mahimahi ---------------------------------------------------------------------------------


def test_mahimahi_windows_rates_and_trailing_outage():
    # period 250 ms; windows [0,100) [100,200) [200,250); the 250 stamp is ms 0 of the next loop
    trace = mahimahi("0\n10\n50\n120\n150\n250\n")
    assert trace.period == F(1, 4)
    assert rate_steps(trace) == [(0, 4 * PACKET_BITS * 10), (F(1, 10), 2 * PACKET_BITS * 10),
                                 (F(1, 5), 0)]
    assert trace.steps[0] == TraceStep(at=F(0), changes={"rate": F(480_000)})
    assert "x.up" in trace.source and "6 opportunities" in trace.source
    assert "0.25 s" in trace.source and "at 100 ms resolution" in trace.source


def test_mahimahi_last_window_shorter_uses_its_true_length():
    trace = mahimahi("10\n20\n230\n240\n250\n")
    # window 2 is [200, 250): 2 packets in 50 ms
    assert rate_steps(trace) == [(0, F(3 * PACKET_BITS, F(1, 10))), (F(1, 10), 0),
                                 (F(1, 5), F(2 * PACKET_BITS, F(1, 20)))]
    assert rate_steps(trace)[2][1] == 480_000
    assert trace.period == F(1, 4)


def test_mahimahi_equal_windows_merge():
    # 50 ms windows with 2, 1, 1, 2 opportunities (the 200 stamp wraps to window 0)
    trace = mahimahi("20\n70\n120\n170\n180\n200\n", res_ms=50)
    assert rate_steps(trace) == [(0, 480_000), (F(1, 20), 240_000), (F(3, 20), 480_000)]
    assert trace.period == F(1, 5)


def test_mahimahi_leading_gap_and_outage_between():
    trace = mahimahi("250\n300\n")
    assert rate_steps(trace) == [(0, 120_000), (F(1, 10), 0), (F(1, 5), 120_000)]
    assert trace.period == F(3, 10)


def test_mahimahi_stamp_equal_to_period_is_time_0_of_next_loop():
    trace = mahimahi("70\n100\n100\n", res_ms=50)
    assert rate_steps(trace) == [(0, 480_000), (F(1, 20), 240_000)]
    assert trace.period == F(1, 10)
    # both opportunities of "0\n100" fall in the one window
    assert rate_steps(mahimahi("0\n100\n")) == [(0, 240_000)]


def test_mahimahi_resolution_longer_than_period_and_packet_size():
    trace = mahimahi("10\n20\n", res_ms=1000, packet_bytes=100)
    assert rate_steps(trace) == [(0, F(2 * 800, F(20, 1000)))]
    assert trace.steps[0].changes["rate"] == 80_000
    assert trace.period == F(1, 50)


def test_mahimahi_spaces_crlf_and_trailing_blank_lines():
    assert rate_steps(mahimahi(" 0 \r\n\t100\r\n  200\n\n   \n\n")) == [(0, 240_000),
                                                                    (F(1, 10), 120_000)]


@pytest.mark.parametrize("resolution", [F(1, 2000), F(3, 2000), F(0), F(-1, 10), 0.1])
def test_mahimahi_resolution_must_be_whole_positive_ms(resolution):
    with pytest.raises(TraceError, match=r"^x\.up: .*resolution"):
        read_mahimahi("0\n10\n", name="x.up", resolution=resolution)


@pytest.mark.parametrize("text, line, what", [
    ("0\n10\nabc\n", 3, "'abc'"),
    ("0\n-5\n", 2, "'-5'"),
    ("0\n+5\n", 2, "'\\+5'"),
    ("0\n1.5\n", 2, "'1.5'"),
    ("5\n1e3\n", 2, "'1e3'"),
    ("0\n10 20\n", 2, "'10 20'"),
    ("0\n20\n10\n", 3, "10 ms is before .* 20 ms"),
    ("0\n\n10\n", 2, "blank line"),
    ("0\n10\n  \t\n10\n\n", 3, "blank line"),
    ("0\n" + "9" * 31 + "\n", 2, "too large"),
    ("0\n" + "1" * 41 + "\n", 2, "more than 40 digits"),
    ("0\nnan\n", 2, "'nan'"),
    ("0\ninf\n", 2, "'inf'"),
])
def test_mahimahi_malformed_lines(text, line, what):
    with pytest.raises(TraceError, match=rf"^x\.up:{line}: .*{what}") as e:
        read_mahimahi(text, name="x.up", resolution=F(1, 10))
    assert "\n" not in str(e.value) and isinstance(e.value, ValueError)


def test_mahimahi_quote_is_shortened():
    with pytest.raises(TraceError) as e:
        read_mahimahi("0\n" + "a" * 100 + "\n", name="x.up", resolution=F(1, 10))
    assert "'" + "a" * 37 + "...'" in str(e.value) and "a" * 38 not in str(e.value)


@pytest.mark.parametrize("text, what", [
    ("", "no delivery opportunities"),
    ("\n \n\n", "no delivery opportunities"),
    ("0\n0\n", "period of 0 ms.*line 2"),
])
def test_mahimahi_whole_file_problems(text, what):
    with pytest.raises(TraceError, match=rf"^x\.up: {what}"):
        read_mahimahi(text, name="x.up", resolution=F(1, 10))


@pytest.mark.parametrize("packet_bytes", [0, -1, True, 1.5])
def test_mahimahi_packet_bytes(packet_bytes):
    with pytest.raises(TraceError, match="packet_bytes"):
        read_mahimahi("0\n10\n", name="x.up", resolution=F(1, 10), packet_bytes=packet_bytes)


# --- CSV --------------------------------------------------------------------------------------


def csv(text):
    return exact(read_csv(text, name="t.csv"))


def test_csv_all_columns_units_and_unchanged_fields():
    trace = csv("time,rate,delay,loss\n"
                "0,10 Mbit/s,300 ms,1%\n"
                "1.5 s,5 Mbit/s,,\n"
                "2,5 Mbit/s,300 ms,0.5%\n")
    assert trace.steps == (
        TraceStep(F(0), {"rate": F(10**7), "delay": F(3, 10), "loss": F(1, 100)}),
        TraceStep(F(3, 2), {"rate": F(5 * 10**6)}),
        TraceStep(F(2), {"loss": F(1, 200)}),
    )
    assert trace.period == F(5, 2)
    assert trace.source.startswith("csv trace t.csv: 3 rows") and "2.5 s" in trace.source


def test_csv_header_order_subset_and_spaces():
    trace = csv(" loss , time \n0.01, 0\n2%,250 ms\n")
    assert trace.steps == (TraceStep(F(0), {"loss": F(1, 100)}),
                           TraceStep(F(1, 4), {"loss": F(1, 50)}))
    assert trace.period == F(1, 2)
    trace = csv("delay,time,rate\n20 ms,0,1 Mbit/s\n,500 ms,1.5 Mbit/s\n")
    assert trace.steps == (TraceStep(F(0), {"delay": F(1, 50), "rate": F(10**6)}),
                           TraceStep(F(1, 2), {"rate": F(15 * 10**5)}))
    assert trace.period == 1


def test_csv_bare_numbers_and_outage():
    trace = csv("time,rate\n0,1000\n0.25,0\n1e0,2.5e3\n")
    assert trace.steps == (TraceStep(F(0), {"rate": F(1000)}), TraceStep(F(1, 4), {"rate": F(0)}),
                           TraceStep(F(1), {"rate": F(2500)}))
    assert trace.period == F(7, 4)


def test_csv_row_changing_nothing_adds_no_step():
    trace = csv("time,rate,delay\n0,1 Mbit/s,0 s\n1,1000 kbit/s,\n2,,0 ms\n3,2 Mbit/s,0 s\n")
    assert trace.steps == (TraceStep(F(0), {"rate": F(10**6), "delay": F(0)}),
                           TraceStep(F(3), {"rate": F(2 * 10**6)}))
    assert trace.period == 4


def test_csv_comments_and_blank_lines():
    trace = csv("# made by hand\n\ntime,delay\n  # a comment\n0,10 ms\n\n1,20 ms\r\n")
    assert trace.steps == (TraceStep(F(0), {"delay": F(1, 100)}),
                           TraceStep(F(1), {"delay": F(1, 50)}))
    assert trace.period == 2


BAD_CSV = [
    # unsorted and duplicate times name the line and both times
    ("# c\ntime,delay\n0,10 ms\n# c\n1 s,20 ms\n0.5,30 ms\n", 6,
     "0.5 s is not after 1 s \\(line 5\\)"),
    ("time,rate\n0,1 bit/s\n1,2 bit/s\n1000 ms,3 bit/s\n", 4, "1 s is not after 1 s \\(line 3\\)"),
    ("time,rate\n0.5,1 bit/s\n1,2 bit/s\n", 2, "first row's time is 0.5 s"),
    ("time,rate,loss\n0,,1%\n1,1 Mbit/s,\n", 2, "first row leaves rate empty"),
    ("time,rate\n0,1 bit/s\n,2 bit/s\n", 3, "time is empty"),
    ("time,rate\n0,1 Mbit/s,3\n1,1 bit/s\n", 2, "3 fields, but the header names 2"),
    ("time,rate,jitter\n0,1,2\n1,1,2\n", 1, "unknown column 'jitter'"),
    ("time,rate,\n0,1,\n1,1,\n", 1, "unknown column ''"),
    ("0,1 Mbit/s\n1,1 Mbit/s\n", 1, "unknown columns '0', '1 Mbit/s'"),
    ("time,rate,rate\n", 1, "column rate named more than once"),
    ("Time,rate\n", 1, "unknown column 'Time'"),
    ("rate,delay\n1,1 ms\n", 1, "no time column"),
    ("time\n0\n1\n", 1, "only time"),
    # numbers the units module refuses, with the line
    ("time,rate\n0,1 bit/s\nnan,2 bit/s\n", 3, "time 'nan'"),
    ("time,rate\n0,1 bit/s\ninf s,2 bit/s\n", 3, "time 'inf s'"),
    ("time,rate\n0,1 bit/s\n1e400,2 bit/s\n", 3, "time '1e400': .*allowed magnitudes"),
    ("time,rate\n0,1 bit/s\n-1 s,2 bit/s\n", 3, "time '-1 s'"),
    ("time,rate\n0,inf\n1,1\n", 2, "rate 'inf'"),
    ("time,rate\n0,1\n1,1e400\n", 3, "rate '1e400': .*allowed magnitudes"),
    ("time,rate\n0,1\n1,1e400 Mbit/s\n", 3, "rate '1e400 Mbit/s'"),
    ("time,rate\n0,1\n1,10 Mbit\n", 3, "unknown unit 'Mbit'"),
    ("time,rate\n0,1\n1,-5 bit/s\n", 3, "rate '-5 bit/s'"),
    ("time,delay\n0,1 ms\n1,300\n", 3, "delay '300': .*needs a unit"),
    ("time,delay\n0,1 ms\n1,nan ms\n", 3, "delay 'nan ms'"),
    ("time,loss\n0,1%\n1,100%\n", 3, "below 1"),
    ("time,loss\n0,1.5\n1,0\n", 2, "below 1"),
    ("time,loss\n0,1%\n1,nan\n", 3, "loss 'nan'"),
    ("time,loss\n0,1%\n1,1e400%\n", 3, "loss '1e400%'"),
]


@pytest.mark.parametrize("text, line, what", BAD_CSV)
def test_csv_malformed(text, line, what):
    with pytest.raises(TraceError, match=rf"^t\.csv:{line}: .*{what}") as e:
        read_csv(text, name="t.csv")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text, what", [
    ("", "no header line"),
    ("# only a comment\n\n", "no header line"),
    ("time,rate\n", "0 data rows; a CSV trace needs at least 2"),
    ("time,rate\n0,1 Mbit/s\n", "1 data row; a CSV trace needs at least 2"),
])
def test_csv_whole_file_problems(text, what):
    with pytest.raises(TraceError, match=rf"^t\.csv: {what}"):
        read_csv(text, name="t.csv")


# --- files and limits -------------------------------------------------------------------------


def test_read_trace_by_suffix(tmp_path):
    (tmp_path / "a.csv").write_text("time,rate\n0,1 Mbit/s\n1,0\n")
    (tmp_path / "B.CSV").write_bytes("\ufefftime,delay\n0,1 ms\n2,3 ms\n".encode())
    (tmp_path / "c.up").write_text("0\n10\n50\n120\n150\n250\n")
    (tmp_path / "d").write_text("0\n100\n")
    a = read_trace(tmp_path / "a.csv")
    assert isinstance(a, Trace) and a.period == 2
    assert a.steps == (TraceStep(F(0), {"rate": F(10**6)}), TraceStep(F(1), {"rate": F(0)}))
    assert read_trace(tmp_path / "B.CSV").period == 4
    c = read_trace(tmp_path / "c.up", resolution=F(1, 10))
    assert c == read_mahimahi("0\n10\n50\n120\n150\n250\n", name=str(tmp_path / "c.up"),
                              resolution=F(1, 10))
    assert rate_steps(c) == [(0, 480_000), (F(1, 10), 240_000), (F(1, 5), 0)]
    assert rate_steps(read_trace(str(tmp_path / "d"), resolution=F(1, 20))) == [(0, 480_000),
                                                                            (F(1, 20), 0)]


def test_read_trace_errors(tmp_path):
    (tmp_path / "c.up").write_text("0\n10\n")
    with pytest.raises(TraceError, match="needs a resolution"):
        read_trace(tmp_path / "c.up")
    with pytest.raises(TraceError, match=r"missing\.csv: cannot be read"):
        read_trace(tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_bytes(b"time,rate\n0,1\n\xff,2\n")
    with pytest.raises(TraceError, match=r"bad\.csv:3: not UTF-8"):
        read_trace(tmp_path / "bad.csv")
    (tmp_path / "e.up").write_text("0\n10\nx\n")
    with pytest.raises(TraceError, match=r"e\.up:3: 'x'"):
        read_trace(tmp_path / "e.up", resolution=F(1, 10))


def test_size_limits(tmp_path, monkeypatch):
    assert traces.MAX_BYTES == 50_000_000 and traces.MAX_LINES == 2_000_000
    monkeypatch.setattr(traces, "MAX_BYTES", 20)
    (tmp_path / "big.up").write_text("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")     # 21 bytes
    with pytest.raises(TraceError, match=r"big\.up: more than 20 bytes"):
        read_trace(tmp_path / "big.up", resolution=F(1, 10))
    with pytest.raises(TraceError, match="more than 20 bytes"):
        read_csv("time,rate\n0,1\n1,2\n2,3 bit/s\n", name="t.csv")
    with pytest.raises(TraceError, match="more than 20 bytes"):       # 15 characters, 30 bytes
        read_csv("é" * 15, name="t.csv")
    monkeypatch.setattr(traces, "MAX_BYTES", 50_000_000)
    monkeypatch.setattr(traces, "MAX_LINES", 3)
    assert rate_steps(mahimahi("0\n1\n2\n", res_ms=1)) == [(0, 24_000_000), (MS, 12_000_000)]
    with pytest.raises(TraceError, match=r"^x\.up: 4 lines; a trace may have at most 3$"):
        read_mahimahi("0\n1\n2\n3", name="x.up", resolution=MS)
    with pytest.raises(TraceError, match="4 lines"):
        read_csv("time,rate\n0,1\n1,2\n\n", name="t.csv")


# --- traces in a timeline: outages ------------------------------------------------------------

HW = BOARDS["sim"].hardware
FIELD = {f.name: i for i, f in enumerate(PROFILE_FIELDS)}
LOSS_ALL = (1 << 32) - 1        # the loss register's largest value: an outage
LOSS_1 = 42949673               # 1% of 2^32, rounded
# 10 ms windows of 3 opportunities (the 40 stamp is the next lap's 0), none, 2 and none: the
# lap ends inside an outage.
GAPPY = "0\n0\n25\n26\n40\n"
R36, R24 = F(3 * PACKET_BITS, F(1, 100)), F(2 * PACKET_BITS, F(1, 100))     # 3.6, 2.4 Mbit/s


def traced(tmp_path, trace_name, text, forward="", steps=""):
    """A profile whose forward channel takes its steps from trace ``trace_name`` (``text``)."""
    (tmp_path / trace_name).write_text(text)
    resolution = "" if trace_name.endswith(".csv") else 'trace_resolution = "10 ms"\n'
    return parse_profile(f'name = "o"\n[forward]\nrate = "10 Mbit/s"\ndelay = "10 ms"\n'
                         f'queue = "100 packets"\ntrace = "{trace_name}"\n{resolution}{forward}'
                         f'[return]\nrate = "2 Mbit/s"\ndelay = "10 ms"\n{steps}', "o",
                         base_dir=tmp_path)


def forward_states(compiled):
    """(time, rate, loss, Gilbert-Elliott) of the forward channel from each compiled step on."""
    return [(s.at, s.profiles["forward"].rate, s.profiles["forward"].loss,
             s.profiles["forward"].gilbert_elliott) for s in compiled.steps]


def replay(profile, compiled, laps):
    """Each step's forward registers as the box reaches them: the profile's, then every lap's
    entries applied one register at a time, as the firmware applies them."""
    fields = profile_fields(profile.check(HW)["forward"])
    names = {i: name for name, i in FIELD.items()}
    out = []
    for _ in range(laps):
        for step in compiled.steps:
            for offset, channel, field, value in compiled.entries:
                if offset == step.offset and channel == 0:
                    fields[names[field]] = value
            out.append(dict(fields))
    return out


GE = (F(1, 100), F(1, 5), F(0), F(1, 2))
LOSS_REGS = ("loss_mode", "loss_p", "ge_p", "ge_r", "ge_loss_good", "ge_loss_bad")
OUTAGE_REGS = (1, LOSS_ALL, 0, 0, 0, 0)         # Bernoulli, every frame lost


@pytest.mark.parametrize("base, loss, ge, regs", [
    ("", F(0), None, (0, 0, 0, 0, 0, 0)),
    ('loss = "1%"\n', F(1, 100), None, (1, LOSS_1, 0, 0, 0, 0)),
    ("gilbert_elliott = { p = 0.01, r = 0.2, loss_good = 0, loss_bad = 0.5 }\n", F(0), GE,
     (2, 0, LOSS_1, 858993459, 0, 1 << 31)),
])
def test_an_outage_ends_with_the_loss_in_force_before_it(tmp_path, base, loss, ge, regs):
    """The first step after an outage puts back the profile's loss, Bernoulli or
    Gilbert-Elliott, with its rate; each lap, the trace ending in an outage included, starts
    from the first lap's first step."""
    prof = traced(tmp_path, "down.mm", GAPPY, base)
    assert [(s.at, s.changes) for s in prof.timeline.steps] == [
        (0, {"forward": {"rate": R36}}),
        (F(1, 100), {"forward": {"outage": True}}),
        (F(2, 100), {"forward": {"rate": R24, "outage": False}}),
        (F(3, 100), {"forward": {"outage": True}})]
    assert prof.timeline.repeat == F(1, 25)
    assert prof.timeline.describe()[1:3] == ["     10 ms  forward outage (100% loss)",
                                             "     20 ms  forward rate 2.4 Mbit/s, outage ends"]
    c = compile_timeline(prof, HW)
    assert forward_states(c) == [(0, R36, loss, ge), (F(1, 100), R36, 1, None),
                                 (F(2, 100), R24, loss, ge), (F(3, 100), R24, 1, None)]
    # The loss registers the box stores: the outage's start sets those that differ to every
    # frame lost; its end, and each lap's start after the lap's last outage, put them back.
    ms = HW.f_clk // 1000
    fields = [FIELD[k] for k in LOSS_REGS]
    back = [(f, v) for f, v, o in zip(fields, regs, OUTAGE_REGS) if v != o]
    gone = [(f, o) for f, v, o in zip(fields, regs, OUTAGE_REGS) if v != o]
    assert [(o, f, v) for o, ch, f, v in c.entries if ch == 0 and f in fields] == \
        [(at * ms, f, v) for at, change in ((0, back), (10, gone), (20, back), (30, gone))
         for f, v in change]
    assert tuple(getattr(c.steps[0].regs["forward"], k) for k in LOSS_REGS) == regs
    # Two laps as the box applies the entries, and as the model commits them.
    lap = [profile_fields(s.regs["forward"]) for s in c.steps]
    assert replay(prof, c, 2) == lap + lap
    assert [tuple(getattr(cm.regs, k) for k in LOSS_REGS)
            for cm in c.commits(0, "forward", laps=2)] == [regs, OUTAGE_REGS] * 4


def test_an_outage_of_a_csv_trace_restores_its_own_loss_column(tmp_path):
    """A CSV trace's loss lies under its outages: the step that ends one puts back the trace's
    loss, a loss set during it applies from its end, and a trace ending in one starts its next
    lap from its first row."""
    prof = traced(tmp_path, "fade.csv", "time,rate,loss\n0,4 Mbit/s,1%\n0.1,0,\n0.2,2 Mbit/s,\n"
                  "0.3,0,\n0.35,,3%\n0.4,1 Mbit/s,\n0.5,0,\n", 'loss = "0.5%"\n')
    assert [s.changes["forward"] for s in prof.timeline.steps] == [
        {"rate": 4 * 10**6, "loss": F(1, 100)}, {"outage": True},
        {"rate": 2 * 10**6, "outage": False}, {"outage": True}, {"loss": F(3, 100)},
        {"rate": 10**6, "outage": False}, {"outage": True}]
    c = compile_timeline(prof, HW)
    mbit = 10**6
    assert [(at, rate, loss) for at, rate, loss, _ in forward_states(c)] == [
        (0, 4 * mbit, F(1, 100)), (F(1, 10), 4 * mbit, 1), (F(2, 10), 2 * mbit, F(1, 100)),
        (F(3, 10), 2 * mbit, 1), (F(7, 20), 2 * mbit, 1), (F(4, 10), mbit, F(3, 100)),
        (F(5, 10), mbit, 1)]
    # The loss set during the outage changes no register until the outage ends.
    assert not [e for e in c.entries if e[0] == c.steps[4].offset]
    lap = [profile_fields(s.regs["forward"]) for s in c.steps]
    assert replay(prof, c, 3) == lap * 3
    assert lap[0]["loss_p"] == LOSS_1 and lap[5]["loss_p"] == round(F(3, 100) * 2**32)


def test_a_trace_starting_in_an_outage_and_a_step_during_one(tmp_path):
    """A lap that starts in an outage starts each lap in one; a listed step's loss during an
    outage of the trace applies from the outage's end, and its other settings at once."""
    prof = traced(tmp_path, "late.csv", "time,rate\n0,0\n0.1,1 Mbit/s\n", 'loss = "1%"\n',
                  '[[timeline]]\nat = "50 ms"\nforward = { loss = "2%", delay = "20 ms" }\n')
    c = compile_timeline(prof, HW)
    assert [(at, rate, loss) for at, rate, loss, _ in forward_states(c)] == [
        (0, 10 * 10**6, 1), (F(1, 20), 10 * 10**6, 1), (F(1, 10), 10**6, F(2, 100))]
    assert [s.profiles["forward"].delay for s in c.steps] == [F(1, 100), F(1, 50), F(1, 50)]
    lap = [profile_fields(s.regs["forward"]) for s in c.steps]
    assert replay(prof, c, 2) == lap * 2
    assert lap[0]["loss_p"] == LOSS_ALL and lap[1]["loss_p"] == LOSS_ALL
    assert lap[2]["loss_p"] == round(F(2, 100) * 2**32)
