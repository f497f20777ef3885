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
    state = board.launch(dram="versa")
    yield state
    board.kill(state)


def test_both_channels_carry_gbe_paced_frames_exactly(versa_board):
    with_device_info = run_point(versa_board, 1500, RATE_BPS, (FORWARD, RETURN),
                                 traffic_cycles=2 * F_CLK // 1000, delay_s=Fraction(1, 1000))
    r = with_device_info
    assert r["complete"]
    for name, ch in r["per_channel"].items():
        assert ch["wire_on_schedule"] and ch["arrivals_as_the_mac_latency_says"], name
        assert ch["overrun"] == 0 and ch["model_fates"] == {"DELIVERED": ch["offered"]}, name
        assert ch["exact"] and ch["late_seen"] == 0 and ch["wrong_on_the_wire"] == 0, name
        c = ch["counters"]
        assert c["late"] == 0 and c["rx_frames"] == c["tx_frames"] == ch["offered"], name
        assert not any(c[k] for k in ("drop_overrun", "drop_mem", "drop_queue", "drop_loss")), name
    assert r["ok"]
