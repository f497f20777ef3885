# SPDX-License-Identifier: BSD-2-Clause
"""The colorlight variant of the simulated board: the Colorlight 5A-75B's system clock (40 MHz),
SDR SDRAM (a 32-bit native port), channels (no BoD block, 512-frame queues) and CPU (SERV), so
that the firmware the board runs is executed here. It reports the board (HELLO), refuses a BoD
profile itself, not only through the host's check, and carries GbE-paced full-size frames on
both channels at once exactly as the model says."""

from dataclasses import replace
from fractions import Fraction

import pytest

from satemu.base import protocol as P
from satemu.base.boards import BOARDS
from satemu.box.device import Device, DeviceError
from satemu.link.profile import ProfileError, load_profile
from sim import board
from sim.datapath import FORWARD, FW_TIMEOUT, RETURN, run_point

RATE_BPS = 100_000_000        # per channel: 400 Mbit/s of SDRAM traffic for both, of 1.28 Gbit/s


@pytest.fixture(scope="module")
def colorlight_board():
    state = board.launch(board="colorlight-5a-75b")
    yield state
    board.kill(state)


def test_it_reports_the_board_and_refuses_bod(colorlight_board):
    want = BOARDS["colorlight-5a-75b"].hardware
    with Device(colorlight_board["url"], timeout=FW_TIMEOUT) as dev:
        info = dev.hello()
        assert (info["f_clk"], info["mem_words"], info["port_bps"]) == (
            want.f_clk, want.mem_words, want.port_bps)
        assert info["queue_depth"] == want.params.queue_depth == 512
        assert not info["capabilities"] & P.Capability.BOD
        hw = dev.hardware()
        assert hw.bod_channels == () == want.bod_channels
        profile = load_profile("geo-testbed-bod")
        with pytest.raises(ProfileError, match="no Bandwidth-on-Demand block"):
            dev.load(profile)
        # The firmware's own check, for a host that skips its own: the return channel's BoD
        # fields as a board with the block would take them.
        regs = profile.check(replace(hw, bod_channels=("return",)))
        with pytest.raises(DeviceError, match="bod_flags"):
            dev.set_profile(P.CHANNEL_RETURN, regs["return"])


def test_both_channels_carry_gbe_paced_frames_exactly(colorlight_board, assert_delivered_exactly):
    r = run_point(colorlight_board, 1500, RATE_BPS, (FORWARD, RETURN),
                  traffic_cycles=2 * BOARDS["colorlight-5a-75b"].hardware.f_clk // 1000,
                  delay_s=Fraction(1, 1000))
    assert_delivered_exactly(r)
