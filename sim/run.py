# SPDX-License-Identifier: BSD-2-Clause
"""Run channel scenarios in the Verilator model through cocotb's runner (tests, bench, demo): one
at a time (``run_scenario``), or several in the background, a simulator process per core
(``ScenarioPool``)."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from cocotb_tools.check_results import get_results
from cocotb_tools.runner import get_runner

from satemu.base.params import ChannelParams
from sim.build import ROOT, channel_model_build, verilator_env



def run_scenario(sc: dict, workdir: Path) -> dict:
    """Simulate ``sc``; returns the bench summary plus wall time and simulated cycles."""
    params = ChannelParams(**sc["params"])
    build_dir, top = channel_model_build(params)
    workdir.mkdir(parents=True, exist_ok=True)
    scen = workdir / "scenario.json"
    result = workdir / "result.json"
    scen.write_text(json.dumps(sc))
    if result.exists():
        result.unlink()
    env = verilator_env()
    env.update({
        "SATEMU_SCENARIO": str(scen), "SATEMU_RESULT": str(result),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    })
    runner = get_runner("verilator")
    t0 = time.monotonic()
    xml = runner.test(test_module="sim.channel.bench", hdl_toplevel=top, build_dir=build_dir, hdl_toplevel_lang="verilog",
                      test_dir=workdir, extra_env=env, results_xml=str(workdir / "results.xml"),
                      log_file=str(workdir / "sim.log"))
    wall = time.monotonic() - t0
    tests, failed = get_results(Path(xml))
    summary = json.loads(result.read_text()) if result.exists() else {"errors": ["no result written"]}
    summary.update({"tests": tests, "failed": failed, "wall_s": wall, "log": str(workdir / "sim.log")})
    return summary


class ScenarioPool:
    """Simulates ``scenarios`` (name -> scenario) in the background, ``jobs`` at a time (by
    default one per core, at most two), each in ``workdir / name``: the Verilator models they
    need are built first, one after another, then each scenario's simulator is a process of its
    own. ``result(name)`` waits for a scenario's summary (``run_scenario``'s)."""

    def __init__(self, scenarios: dict[str, dict], workdir: Path, jobs: int | None = None):
        self.scenarios = scenarios
        self.workdir = workdir
        self.jobs = jobs or max(1, min(2, os.cpu_count() or 1))
        self._executor: ThreadPoolExecutor | None = None
        self._futures: dict[str, Future] = {}

    def result(self, name: str) -> dict:
        if self._executor is None:
            for sc in self.scenarios.values():
                channel_model_build(ChannelParams(**sc["params"]))
            self._executor = ThreadPoolExecutor(self.jobs)
            self._futures = {n: self._executor.submit(run_scenario, sc, self.workdir / n)
                             for n, sc in self.scenarios.items()}
        return self._futures[name].result()

    def close(self) -> None:
        """Waits for the scenarios under way; those not started yet never start."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
