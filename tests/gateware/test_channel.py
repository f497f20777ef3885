# SPDX-License-Identifier: BSD-2-Clause
"""The channel RTL against the reference model, frame by frame and cycle by cycle."""

from collections import Counter

import pytest

from satemu.base.params import frame_words
from satemu.base.params import ChannelParams, Fate
from sim.run import run_scenario
from sim.soak import run_soak, soak_scenario, soak_traffic
from sim.channel.scenarios import all_scenarios, paced_frames

SCENARIOS = all_scenarios()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_channel_matches_model(name, scenario_pool):
    sc = SCENARIOS[name]
    summary = scenario_pool.result(name)
    assert summary["tests"] == 1
    assert not summary["errors"], "\n".join(summary["errors"][:20])
    assert summary["failed"] == 0, f"cocotb reported a failure, see {summary['log']}"
    assert summary["delivered"] > 0
    log = summary["frame_log"]          # the frame log, checked by the bench against the model
    assert log["count"] + log["lost"] > 0 and log["stale"] == 0
    if "log" in sc:                      # a small ring: it wrapped, and the newest records held
        assert log["wrapped"] and log["entries"] > 0
    if "expect_fates" in sc:             # ... and the boundaries it aims at
        assert summary["fates"] == sc["expect_fates"]
        assert summary["arrivals"] == [fr[0] for fr in sc["frames"]]
    if "expect_commit_cycle" in sc:      # the scenario really hit the cycles it aims at
        assert summary["commit_cycles"] == [sc["expect_commit_cycle"]]
        assert set(sc["expect_arrivals"]) <= set(summary["arrivals"])
    if "expect_commit_cycles" in sc:     # each commit named ahead took effect at its cycle
        assert summary["commit_cycles"] == sc["expect_commit_cycles"]
    if sc["params"]["mem_pace"]:         # the pace set the egress of frames after each cut
        assert paced_frames(sc, summary) > 40
    for key, check in sc.get("expect", {}).items():
        assert eval(check, {}, {"summary": summary}), f"{key}: {check}"



# The soak's first frames (sim/soak.py) through the RTL (about 10^6 cycles), built with the
# Colorlight's 32-bit statistics counters, each started two counts short of 2^32, the delay
# line's 32-bit word counts (admitted, written, read, freed) started 53,248 words short of it,
# and the timebase 500,000 cycles short of 2^48: the counters cross 2^32 at their second count;
# the word counts at frame 575 (of 73,000 words admitted), after which, for about 100 frames,
# the words in use straddle the wrap (admitted past it, freed not yet), where most of the
# prefix's memory-full drops fall; the 48-bit egress and departure cycles wrap at frame 391.
WRAP_FRAMES = 800
WRAP_PARAMS = ChannelParams(counter_bits=32, counter_init=(1 << 32) - 2,
                            word_init=(1 << 32) - 53_248, now_init=(1 << 48) - 500_000,
                            frame_log=True)


def straddling(frames: list, soak: dict, words: int) -> list[int]:
    """The frames that arrive with ``words`` words admitted before them but fewer freed: the
    memory check of each subtracts a count from before the wrap from one after it."""
    freed_at = sorted((e, frame_words(length)) for (_, length, _), e in
                      zip(frames, soak["egress"]) if e is not None)
    out, admitted, freed, k = [], 0, 0, 0
    for i, ((arrival, length, _), fate) in enumerate(zip(frames, soak["fates"])):
        while k < len(freed_at) and freed_at[k][0] < arrival:
            freed += freed_at[k][1]
            k += 1
        if admitted >= words > freed:
            out.append(i)
        admitted += frame_words(length) if fate == Fate.DELIVERED else 0
    return out


def test_soak_prefix_crosses_the_wraps(tmp_path):
    """The RTL equals the soak's own model run frame for frame (fate and egress cycle, from the
    same arrival cycles, shifted to the timebase's start), and its counters, word counts and
    48-bit times wrap on the way: each counter reads
    its count modulo 2^32 from the preset, conservation holds modulo 2^32, the gauges end at 0."""
    soak = run_soak(WRAP_FRAMES)
    frames = soak_traffic(WRAP_FRAMES)
    params = WRAP_PARAMS
    words = soak["words_admitted"]
    fates = Counter(soak["fates"])
    # (every cause but UNCLASSIFIED: without a terminal table a frame is no terminal's)
    assert all(fates[f] >= 2 for f in Fate if f is not Fate.UNCLASSIFIED), \
        "the prefix drops frames for every cause"
    across = straddling(frames, soak, (1 << 32) - params.word_init)
    assert len(across) > 50 and words > (1 << 32) - params.word_init   # the word counts cross
    assert sum(soak["fates"][i] == Fate.MEM for i in across) >= 10   # ... with the line full
    summary = run_scenario(soak_scenario(WRAP_FRAMES, params), tmp_path)
    assert summary["tests"] == 1
    assert not summary["errors"], "\n".join(summary["errors"][:20])
    assert summary["failed"] == 0, f"cocotb reported a failure, see {summary['log']}"
    t0 = params.now_init
    assert summary["arrivals"] == [t0 + a for a, _, _ in frames]
    assert summary["fates"] == soak["fates"]
    egress = [t0 + e for e in soak["egress"] if e is not None]
    assert summary["egress"] == egress
    assert egress[0] < 1 << 48 < egress[-1]                 # the 48-bit times wrap
    hw = summary["counters"]
    for name, count in soak["counters"].items():
        assert hw[name] == (params.counter_init + count) % (1 << 32), name
        if count:                                           # it crossed: it reads below its start
            assert hw[name] < params.counter_init, name
    # every admitted word once, and two words for each frame-log record
    assert summary["mem_writes"] == words + 2 * summary["frame_log"]["count"]
    for gauge in ("queue_frames_now", "queue_bytes_now", "mem_words_now"):
        assert hw[gauge] == 0, gauge
