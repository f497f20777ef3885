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
