# SPDX-License-Identifier: BSD-2-Clause
"""Runs a unit test's testbench in Amaranth's simulator, at one cycle a microsecond."""

from amaranth.sim import Simulator


def run(dut, bench):
    """Simulate ``dut`` under the async testbench ``bench`` until it returns."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
