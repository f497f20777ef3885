# SPDX-License-Identifier: BSD-2-Clause
"""The channel RTL against the reference model, frame by frame and cycle by cycle."""

import pytest

from sim.run import run_scenario
from scenarios import all_scenarios

SCENARIOS = all_scenarios()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_channel_matches_model(name, tmp_path):
    sc = SCENARIOS[name]
    summary = run_scenario(sc, tmp_path)
    assert summary["tests"] == 1
    assert not summary["errors"], "\n".join(summary["errors"][:20])
    assert summary["failed"] == 0, f"cocotb reported a failure, see {summary['log']}"
    assert summary["delivered"] > 0
    if "expect_fates" in sc:             # ... and the boundaries it aims at
        assert summary["fates"] == sc["expect_fates"]
        assert summary["arrivals"] == [fr[0] for fr in sc["frames"]]
    if "expect_commit_cycle" in sc:      # the scenario really hit the cycles it aims at
        assert summary["commit_cycles"] == [sc["expect_commit_cycle"]]
        assert set(sc["expect_arrivals"]) <= set(summary["arrivals"])
