# SPDX-License-Identifier: BSD-2-Clause
"""The delay-line throughput check (THROUGHPUT): a profile may not demand more DRAM words per
65536 cycles than the board guarantees a channel (``mem_wpc``); 0 means the board does not limit
it. The shared vectors pin the firmware to satemu.base.validate; these tests pin the rule itself."""

import random
from fractions import Fraction

import pytest

from satemu.base import protocol as P
from satemu.base.validate import delay_line_traffic
from satemu.base.params import frame_words
from satemu.link.registers import rate_registers
from satemu.base.params import ChannelRegs
from satemu.link.profile import ChannelProfile, Profile, ProfileError
from satemu.base.hardware import Hardware
from satemu.base.validate import profile_fields, validate

F_CLK = 60_000_000


def shaped_100m(**kw) -> ChannelRegs:
    """100 Mbit/s at 60 MHz: 4.8 cycles a byte; frames of 60 to 1518 bytes, no overhead."""
    q, num, den = rate_registers(100_000_000, F_CLK)
    return ChannelRegs(**dict(dict(rate_q=q, rate_num=num, rate_den=den, delay=600_000,
                                   queue_frames=64, queue_bytes=100_000, min_len=60,
                                   max_len=1518), **kw))


def test_shaped_100_mbits_at_60_mhz():
    regs = shaped_100m()
    assert (regs.rate_q, regs.rate_num, regs.rate_den) == (4, 4, 5)
    # Overhead 0 < 15: the worst frame is the shortest. 60 bytes take at most 75 / 8 words and
    # arrive every 60 x 24/5 cycles: 75 x 65536 x 5 / (8 x 24 x 60) = 2133 1/3 words per 65536.
    assert delay_line_traffic(regs, F_CLK) == (75 * 65536 * 5, 8 * 24 * 60)
    assert Fraction(*delay_line_traffic(regs, F_CLK)) == Fraction(6400, 3)
    lim = Hardware(F_CLK, 6 << 20)
    assert validate(profile_fields(regs), lim, 0).status == P.Status.OK                      # not limited
    assert validate(profile_fields(regs), Hardware(F_CLK, 6 << 20, mem_wpc=2134), 0).status == P.Status.OK
    v = validate(profile_fields(regs), Hardware(F_CLK, 6 << 20, mem_wpc=2133), 0)
    assert (v.status, v.field, v.value, v.lo, v.hi) == (P.Status.THROUGHPUT, 0, 2134, 0, 2133)
    assert v.explain().startswith("the profile's rate needs up to 2134 words per 65536 cycles "
                                  "of delay-line bandwidth, the board guarantees this channel "
                                  "2133 (with the other channel busy)")
    # The frames that really arrive: 9 words per 60-byte frame, 2048 per 65536 cycles.
    assert Fraction(frame_words(60) * 65536, 60 * Fraction(24, 5)) == 2048


def test_each_channel_has_its_own_guarantee():
    """A board that splits its memory between the channels (the Versa-5G: more for the forward
    link) checks each channel's profile against its own guarantee, and the firmware's limits
    carry both."""
    fields = profile_fields(shaped_100m())
    split = Hardware(F_CLK, 6 << 20, mem_wpc=(2134, 2133))
    assert validate(fields, split, P.CHANNEL_FORWARD).status == P.Status.OK
    v = validate(fields, split, P.CHANNEL_RETURN)
    assert (v.status, v.value, v.hi) == (P.Status.THROUGHPUT, 2134, 2133)
    assert validate(fields, Hardware(F_CLK, 6 << 20, mem_wpc=(2133, 2134)),
                    P.CHANNEL_RETURN).status == P.Status.OK
    limits = split.limits()
    assert (limits["mem_wpc_forward"], limits["mem_wpc_return"]) == (2134, 2133)
    assert Hardware.from_limits(limits, ("return",)).mem_wpc == (2134, 2133)


def test_equality_passes():
    """1 cycle a byte, 1 byte of overhead, 1-byte frames: 16 words every 16 cycles, exactly."""
    regs = shaped_100m(rate_q=1, rate_num=0, rate_den=1, overhead=1, min_len=1)
    assert Fraction(*delay_line_traffic(regs, F_CLK)) == 65536
    for wpc, status in ((65536, P.Status.OK), (65535, P.Status.THROUGHPUT)):
        assert validate(profile_fields(regs), Hardware(F_CLK, 6 << 20, mem_wpc=wpc), 0).status == status


