# SPDX-License-Identifier: BSD-2-Clause
"""The channel's RTL with terminals against the reference model (docs/bod.md, "Terminals"):
every frame's fate and egress cycle, every terminal's counters, every record of every terminal
a superframe, the frame log; several terminals and synthetic ones on one oversubscribed pool,
frames of no terminal, a step changing a terminal's settings, the forward channel's
accounting."""

import pytest

from sim.channel.term_scenarios import term_scenarios

SCENARIOS = term_scenarios()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_terminals_match_model(name, scenario_pool):
    sc = SCENARIOS[name]
    summary = scenario_pool.result(name)
    assert summary["tests"] == 1
    assert not summary["errors"], "\n".join(summary["errors"][:20])
    assert summary["failed"] == 0, f"cocotb reported a failure, see {summary['log']}"
    assert summary["delivered"] > 0 and summary["frame_log"]["stale"] == 0
    bod = summary.get("bod")
    for key, check in sc.get("expect", {}).items():
        assert eval(check, {"bod": bod, "summary": summary}), f"{key}: {check}"
    if "expect_commit_cycles" in sc:
        assert summary["commit_cycles"] == sc["expect_commit_cycles"]
