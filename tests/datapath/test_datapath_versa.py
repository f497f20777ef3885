# SPDX-License-Identifier: BSD-2-Clause
"""One point of bench/bench_datapath.py: the versa variant of the simulated board (the Versa-5G's
system clock, DDR3 memory system and channel parameters, its memory pace included) carries
GbE-paced full-size frames on both channels at once, at a rate below the measured maximum,
exactly as the model says; and a large delay cut on both channels, whose frames fall due
together and leave at the memory's pace, each at the model's cycle.

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


def test_a_delay_cut_leaves_at_the_memory_s_pace(versa_board, assert_delivered_exactly):
    """3 ms to 0.5 ms on both channels, 2 ms into 4 ms of 200 Mbit/s (shaped) full-size
    frames: some 33 frames a channel are in flight when the delay drops. The frames after the
    cut wait behind them, then fall due together and leave 11 cycles a word apart (the pace,
    2079 cycles a frame, against the port's 191), none late."""
    r = run_point(versa_board, 1500, 200_000_000, (FORWARD, RETURN),
                  traffic_cycles=4 * F_CLK // 1000, delay_s=Fraction(3, 1000), shaped=True,
                  cut=(2 * F_CLK // 1000, Fraction(1, 2000)))
    assert_delivered_exactly(r)
    for name, ch in r["per_channel"].items():
        assert ch["paced"] >= 30, name