def test_the_worst_frame_length_switches_at_overhead_15():
    base = shaped_100m()
    for overhead, worst in ((14, 60), (15, None), (16, 1518), (255, 1518)):
        regs = shaped_100m(overhead=overhead)
        num, den = delay_line_traffic(regs, F_CLK)
        per_byte = Fraction(24, 5)
        bound = [Fraction((n + 15) * 65536, 8 * per_byte * (n + overhead))
                 for n in range(base.min_len, base.max_len + 1)]
        assert Fraction(num, den) == max(bound)
        if worst:
            assert Fraction(num, den) == bound[worst - base.min_len]


def test_unshaped_counts_at_the_line_rate_and_bod_at_the_carrier():
    # Unshaped at 1 Gbit/s and 60 MHz: 0.48 cycles a byte, 24 bytes of framing, max_len worst.
    regs = shaped_100m(rate_q=0, rate_num=0, rate_den=1, overhead=200)
    assert Fraction(*delay_line_traffic(regs, F_CLK)) == \
        Fraction((1518 + 15) * 65536, 8 * Fraction(48, 100) * (1518 + 24))
    # BoD: 188-byte slots every 14196 cycles, whatever the shaper says.
    bod = shaped_100m(bod_flags=1, bod_slot_cycles=14196, bod_slot_bytes=188, overhead=4)
    assert Fraction(*delay_line_traffic(bod, F_CLK)) == \
        Fraction((60 + 15) * 65536, 8 * Fraction(14196, 188) * (60 + 4))


def test_the_bound_covers_every_frame_length():
    """No stream of frames at the profile's pace fills more words per cycle than the bound."""
    rng = random.Random(3)
    for _ in range(300):
        regs = shaped_100m(rate_q=rng.randrange(0, 50), rate_num=rng.randrange(0, 7), rate_den=7,
                           overhead=rng.randrange(0, 256), min_len=rng.randrange(1, 200),
                           max_len=rng.randrange(200, 2049))
        if not regs.rate_q and not regs.rate_num:
            continue
        per_byte = regs.rate_q + Fraction(regs.rate_num, regs.rate_den)
        bound = Fraction(*delay_line_traffic(regs, F_CLK))
        for n in {regs.min_len, regs.max_len, rng.randrange(regs.min_len, regs.max_len + 1)}:
            assert frame_words(n) * 65536 / (per_byte * (n + regs.overhead)) <= bound


def test_mem_wpc_0_never_rejects():
    rng = random.Random(4)
    for _ in range(300):
        regs = shaped_100m(rate_q=0, rate_num=rng.randrange(0, 2), rate_den=8,
                           overhead=rng.randrange(0, 16), min_len=rng.randrange(1, 61),
                           delay=0, queue_frames=1)
        for lim in (Hardware(F_CLK, 1 << 31), Hardware(F_CLK, 1 << 31, port_bps=10 ** 12)):
            assert validate(profile_fields(regs), lim, 0).status == P.Status.OK


def test_rejected_exactly_when_the_rounded_demand_exceeds_the_guarantee():
    rng = random.Random(5)
    for _ in range(300):
        regs = shaped_100m(rate_q=rng.randrange(1, 20), rate_num=rng.randrange(0, 1000),
                           rate_den=1000, overhead=rng.randrange(0, 40))
        num, den = delay_line_traffic(regs, F_CLK)
        wpc = rng.randrange(1, 2 * num // den + 2)
        v = validate(profile_fields(regs), Hardware(F_CLK, 1 << 31, mem_wpc=wpc), 0)
        assert (v.status == P.Status.THROUGHPUT) == (num > wpc * den) == (-(-num // den) > wpc)
        if v.status:
            assert (v.value, v.hi) == (-(-num // den), wpc)


def test_profile_check_uses_the_boards_guarantee():
    p = Profile("t", ChannelProfile(rate=Fraction(100_000_000), delay=Fraction(1, 100)),
                ChannelProfile(rate=Fraction(1_000_000), delay=Fraction(1, 100)))
    p.check(Hardware(F_CLK, 6 << 20, mem_wpc=2134))
    assert p.forward.traffic_wpc(Hardware(F_CLK, 6 << 20), "forward") == 2134
    with pytest.raises(ProfileError, match=r"^forward: the profile's rate needs up to 2134 words "
                                           r"per 65536 cycles .* guarantees this channel 2133"):
        p.check(Hardware(F_CLK, 6 << 20, mem_wpc=2133))
