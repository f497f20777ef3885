# SPDX-License-Identifier: BSD-2-Clause
"""A timeline on the simulated board: loaded with the CLI over the UART, run by the firmware
at the cycles it names, with frames on both ports crossing every step, each frame's fate and
egress cycle and every counter equal to the reference model's."""

import csv
import random

from satemu.base.boards import BOARDS, DEFAULT_BOARD
from satemu.box.bod_trace import superframe_at, superframe_segments
from satemu.model.channel import simulate
from satemu.cli import main
from satemu.box.device import Device
from satemu.base.params import ChannelRegs, Fate
from satemu.link.profile import load_profile
from satemu.base.protocol import CHANNEL_NAMES, TIMELINE_AHEAD_MAX_S, TimelineRun
from satemu.link.timeline import compile_timeline
from sim.frames import (EthPorts, FORWARD, INGRESS_PORT, RETURN, expected_egress,
                        observed_egress, to_wire, wire_cycles)

# Rate down with a queue cut, delay up and down (a 25 ms cut: the frames of the cut leave back
# to back, in order), loss on and off, on both channels.
PROFILE = """
name = "steps"
[forward]
rate = "20 Mbit/s"
delay = "20 ms"
queue = "100 packets"
[return]
rate = "5 Mbit/s"
delay = "20 ms"
queue = "40 packets"

[[timeline]]
at = "0 s"
forward = { delay = "30 ms" }
return = { loss = "10%" }
[[timeline]]
at = "40 ms"
forward = { rate = "5 Mbit/s", queue = "12 packets" }
[[timeline]]
at = "80 ms"
forward = { delay = "5 ms" }
return = { delay = "35 ms" }
[[timeline]]
at = "120 ms"
forward = { rate = "20 Mbit/s" }
return = { loss = "0%" }
"""


def _stats_line(capsys, url) -> str:
    capsys.readouterr()
    assert main(["stats", "--port", url]) == 0
    return next(line for line in capsys.readouterr().out.splitlines() if "timeline:" in line)


