# SPDX-License-Identifier: BSD-2-Clause
"""Timelines on the host: the profile format, every step checked against the board with errors
that name the step, the entries the box stores, traces merged in, the model's commits, and
``satemu show``'s listing and plot."""

from dataclasses import replace
from fractions import Fraction

import pytest

from satemu.base.boards import BOARDS
from satemu.model.channel import simulate
from satemu.cli import main
from satemu.base.params import Fate
from satemu.link.profile import ProfileError, builtin_profiles, parse_profile
from satemu.base.protocol import PROFILE_FIELDS
from satemu.link.timeline import compile_timeline

HW = BOARDS["sim"].hardware
F = HW.f_clk
FIELD = {f.name: i for i, f in enumerate(PROFILE_FIELDS)}

BASE = """
name = "t"
[forward]
rate = "10 Mbit/s"
delay = "100 ms"
queue = "100 packets"
[return]
rate = "2 Mbit/s"
delay = "100 ms"
queue = "50 packets"
"""


def profile(steps: str, extra: str = "", base_dir=None):
    return parse_profile(extra + BASE + steps, "t", base_dir=base_dir)


def test_steps_become_entries_at_their_cycles():
    p = profile("""
[[timeline]]
at = "1 s"
forward = { delay = "50 ms", loss = "1%" }
[[timeline]]
at = "2.5 s"
return = { queue = ["10 packets", "8 KB"] }
""")
    c = compile_timeline(p, HW)
    assert [s.offset for s in c.steps] == [F, F * 5 // 2] and c.period == 0
    r0 = p.check(HW)
    assert c.entries == (
        (F, 0, FIELD["loss_mode"], 1), (F, 0, FIELD["loss_p"], 42949673),
        (F, 0, FIELD["delay"], F // 20),
        (F * 5 // 2, 1, FIELD["queue_frames"], 10), (F * 5 // 2, 1, FIELD["queue_bytes"], 8000))
    # A step changes what it names; the rest stays as the steps before it left it.
    assert c.steps[1].regs["forward"] == replace(r0["forward"], delay=F // 20, loss_mode=1,
                                                 loss_p=42949673)
    assert c.steps[1].regs["return"] == replace(r0["return"], queue_frames=10, queue_bytes=8000)


def test_a_repeating_timeline_returns_to_its_first_step_each_lap():
    p = profile("""
[[timeline]]
at = "0 s"
forward = { rate = "5 Mbit/s" }
[[timeline]]
at = "1 s"
forward = { rate = "10 Mbit/s" }
return = { delay = "20 ms" }
""", 'timeline_repeat = "3 s"\n')
    c = compile_timeline(p, HW)
    assert c.period == 3 * F
    # The first step also puts back the return delay the last one changed.
    first = [e for e in c.entries if e[0] == 0]
    assert (0, 1, FIELD["delay"], F // 10) in first
    assert [cm.cycle for cm in c.commits(1000, "forward", laps=2)] == [1000, 1000 + F,
                                                                        1000 + 3 * F,
                                                                        1000 + 4 * F]


def test_the_model_applies_each_step_at_its_cycle():
    """Frames 100 cycles apart against a rate step: before the step's cycle the 10 Mbit/s
    spacing, after it the 2 Mbit/s one, exactly."""
    p = profile("""
[[timeline]]
at = "0.01 s"
forward = { rate = "2 Mbit/s" }
""")
    c = compile_timeline(p, HW)
    regs = p.check(HW)["forward"]
    start = 50_000
    step = start + c.steps[0].offset
    frames = [(a, 100, False) for a in range(step - 2000, step + 2000, 1000)]
    out = simulate(frames, regs, HW.channel_params("forward"),
                   commits=c.commits(start, "forward"))
    per_byte = {a: (8 * F // 10_000_000 if a <= step else 8 * F // 2_000_000) for a, _, _ in frames}
    departures = [r.departure for r in out.frames]
    assert all(r.fate == Fate.DELIVERED for r in out.frames)
    for (a, n, _), d, prev in zip(frames, departures, [None] + departures[:-1]):
        begin = a if prev is None else max(a, prev)
        assert d == begin + n * per_byte[a]


@pytest.mark.parametrize("steps, extra, message", [
    ('[[timeline]]\nat = "2 s"\nforward = { delay = "1 ms" }\n'
     '[[timeline]]\nat = "1 s"\nforward = { delay = "2 ms" }\n', "",
     "timeline[1].at: 1 s is not after the step before it (2 s)"),
    ('[[timeline]]\nat = "1 s"\nforward = { delay = "1 ms" }\n'
     '[[timeline]]\nat = "1 s"\nforward = { delay = "2 ms" }\n', "",
     "timeline[1].at: 1 s is not after the step before it (1 s)"),
    ('[[timeline]]\nat = "1 s"\nforward = { seed = 3 }\n', "",
     "timeline[0].forward.seed: unknown setting"),
    ('[[timeline]]\nat = "1 s"\nforward = { loss = "1%", gilbert_elliott = '
     '{ p = 0.1, r = 0.1, loss_good = 0, loss_bad = 1 } }\n', "",
     "timeline[0].forward.loss: give either loss or gilbert_elliott"),
    ('[[timeline]]\nforward = { delay = "1 ms" }\n', "", "timeline[0].at: missing"),
    ('[[timeline]]\nat = "1 s"\n', "", "timeline[0]: changes nothing"),
    ('[[timeline]]\nat = "1 s"\nforward = { delay = "1 ms" }\n', 'timeline_repeat = "1 s"\n',
     "timeline_repeat: 1 s is not after the last step"),
    ('[[timeline]]\nat = "1 s"\nforward = { delay = "sometime" }\n', "",
     "timeline[0].forward.delay:"),
    ("", 'timeline_repeat = "5 s"\n', "timeline_repeat: there is no timeline to repeat"),
])
def test_bad_timelines_get_one_line_errors(steps, extra, message):
    with pytest.raises(ProfileError) as e:
        profile(steps, extra)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("steps, message", [
    # Beyond the delay line's budget at this rate: the step, the channel's key, the figures.
    ('[[timeline]]\nat = "3 s"\nforward = { rate = "300 Mbit/s", delay = "2 s", '
     'queue = "1000 packets" }\n', "timeline[0] (at 3 s): forward: delay x rate needs"),
    ('[[timeline]]\nat = "3 s"\nreturn = { queue = "70000 packets" }\n',
     "timeline[0] (at 3 s): return.queue: 70000 packets is outside the allowed range"),
    ('[[timeline]]\nat = "1 s"\nforward = { rate = "1 Mbit/s" }\n'
     '[[timeline]]\nat = "1.00000001 s"\nforward = { rate = "2 Mbit/s" }\n',
     "timeline[1] (at 1 s): falls on the same cycle as the step before it"),
])
def test_steps_beyond_the_board_are_refused_naming_the_step(steps, message):
    with pytest.raises(ProfileError) as e:
        compile_timeline(profile(steps), HW)
    assert message in str(e.value), str(e.value)


BOD_BASE = """
name = "t"
[forward]
rate = "10 Mbit/s"
delay = "100 ms"
[return]
delay = "100 ms"
queue = "50 packets"
[return.bod]
superframe = "10 ms"
slots = 40
slot_bytes = 100
latency = 8
cra = "64 kbit/s"
rbdc_max = "1.6 Mbit/s"
background = 0.3
"""


def test_bod_steps_become_entries_and_the_model_takes_them_at_superframes():
    """A step's BoD settings are timeline entries like any other field's; the model applies them
    from the first superframe after the step, keeping the requests in flight."""
    p = parse_profile(BOD_BASE + """
[[timeline]]
at = "0.5 s"
return = { delay = "50 ms", bod = { cra = "200 kbit/s", slot_bytes = 60, slots = 50, superframe = "15 ms", background = 0.1 } }
""", "t")
    c = compile_timeline(p, HW)
    fields = {PROFILE_FIELDS[e[2]].name for e in c.entries}
    assert {"bod_cra", "bod_slot_bytes", "bod_slots", "bod_slot_cycles", "bod_bg0",
            "delay"} <= fields
    assert "BoD slot_bytes 60, BoD cra 200 kbit/s, BoD background 10%" in p.timeline.describe()[0]
    regs = p.check(HW)["return"]
    params = HW.channel_params("return")
    start = 1_000
    step = start + c.steps[0].offset
    frames = [(a, 600, False) for a in range(2_000, step + F, F // 200)]
    out = simulate(frames, regs, params, bod_start=start, commits=c.commits(start, "return"))
    sf0, sf1 = 40 * regs.bod_slot_cycles, 50 * c.steps[0].regs["return"].bod_slot_cycles
    starts = [start]
    for r in out.bod[1:]:
        starts.append(starts[-1] + (sf0 if starts[-1] <= step else sf1))
    first_after = next(k for k, t in enumerate(starts) if t > step)
    assert {r.bg for r in out.bod[:first_after]} == {12}
    assert {r.bg for r in out.bod[first_after:]} == {5}
    assert all(r.fate == Fate.DELIVERED and r.egress is not None for r in out.frames)


@pytest.mark.parametrize("step, message", [
    ('return = { bod = { latency = 4 } }', "timeline[0].return.bod.latency: a step cannot "
     "change it; it restarts the BoD block"),
    ('return = { bod = { fca = true } }', "timeline[0].return.bod.fca: a step cannot change it"),
    ('return = { bod = { background = [{ level = 0.1, duration = "1 s" }] } }',
     "timeline[0].return.bod.background: a step sets a constant share"),
    ('return = { bod = { cra = "lots" } }', "timeline[0].return.bod.cra:"),
    ('return = { bod = {} }', "timeline[0].return.bod: changes nothing"),
])
def test_bad_bod_steps_get_one_line_errors(step, message):
    with pytest.raises(ProfileError) as e:
        parse_profile(BOD_BASE + f'[[timeline]]\nat = "1 s"\n{step}\n', "t")
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("base, step, message", [
    (BOD_BASE, 'return = { overhead = "20 B" }', "timeline[0] (at 1 s): return.overhead: a BoD "
     "channel's overhead is fixed"),
    (BASE, 'return = { bod = { cra = "1 Mbit/s" } }', "timeline[0] (at 1 s): return.bod: the "
     "return channel has no Bandwidth-on-Demand settings"),
    (BOD_BASE, 'return = { bod = { slots = 2000 } }',
     "timeline[0] (at 1 s): return.bod.superframe: 10 ms is outside the allowed range"),
    (BOD_BASE.replace("background = 0.3", 'background = [{ level = 0.1, duration = "1 s" }, '
                      '{ level = 0.2, duration = "1 s" }]'),
     'return = { bod = { background = 0.5 } }', "the profile's background is a schedule"),
])
def test_bod_steps_beyond_the_board_are_refused(base, step, message):
    with pytest.raises(ProfileError) as e:
        compile_timeline(parse_profile(base + f'[[timeline]]\nat = "1 s"\n{step}\n', "t"), HW)
    assert message in str(e.value), str(e.value)


def test_a_timeline_too_long_for_the_board():
    steps = "".join(f'[[timeline]]\nat = "{i} s"\nforward = {{ delay = "{10 + i % 2} ms" }}\n'
                    for i in range(1, 12))
    with pytest.raises(ProfileError) as e:
        compile_timeline(profile(steps), replace(HW, timeline_entries=10))
    assert str(e.value) == "timeline: needs 11 entries, the box holds 10"
    with pytest.raises(ProfileError, match="runs no timelines"):
        compile_timeline(profile(steps), replace(HW, timeline_entries=0))


def test_traces_merge_into_the_timeline(tmp_path):
    # Mahimahi: 100 ms windows of 5 (300 is the next loop's 0), 0 (an outage) and 2
    # opportunities, looping at 300 ms.
    (tmp_path / "down.mm").write_text("".join(f"{t}\n" for t in
                                              (0, 10, 20, 30, 210, 250, 300)))
    (tmp_path / "up.csv").write_text("time,delay,loss\n0,20 ms,0\n0.1,30 ms,\n0.2,20 ms,1%\n")
    text = (BASE.replace('[forward]', '[forward]\ntrace = "down.mm"\ntrace_resolution = "100 ms"')
            .replace('[return]', '[return]\ntrace = "up.csv"'))
    p = parse_profile(text, "t", base_dir=tmp_path)
    t = p.timeline
    assert t.repeat == Fraction(3, 10)
    assert [s.at for s in t.steps] == [0, Fraction(1, 10), Fraction(2, 10)]
    assert t.steps[0].changes == {"forward": {"rate": Fraction(600_000)},
                                  "return": {"delay": Fraction(1, 50), "loss": 0}}
    # The empty window is an outage: every frame lost, the rate left as it was, until the next
    # window's rate ends it.
    assert t.steps[1].changes == {"forward": {"outage": True},
                                  "return": {"delay": Fraction(3, 100)}}
    assert t.steps[2].changes == {"forward": {"rate": Fraction(240_000), "outage": False},
                                  "return": {"delay": Fraction(1, 50), "loss": Fraction(1, 100)}}
    c = compile_timeline(p, HW)
    assert c.steps[1].regs["forward"].loss_p == (1 << 32) - 1
    assert c.steps[1].regs["forward"].rate_q == c.steps[0].regs["forward"].rate_q
    assert c.steps[2].regs["forward"].loss_p == c.steps[0].regs["forward"].loss_p == 0
    with pytest.raises(ProfileError, match=r"forward.trace: .*down2.mm"):
        parse_profile(BASE.replace('[forward]', '[forward]\ntrace = "down2.mm"\n'
                                   'trace_resolution = "100 ms"'), "t", base_dir=tmp_path)


def test_show_lists_and_plots_a_timeline(tmp_path, capsys):
    path = tmp_path / "t.toml"
    path.write_text(BASE + '[[timeline]]\nat = "1 s"\nforward = { rate = "5 Mbit/s" }\n')
    png = tmp_path / "t.png"
    assert main(["show", str(path), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert f"timelines: up to {HW.timeline_entries} entries" in out
    assert "timeline: 1 steps, 1 of the board's" in out and "forward rate 5 Mbit/s" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_builtin_timelines_fit_every_board_that_runs_them():
    timed = {name: p for name, p in builtin_profiles().items() if p.timeline is not None}
    assert {"leo-starlink", "geo-rainfade", "geo-rainfade-bod", "geo-outage",
            "geo-outage-bod"} <= set(timed)
    refused = set()
    for name, p in timed.items():
        assert p.source, name
        for board in BOARDS.values():
            hw = board.hardware
            try:
                c = compile_timeline(p, hw)
            except ProfileError as e:
                refused.add((name, board.name, str(e).split(":")[0]))
                continue
            assert 0 < len(c.entries) <= hw.timeline_entries, (name, board.name)
    # The Colorlight: its 2 MiB delay lines and its DRAM's throughput refuse geo-rainfade's
    # clear sky (50 Mbit/s x 300 ms) at all (its twin's too) and leo-starlink's first interval
    # (140 Mbit/s: 4480 words per 65536 cycles against the 4369 of its pace); it has no BoD
    # block. Every other board runs every timeline, the
    # BoD steps of geo-rainfade-bod included.
    assert refused == {("geo-rainfade", "colorlight-5a-75b", "forward"),
                       ("geo-rainfade-bod", "colorlight-5a-75b", "forward"),
                       ("leo-starlink", "colorlight-5a-75b", "forward"),
                       ("geo-outage-bod", "colorlight-5a-75b", "return.bod")}


def test_a_model_transfer_across_a_timeline_plots_it(tmp_path):
    """The model engine starts the timeline with the transfer; result.json carries it and
    link_timeline.png lays it over the transfer."""
    import json
    from satemu.quic.engine import run_model_transfer
    from satemu.report.files import write_transfer
    path = tmp_path / "t.toml"
    path.write_text(BASE.replace('"100 ms"', '"5 ms"')
                    + '[[timeline]]\nat = "30 ms"\nforward = { rate = "5 Mbit/s" }\n')
    t = run_model_transfer(str(path), 60_000, seed=1, max_seconds=10)
    assert t.completed
    write_transfer(t, tmp_path / "run")
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    steps = result["timeline"]["steps"]
    assert [s["at_s"] for s in steps] == [0.0, 0.03]
    assert steps[1]["forward"]["rate_bps"] == 5e6
    assert (tmp_path / "run" / "link_timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
