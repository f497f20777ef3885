# SPDX-License-Identifier: BSD-2-Clause
"""Run one channel scenario in the Verilator model through cocotb's runner (tests, bench, demo)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from cocotb_tools.check_results import get_results
from cocotb_tools.runner import get_runner

from satemu.params import ChannelParams
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
    xml = runner.test(test_module="sim.channel_tb", hdl_toplevel=top, build_dir=build_dir, hdl_toplevel_lang="verilog",
                      test_dir=workdir, extra_env=env, results_xml=str(workdir / "results.xml"),
                      log_file=str(workdir / "sim.log"))
    wall = time.monotonic() - t0
    tests, failed = get_results(Path(xml))
    summary = json.loads(result.read_text()) if result.exists() else {"errors": ["no result written"]}
    summary.update({"tests": tests, "failed": failed, "wall_s": wall, "log": str(workdir / "sim.log")})
    return summary
