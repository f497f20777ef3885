# SPDX-License-Identifier: BSD-2-Clause
"""One point of bench/bench_datapath.py: the versa variant of the simulated board (the Versa-5G's
system clock, DDR3 memory system and channel parameters, its memory pace included) carries
GbE-paced full-size frames on both channels at once, at a rate below the measured maximum,
exactly as the model says; a large delay cut on both channels, whose frames fall due
together and leave at the memory's pace, each at the model's cycle; and, at once, a forward
queue of about 2,000 frames, past the 1024 departure times its chip holds, the rest in the ring
in DDR3, and a return queue of about 1,400 frames, its departure times on chip as distances.

It sits outside tests/system: `make test` runs the data-path points in a session of their own
beside the system tests' (scripts/test.sh), one board in each."""

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
    """3 ms to 0.5 ms on both channels, 2 ms into 4 ms of full-size frames shaped at 200 Mbit/s
    forward and 150 return, each within its channel's guarantee: the frames that arrive after
    the cut (some 33 forward, 25 return) wait behind those in flight, then fall due together and
    leave at the channel's pace (9 cycles a word forward, 1701 cycles a frame; 19 return, 3591;
    against the port's 191), none late."""
    r = run_point(versa_board, 1500, 200_000_000, (FORWARD, RETURN),
                  traffic_cycles=4 * F_CLK // 1000, delay_s=Fraction(3, 1000), shaped=True,
                  cut=(2 * F_CLK // 1000, Fraction(1, 2000)), return_rate_bps=150_000_000)
    assert_delivered_exactly(r)
    assert r["per_channel"]["forward"]["paced"] >= 30
    assert r["per_channel"]["return"]["paced"] >= 20


def test_the_queues_spill_to_the_ring_and_hold_their_depth_on_chip(versa_board,
                                                                    assert_delivered_exactly):
    """Both deep queues at once, 60-byte frames (the costliest per byte), each channel shaped at
    a share of its rate for 10 ms, then at it.

    - geo-large's forward queue needs the ring on the Versa-5G: 350 Mbit/s (105.6 cycles a
      frame, each frame's 9 words and its departure time's: 6206 words per 65536 cycles of the
      7281 guaranteed), at two thirds of it first, so that at 12 ms about 2,080 frames are
      queued, past the 1024 departure times the chip holds.
    - The return channel holds its queue's departure times on chip as distances, 16,384 of
      them: 140 Mbit/s (the return guarantee is 3449 words per 65536 cycles, about 148 Mbit/s
      of them), at half of it first: the queue grows by about 139 frames a millisecond, to
      about 1,390 at 10 ms, past the 1024 entries a chip of whole departure times held.

    Every frame leaves at the model's cycle with its bytes, as the model, which knows nothing
    of the ring, says."""
    r = run_point(versa_board, 60, 350_000_000, (FORWARD, RETURN),
                  traffic_cycles=12 * F_CLK // 1000, delay_s=Fraction(3, 1000), shaped=True,
                  fill=(10 * F_CLK // 1000, {"forward": Fraction(2, 3), "return": Fraction(1, 2)}),
                  queue=4096, return_rate_bps=140_000_000)
    assert_delivered_exactly(r)
    assert r["queues"] == {"forward": 4096, "return": 4096}
    assert r["per_channel"]["forward"]["counters"]["queue_frames_hwm"] > 1800
    assert r["per_channel"]["return"]["counters"]["queue_frames_hwm"] > 1100
