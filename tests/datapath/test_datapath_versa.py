# SPDX-License-Identifier: BSD-2-Clause
"""One point of bench/bench_datapath.py: the versa variant of the simulated board (the Versa-5G's
system clock, DDR3 memory system and channel parameters) carries GbE-paced full-size frames on
both channels at once, at a rate well below the measured maximum, exactly as the model says.

It sits outside tests/system so that it runs before the system tests' session board starts:
two Verilator boards at once overload two cores, and the second one then failed to start."""

from fractions import Fraction

import pytest

from sim import board
from sim.datapath import F_CLK, FORWARD, RETURN, run_point

RATE_BPS = 400_000_000        # per channel; the measured maximum is in the bench's JSON


@pytest.fixture(scope="module")
def versa_board():
    state = board.launch(board="versa-ecp5")
    yield state
    board.kill(state)


def test_both_channels_carry_gbe_paced_frames_exactly(versa_board, assert_delivered_exactly):
    r = run_point(versa_board, 1500, RATE_BPS, (FORWARD, RETURN),
                  traffic_cycles=2 * F_CLK // 1000, delay_s=Fraction(1, 1000))
    assert_delivered_exactly(r)