def _frames_across(board_state, compiled, start, regs, rng, bps, longest, tail_ms,
                   bod_start=0):
    """Frames on both ports at about ``bps`` per channel, from 20 ms before the timeline's
    first step to ``tail_ms`` past its last; every frame's egress and fate checked against the
    model run across the steps. Returns what the board reported and the models."""
    board = BOARDS[DEFAULT_BOARD]
    f_clk = board.f_clk
    end = start + compiled.steps[-1].offset + f_clk * tail_ms // 1000
    with EthPorts(board_state["eth_port"], timeout=300) as eth:
        now = eth.hold()
        assert now < start - f_clk // 20, f"the load left only {start - now} cycles"
        first = max(now + 20_000, start - f_clk * 20 // 1000)
        sent = {}
        for ch, rate in bps.items():
            sent[ch] = []
            at = first
            while at < end:
                length = rng.choice([60, longest, rng.randint(61, 1517)])
                sent[ch].append(bytes(rng.randrange(256) for _ in range(length)))
                eth.send(INGRESS_PORT[ch], to_wire(sent[ch][-1]), at)
                at += max(wire_cycles(length + 24), length * 8 * f_clk // rate)
        eth.release()
        traffic = eth.wait({ch: len(frames) for ch, frames in sent.items()}, {}, 300)
        models = {}
        for ch, frames in sent.items():
            assert [kind for _, kind in traffic.events[ch]] == ["A"] * len(frames)
            models[ch] = simulate(zip(traffic.arrivals(ch), map(len, frames),
                                      [False] * len(frames)), regs[ch],
                                  board.channel_params(ch), bod_start=bod_start,
                                  commits=compiled.commits(start, CHANNEL_NAMES[ch]))
        eth.wait({}, {ch: sum(r.fate == Fate.DELIVERED for r in models[ch].frames)
                      for ch in sent}, 300)
    expected = expected_egress({ch: [(f, False) for f in frames] for ch, frames in sent.items()},
                               models, {ch: list(range(len(frames)))
                                        for ch, frames in sent.items()})
    for ch in sent:
        assert observed_egress(traffic, ch) == expected[ch], CHANNEL_NAMES[ch]
        assert [int(f) for f in models[ch].fates()] == traffic.fates[ch]
    return traffic, models


def test_a_timeline_runs_at_its_cycles_as_the_model_says(url, board_state, capsys, tmp_path):
    path = tmp_path / "steps.toml"
    path.write_text(PROFILE)
    board = BOARDS[DEFAULT_BOARD]
    compiled = compile_timeline(load_profile(str(path)), board.hardware)

    capsys.readouterr()
    assert main(["load", str(path), "--port", url, "--reseed", "--start-in", "0.6"]) == 0
    out = capsys.readouterr().out
    assert "timeline: 4 steps" in out, out
    with Device(url) as dev:
        dev.hello()
        state = dev.timeline_status()
        start = state["start"]
        assert state["state"] == TimelineRun.RUNNING and state["applied"] == 0, state
        assert state["entries"] == len(compiled.entries) and state["period"] == 0
        regs = {ch: ChannelRegs(**dev.get_profile(ch), mem_size=dev.info["mem_words"])
                for ch in (FORWARD, RETURN)}
        dev.reset_stats()

    # Frames from before the first step to past the last: forward about 8 Mbit/s (above the
    # 5 Mbit/s step: its queue overflows), return about 3 Mbit/s.
    traffic, models = _frames_across(board_state, compiled, start, regs, random.Random(19),
                                     {FORWARD: 8_000_000, RETURN: 3_000_000}, 1518, 30)
    # Every step mattered: queue drops after the rate step, loss while it was on, and frames
    # arriving on both sides of each step.
    assert int(Fate.QUEUE) in models[FORWARD].fates()
    assert int(Fate.LOSS) in models[RETURN].fates()
    for _, step in compiled.cycles(start):
        cycle = start + step.offset
        for ch in (FORWARD, RETURN):
            arrivals = traffic.arrivals(ch)
            assert min(arrivals) < cycle < max(arrivals)

    with Device(url) as dev:
        state = dev.timeline_status()
        for ch in (FORWARD, RETURN):
            stats = dev.get_stats(ch)
            for key, want in models[ch].counters.items():
                assert stats[key] == want, (CHANNEL_NAMES[ch], key)
        assert stats["late"] == 0
    assert state["state"] == TimelineRun.DONE and state["applied"] == len(compiled.steps)
    assert state["late"] == 0, "a step was committed after its cycle"
    assert state["in_force_cycle"] == start + compiled.steps[-1].offset
    line = _stats_line(capsys, url)
    assert "done, 4 steps taken" in line and "none late" in line, line


def test_a_load_stops_a_running_timeline(url, tmp_path, capsys):
    """`satemu load` of another profile while a timeline runs stops it, waits for the step it
    had committed, and loads: nothing is refused, and no further step is committed."""
    path = tmp_path / "steps.toml"
    path.write_text(PROFILE)
    assert main(["load", str(path), "--port", url, "--start-in", "0.05"]) == 0
    with Device(url) as dev:
        assert dev.timeline_status()["state"] == TimelineRun.RUNNING
    assert main(["load", "short-asym", "--port", url]) == 0
    with Device(url) as dev:
        state = dev.timeline_status()
        assert state["state"] == TimelineRun.IDLE and state["applied"] < 4, state
        want = load_profile("short-asym").check(dev.hardware())["forward"]
        assert dev.get_profile(FORWARD)["delay"] == want.delay


def test_a_timeline_an_hour_ahead_leaves_the_box_free(url, tmp_path, capsys):
    """A timeline started an hour of box time ahead holds its steps in the firmware, none in
    the gateware: the next load stops it and is taken at once, with none of its steps taken. A
    start more than a day ahead is refused in one line, and nothing runs."""
    path = tmp_path / "steps.toml"
    path.write_text(PROFILE)
    assert main(["load", str(path), "--port", url, "--start-in", "3600"]) == 0
    with Device(url) as dev:
        state = dev.timeline_status()
        assert state["state"] == TimelineRun.RUNNING and state["applied"] == 0, state
        assert dev.get_stats(FORWARD)["snapshot_cycle"] < state["start"]
    assert main(["load", "short-asym", "--port", url]) == 0
    with Device(url) as dev:
        state = dev.timeline_status()
        assert state["state"] == TimelineRun.IDLE and state["applied"] == 0, state
        want = load_profile("short-asym").check(dev.hardware())
        for ch, name in enumerate(CHANNEL_NAMES):
            assert dev.get_profile(ch)["delay"] == want[name].delay
        day = TIMELINE_AHEAD_MAX_S * dev.hello()["f_clk"]
        start = dev.get_stats(FORWARD)["snapshot_cycle"] + day + 10**9
    capsys.readouterr()
    assert main(["load", str(path), "--port", url, "--start-cycle", str(start)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "more than the box takes (86400 s); nothing was loaded" in err[0], err
    with Device(url) as dev:
        assert dev.timeline_status()["state"] == TimelineRun.IDLE
        assert dev.get_profile(FORWARD)["delay"] == want["forward"].delay


def test_a_load_cut_short_leaves_the_old_profile(url, tmp_path):
    """A host that dies after arming a timeline with its load and before the COMMIT (what
    `satemu load` sends last) leaves the profile that was in force, with no timeline run;
    the next load disarms what it left."""
    from satemu.base.protocol import Op, TIMELINE_START_REQUEST
    assert main(["load", "short-asym", "--port", url]) == 0
    path = tmp_path / "steps.toml"
    path.write_text(PROFILE)
    with Device(url) as dev:
        dev.hello()
        before = dev.get_profile(FORWARD)
        p = load_profile(str(path))
        regs = p.check(dev.hardware())
        compiled = compile_timeline(p, dev.hardware(), regs)
        dev.store_timeline(compiled.entries)
        dev.set_profile(FORWARD, regs["forward"], 0x1234)
        dev.set_profile(RETURN, regs["return"], 0x1234)
        dev.call(Op.TIMELINE_START, TIMELINE_START_REQUEST.pack(
            len(compiled.entries), dev.now() + 10**6, compiled.period))
    with Device(url) as dev:            # the host that armed it is gone
        assert dev.get_profile(FORWARD) == before
        assert dev.timeline_status()["state"] == TimelineRun.ARMED
    assert main(["load", "short-asym", "--port", url]) == 0
    with Device(url) as dev:
        assert dev.timeline_status()["state"] == TimelineRun.IDLE
        assert dev.get_profile(FORWARD) == before


# A BoD return link whose steps change its grants and background, then the superframe's shape
# with a delay rise, then RBDC's cap and the request period with a delay cut and loss.
BOD_PROFILE = """
name = "bod-steps"
[forward]
rate = "10 Mbit/s"
delay = "10 ms"
[return]
delay = "12 ms"
queue = "150 packets"
[return.bod]
superframe = "4 ms"
slots = 24
slot_bytes = 150
cra = "150 kbit/s"
rbdc_max = "2.4 Mbit/s"
rbdc_timeout = 5
vbdc_max = "6 KB"
latency = 3
background = 0.2

[[timeline]]
at = "0 s"
return = { bod = { cra = "300 kbit/s", background = 0.5 } }
[[timeline]]
at = "60 ms"
return = { delay = "25 ms", bod = { superframe = "6 ms", slots = 25, slot_bytes = 120, background = 0.4 } }
[[timeline]]
at = "120 ms"
return = { delay = "5 ms", loss = "5%", bod = { rbdc_max = "1 Mbit/s", request_period = 2 } }
"""


def test_bod_steps_run_at_their_superframes_as_the_model_says(url, board_state, capsys,
                                                              tmp_path):
    """A timeline with BoD steps, loaded with the CLI: the block takes each step's settings at
    its first superframe after the step, keeping its requests in flight; every frame's egress
    cycle and every superframe's record (read over the UART) equal the model's."""
    path = tmp_path / "bod-steps.toml"
    path.write_text(BOD_PROFILE)
    board = BOARDS[DEFAULT_BOARD]
    compiled = compile_timeline(load_profile(str(path)), board.hardware)
    assert main(["load", str(path), "--port", url, "--reseed", "--start-in", "0.4"]) == 0
    with Device(url) as dev:
        dev.hello()
        start = dev.timeline_status()["start"]
        bod_start = dev.bod_trace(max_records=0).start
        regs = {ch: ChannelRegs(**dev.get_profile(ch), mem_size=dev.info["mem_words"])
                for ch in (FORWARD, RETURN)}
        dev.reset_stats()

    traffic, models = _frames_across(board_state, compiled, start, regs, random.Random(23),
                                     {FORWARD: 4_000_000, RETURN: 1_500_000}, 1200, 40,
                                     bod_start=bod_start)
    with Device(url) as dev:
        trace = dev.bod_trace()
        state = dev.timeline_status()
        stats = dev.get_stats(RETURN)
        dev.reset_stats()
    assert state["state"] == TimelineRun.DONE and state["late"] == 0
    assert stats["late"] == 0
    for key, want in models[RETURN].counters.items():
        assert stats[key] == want, key
    # Every superframe the box recorded, across all three steps, equals the model's.
    recorded = models[RETURN].bod
    n = min(len(trace.records), len(recorded))
    last_step = start + compiled.steps[-1].offset
    sf_after = 25 * compiled.steps[1].regs["return"].bod_slot_cycles
    assert not trace.lost and trace.start == bod_start
    # (at least the superframes before the last step at the longest superframe, and 3 after)
    assert n >= (last_step - bod_start) // sf_after + 3
    assert trace.records[:n] == recorded[:n]
    # Each step's background: 20% of 24 slots, then 50% of 24, then 40% of 25.
    assert {5, 12, 10} <= {r.bg for r in recorded[:n]}
    assert int(Fate.LOSS) in models[RETURN].fates()
    # `satemu bod-trace --profile` gives each superframe its own start and slot bytes.
    out = tmp_path / "trace.csv"
    assert main(["bod-trace", "--port", url, "--out", str(out), "--profile", str(path)]) == 0
    with out.open() as f:
        rows = {int(r["sf"]): r for r in csv.DictReader(f)}
    segments = superframe_segments(regs[RETURN], bod_start,
                                   compiled.commits(start, "return"), n)
    first = regs[RETURN]
    assert [s[2:] for s in segments] == [(first.bod_slots * first.bod_slot_cycles, 150),
                                         (sf_after, 120)]
    for k in range(n):
        offset, cycles, nbytes = superframe_at(segments, k)
        assert int(rows[k]["cycle"]) == bod_start + offset
        assert int(rows[k]["vbdc_req_bytes"]) == recorded[k].vbdc_req * nbytes
