# SPDX-License-Identifier: BSD-2-Clause
"""A timeline on the simulated board: loaded with the CLI over the UART, run by the firmware
at the cycles it names, with frames on both ports crossing every step, each frame's fate and
egress cycle and every counter equal to the reference model's."""

import random

from satemu.boards import BOARDS, DEFAULT_BOARD
from satemu.channel_model import simulate
from satemu.cli import main
from satemu.device import Device
from satemu.params import ChannelRegs, Fate
from satemu.profile import load_profile
from satemu.protocol import CHANNEL_NAMES, TimelineRun
from satemu.timeline import compile_timeline
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


def test_a_timeline_runs_at_its_cycles_as_the_model_says(url, board_state, capsys, tmp_path):
    path = tmp_path / "steps.toml"
    path.write_text(PROFILE)
    board = BOARDS[DEFAULT_BOARD]
    compiled = compile_timeline(load_profile(str(path)), board.hardware)
    f_clk = board.f_clk

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
    rng = random.Random(19)
    end = start + compiled.steps[-1].offset + f_clk * 30 // 1000
    with EthPorts(board_state["eth_port"], timeout=300) as eth:
        now = eth.hold()
        assert now < start - f_clk // 20, f"the load left only {start - now} cycles"
        first = max(now + 20_000, start - f_clk * 20 // 1000)
        sent = {}
        for ch, bps in ((FORWARD, 8_000_000), (RETURN, 3_000_000)):
            sent[ch] = []
            at = first
            while at < end:
                length = rng.choice([60, 1518, rng.randint(61, 1517)])
                frame = bytes(rng.randrange(256) for _ in range(length))
                sent[ch].append(frame)
                eth.send(INGRESS_PORT[ch], to_wire(frame), at)
                at += max(wire_cycles(length + 24), length * 8 * f_clk // bps)
        eth.release()
        traffic = eth.wait({ch: len(frames) for ch, frames in sent.items()}, {}, 300)
        models = {}
        for ch, frames in sent.items():
            assert [kind for _, kind in traffic.events[ch]] == ["A"] * len(frames)
            models[ch] = simulate(zip(traffic.arrivals(ch), map(len, frames),
                                      [False] * len(frames)), regs[ch],
                                  board.channel_params(ch),
                                  commits=compiled.commits(start, CHANNEL_NAMES[ch]))
        eth.wait({}, {ch: sum(r.fate == Fate.DELIVERED for r in models[ch].frames)
                      for ch in sent}, 300)
    expected = expected_egress({ch: [(f, False) for f in frames] for ch, frames in sent.items()},
                               models, {ch: list(range(len(frames)))
                                        for ch, frames in sent.items()})
    for ch in (FORWARD, RETURN):
        assert observed_egress(traffic, ch) == expected[ch], CHANNEL_NAMES[ch]
        assert [int(f) for f in models[ch].fates()] == traffic.fates[ch]
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
