# SPDX-License-Identifier: BSD-2-Clause
"""One point of bench/bench_datapath.py: the versa variant of the simulated board (the Versa-5G's
system clock, DDR3 memory system and channel parameters, its memory pace included) carries
GbE-paced full-size frames on both channels at once, at a rate below the measured maximum,
exactly as the model says; a large delay cut on both channels, whose frames fall due
together and leave at the memory's pace, each at the model's cycle; and a forward queue of
about 2,000 frames, past the 1024 departure times its chip holds, the rest in the ring in DDR3.

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


def test_the_forward_queue_spills_to_the_ring(versa_board, assert_delivered_exactly):
    """geo-large's forward queue needs the ring on the Versa-5G. 60-byte frames, the costliest
    per byte, at 350 Mbit/s forward (105.6 cycles a frame, each frame's 9 words and its departure
    time's: 6206 words per 65536 cycles of the 7281 guaranteed) and 150 return: the forward
    channel is shaped at half its rate for 4 ms, then at its rate, so that from 8 ms on about
    2,080 frames stay queued, past the 1024 departure times the chip holds. Every frame leaves
    at the model's cycle with its bytes, as the model, which knows nothing of the ring, says."""
    r = run_point(versa_board, 60, 350_000_000, (FORWARD, RETURN),
                  traffic_cycles=10 * F_CLK // 1000, delay_s=Fraction(3, 1000), shaped=True,
                  fill=(4 * F_CLK // 1000, Fraction(1, 2)), queue=4096,
                  return_rate_bps=150_000_000)
    assert_delivered_exactly(r)
    assert r["queues"] == {"forward": 4096, "return": 4096}
    assert r["per_channel"]["forward"]["counters"]["queue_frames_hwm"] > 1800
    assert r["per_channel"]["return"]["counters"]["queue_frames_hwm"] < 1024


def test_the_return_queue_holds_its_depth_on_chip(versa_board, assert_delivered_exactly):
    """The return channel holds its queue's departure times on chip as distances, 16,384 of
    them. 60-byte frames at 140 Mbit/s (the return guarantee is 3449 words per 65536 cycles,
    about 148 Mbit/s of them), shaped at half that rate for 10 ms, then at it: the queue grows
    by about 139 frames a millisecond (835 after 6 ms), to about 1,390, past the 1024 entries a
    chip of whole departure times held. Every frame leaves at the model's cycle with its bytes."""
    r = run_point(versa_board, 60, 140_000_000, (RETURN,),
                  traffic_cycles=12 * F_CLK // 1000, delay_s=Fraction(3, 1000), shaped=True,
                  fill=(10 * F_CLK // 1000, Fraction(1, 2)), queue=4096, fill_sides=("return",))
    assert_delivered_exactly(r)
    assert r["queues"]["return"] == 4096
    assert r["per_channel"]["return"]["counters"]["queue_frames_hwm"] > 1100
