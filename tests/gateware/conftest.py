# SPDX-License-Identifier: BSD-2-Clause
"""The gateware tests import their helpers from this folder; ``scenario_pool`` runs the
scenarios a module's tests check in the background, two at a time (sim.run.ScenarioPool)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="module")
def scenario_pool(request, tmp_path_factory):
    """The module's ``SCENARIOS`` that its selected tests name (their ``name`` parameter), all
    started at the first test that asks; each test then waits for its own."""
    from sim.run import ScenarioPool
    names = [item.callspec.params["name"] for item in request.session.items
             if getattr(item, "module", None) is request.module
             and "name" in getattr(getattr(item, "callspec", None), "params", {})]
    pool = ScenarioPool({n: request.module.SCENARIOS[n] for n in names},
                        tmp_path_factory.mktemp(request.module.__name__))
    yield pool
    pool.close()
