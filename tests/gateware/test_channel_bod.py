# SPDX-License-Identifier: BSD-2-Clause
"""The BoD return channel's RTL against the reference model: every frame, every superframe."""

import pytest

from sim.channel.bod_scenarios import bod_scenarios
from sim.channel.scenarios import paced_frames

SCENARIOS = bod_scenarios()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_bod_matches_model(name, scenario_pool):
    sc = SCENARIOS[name]
    summary = scenario_pool.result(name)
    assert summary["tests"] == 1
    assert not summary["errors"], "\n".join(summary["errors"][:20])
    assert summary["failed"] == 0, f"cocotb reported a failure, see {summary['log']}"
    bod = summary["bod"]
    assert summary["delivered"] > 0 and bod["superframes"] > 0
    assert summary["frame_log"]["count"] > 0 and summary["frame_log"]["stale"] == 0
    for key, check in sc.get("expect", {}).items():
        assert eval(check, {}, {"bod": bod, "summary": summary}), f"{key}: {check}"
    if "expect_commit_cycles" in sc:     # each step named ahead took effect at its cycle
        assert summary["commit_cycles"] == sc["expect_commit_cycles"]
    if sc["params"]["mem_pace"]:         # the pace set the egress of frames sharing a slot
        assert paced_frames(sc, summary) > 40
