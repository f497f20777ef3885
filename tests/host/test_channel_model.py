# SPDX-License-Identifier: BSD-2-Clause
"""The reference model's timing semantics, exactness and configuration checks."""

from dataclasses import replace
from fractions import Fraction
import math

import pytest

from satemu.model.channel import Commit, simulate
from satemu.link.registers import channel_registers, probability_register, rate_registers
from satemu.base.params import frame_beats
from satemu.base.params import ChannelParams, ChannelRegs, ConfigError, Fate
from satemu.base.validate import require_registers
from satemu.base.prng import Xoshiro128pp, seed_state

P = ChannelParams()
L = P.latency_floor
BIG = dict(mem_size=1 << 22)


def test_xoshiro_known_answers():
    g = Xoshiro128pp(0)
    g.s = [1, 2, 3, 4]          # the reference implementation's customary test state
    assert [g.next(), g.next()] == [641, 1573767]


def test_seed_state_is_never_zero():
    for seed in (0, 1, 0x9E3779B9, 0x6A09E667 << 32, (1 << 64) - 1):
        assert any(seed_state(seed))


def test_rate_registers_are_exact():
    assert rate_registers(8_500_000, 75_000_000) == (70, 10, 17)     # 1200/17 cycles per byte
    assert rate_registers(1_500_000, 75_000_000) == (400, 0, 1)
    assert rate_registers(None, 75_000_000) == (0, 0, 1)
    # Faster than the datapath's 8 bytes a cycle: the validator refuses it.
    q, num, den = rate_registers(5_000_000_000, 75_000_000)
    with pytest.raises(ConfigError, match="rate_num"):
        require_registers(ChannelRegs(rate_q=q, rate_num=num, rate_den=den))


def test_probability_register():
    assert probability_register(0) == 0
    assert probability_register(0.5) == 1 << 31
    assert probability_register(1) == (1 << 32) - 1
    with pytest.raises(ConfigError, match="loss=1.5"):
        probability_register(1.5, "loss")


def test_validation_names_the_field():
    with pytest.raises(ConfigError, match="queue_frames"):
        require_registers(channel_registers(f_clk=1_000_000, queue_frames=P.queue_depth + 1, **BIG), P)
    with pytest.raises(ConfigError, match="max_len"):
        require_registers(channel_registers(f_clk=1_000_000, max_len=P.max_frame + 1, **BIG), P)
    with pytest.raises(ConfigError, match="overhead"):
        require_registers(channel_registers(f_clk=1_000_000, overhead=300, **BIG), P)
    with pytest.raises(ConfigError, match="address space"):
        require_registers(channel_registers(f_clk=1_000_000, mem_base=1 << P.addr_width, mem_size=1), P)
    with pytest.raises(ConfigError, match="delay"):
        require_registers(ChannelRegs(delay=1 << 40))


def test_unshaped_frame_leaves_at_the_latency_floor():
    r = simulate([(100, 60, False)], ChannelRegs(**BIG))
    assert (r.frames[0].departure, r.frames[0].egress) == (100, 100 + L)


def test_shaped_departure_and_delay():
    regs = ChannelRegs(rate_q=2, delay=5000, **BIG)           # 2 cycles per byte
    r = simulate([(100, 100, False), (101, 60, False)], regs)
    assert r.frames[0].departure == 300                          # 100 + 100 x 2
    assert r.frames[1].departure == 420                          # waits: 300 + 60 x 2
    assert [f.egress for f in r.frames] == [5300, 5420]


def test_fractional_rate_carries_the_remainder():
    # 1/3 cycle per byte: three 60-byte frames back to back take exactly 60 cycles.
    regs = ChannelRegs(rate_q=0, rate_num=1, rate_den=3, **BIG)
    r = simulate([(10, 61, False), (11, 61, False), (12, 61, False)], regs)
    assert [f.departure for f in r.frames] == [31, 51, 71]      # 10 + ceil(61/3), 10+ceil(122/3), ...


def test_no_drift_over_many_frames():
    """Frames offered exactly at the shaped rate: the N-th departure is exactly ceil(N x ser)."""
    f_clk, rate, length, ovh = 75_000_000, 8_500_000, 1500, 24
    regs = channel_registers(f_clk=f_clk, rate_bps=rate, overhead=ovh, **BIG)
    ser = Fraction(8 * f_clk, rate) * (length + ovh)
    n = 200_000
    frames = [(math.floor(i * ser) + 1, length, False) for i in range(n)]
    r = simulate(frames, regs)
    assert all(f.fate == Fate.DELIVERED for f in r.frames)
    assert r.frames[-1].departure == 1 + math.ceil(n * ser)
    assert r.frames[n // 2].departure == 1 + math.ceil((n // 2 + 1) * ser)


def test_queue_counts_frames_until_their_departure_cycle():
    regs = ChannelRegs(rate_q=1, queue_frames=1, **BIG)         # 1 cycle per byte
    # Frame 0 departs at 100 + 60 = 160. A frame arriving at 160 still finds it queued.
    r = simulate([(100, 60, False), (160, 60, False), (161, 60, False)], regs)
    assert [f.fate for f in r.frames] == [Fate.DELIVERED, Fate.QUEUE, Fate.DELIVERED]


def test_queue_byte_limit_and_high_water_marks():
    regs = ChannelRegs(rate_q=10, queue_bytes=150, min_len=20, **BIG)
    r = simulate([(0, 60, False), (1, 60, False), (2, 60, False), (3, 30, False)], regs)
    assert [f.fate for f in r.frames] == [Fate.DELIVERED, Fate.DELIVERED, Fate.QUEUE, Fate.DELIVERED]
    assert r.gauges["queue_bytes_hwm"] == 150 and r.gauges["queue_frames_hwm"] == 3


def test_bad_frames_are_classified_before_loss():
    regs = ChannelRegs(loss_mode=1, loss_p=(1 << 32) - 1, **BIG)   # lose everything valid
    r = simulate([(1, 10, False), (2, 2000, False), (3, 100, True), (4, 100, False)], regs)
    assert [f.fate for f in r.frames] == [Fate.RUNT, Fate.OVERSIZE, Fate.ERROR, Fate.LOSS]


def test_memory_region_overflow_drops_and_frees_at_egress():
    words = 1 + frame_beats(1000)
    regs = ChannelRegs(delay=10_000, mem_size=2 * words)
    frames = [(1, 1000, False), (2, 1000, False), (3, 1000, False), (20_000, 1000, False)]
    r = simulate(frames, regs)
    assert [f.fate for f in r.frames] == [Fate.DELIVERED, Fate.DELIVERED, Fate.MEM, Fate.DELIVERED]


def test_egress_port_serialises_frames_due_together():
    r = simulate([(1, 1518, False), (2, 60, False)], ChannelRegs(**BIG))
    first, second = r.frames
    assert second.egress == first.egress + frame_beats(1518)


@pytest.mark.parametrize("board", ["versa-ecp5", "colorlight-5a-75b"])
@pytest.mark.parametrize("overhead", [0, 24])
@pytest.mark.parametrize("channel", ["forward", "return"])
def test_traffic_within_the_guarantee_never_waits_for_the_pace(board, overhead, channel):
    """A board's pace lets through every frame of a profile its firmware accepts: at the
    fastest shaped rate its throughput check admits, frames of random lengths offered at twice
    that rate (with bursts) at a constant delay leave exactly as they would with no pace, and
    a pace a cycle slower would hold some back."""
    import random
    from satemu.base.boards import BOARDS
    from satemu.base.validate import Status, check_throughput
    b = BOARDS[board]
    params = replace(b.channel_params(channel), bod=False)
    wpc = b.hardware.wpc(channel)
    assert params.mem_pace and wpc == 65536 // params.mem_pace

    def regs(mbps):
        return channel_registers(f_clk=b.f_clk, rate_bps=mbps * 1_000_000, overhead=overhead,
                                 delay_s=Fraction(1, 100), queue_frames=200,
                                 mem_size=b.delay_line_words, params=params)
    mbps = max(m for m in range(1, 1000) if check_throughput(
        regs(m), b.f_clk, b.port_bps, wpc, params) is None)
    rng = random.Random(f"{board} {overhead} {channel}")
    t, frames = 0, []
    for _ in range(4000):
        length = rng.choice([60, 1518, rng.randint(60, 1518)])
        gap = 0 if rng.random() < 0.2 else rng.expovariate(1 / ((length + 20) * 8 * b.f_clk
                                                               / (2e6 * mbps)))
        t += (length + 7) // 8 + 1 + int(gap)
        frames.append((t, length, False))
    paced = simulate(frames, regs(mbps), params)
    free = simulate(frames, regs(mbps), replace(params, mem_pace=0))
    assert paced.counters["drop_queue"] > 100                  # the queue stays full
    slower = simulate(frames, regs(mbps), replace(params, mem_pace=params.mem_pace + 1))
    assert [r.egress for r in paced.frames] == [r.egress for r in free.frames]
    assert [r.egress for r in slower.frames] != [r.egress for r in free.frames]
    # One step more and the check refuses it.
    assert check_throughput(regs(mbps + 1), b.f_clk, b.port_bps, wpc,
                            params).status == Status.THROUGHPUT


def test_frames_of_a_delay_cut_leave_at_the_memory_s_pace():
    """After a cut the frames fall due together; each leaves ``mem_pace`` cycles a word after
    the one before it (not at the port's beat a cycle), in order, until the backlog is gone."""
    params = ChannelParams(mem_pace=11)
    f = 55_000_000
    r0 = channel_registers(f_clk=f, rate_bps=100_000_000, overhead=24, delay_s=Fraction(1, 100),
                           queue_frames=500, mem_size=1 << 22, params=params)
    r1 = replace(r0, delay=f // 1000)                       # 10 ms -> 1 ms at cycle 600,000
    spacing = (1500 + 24) * 8 * f // 100_000_000 + 1        # 100 Mbit/s of 1500-byte frames
    frames = [(1000 + k * spacing, 1500, False) for k in range(1000)]
    r = simulate(frames, r0, params, [Commit(600_000, r1)])
    egress = [x.egress for x in r.frames]
    first = next(k for k, (a, _, _) in enumerate(frames) if a > 600_000)
    gaps = [b - a for a, b in zip(egress[first:], egress[first + 1:])]
    assert gaps[0] == 11 * 189                              # 189 words, 11 cycles each
    drained = gaps.index(spacing)                           # then the link's own spacing
    assert 50 < drained and set(gaps[:drained - 1]) == {11 * 189}
    assert 11 * 189 < gaps[drained - 1] < spacing and set(gaps[drained:]) == {spacing}
    assert all(e > x.departure for e, x in zip(egress, r.frames))


def test_loss_is_repeatable_and_seeded():
    def drops(seed):
        regs = channel_registers(f_clk=1_000_000, loss=0.2, seed=seed, **BIG)
        r = simulate([(10 * i + 1, 60, False) for i in range(2000)], regs)
        return [f.fate == Fate.LOSS for f in r.frames]
    assert drops(5) == drops(5)
    assert drops(5) != drops(6)
    assert abs(sum(drops(5)) / 2000 - 0.2) < 0.03


def test_gilbert_elliott_long_run_loss():
    p, rr, k_bad = 0.02, 0.25, 0.5
    regs = channel_registers(f_clk=1_000_000, gilbert_elliott=(p, rr, 0.0, k_bad), seed=3, **BIG)
    n = 40_000
    r = simulate([(10 * i + 1, 60, False) for i in range(n)], regs)
    lost = sum(f.fate == Fate.LOSS for f in r.frames) / n
    expected = p / (p + rr) * k_bad
    assert abs(lost - expected) < 0.25 * expected


def test_commit_applies_after_its_cycle():
    r0 = ChannelRegs(rate_q=1, **BIG)
    r1 = replace(r0, rate_q=2)
    r = simulate([(100, 60, False), (1000, 60, False), (1001, 60, False)], r0,
                 commits=[Commit(1000, r1)])
    assert [f.departure for f in r.frames] == [160, 1060, 1180]   # 1060 + 60 x 2


def test_commit_changing_denominator_rounds_virtual_time_up():
    r0 = ChannelRegs(rate_q=0, rate_num=1, rate_den=3, **BIG)
    r1 = replace(r0, rate_num=1, rate_den=2)
    # Frame 0 finishes at 10 + 61/3 = 30 1/3; the commit rounds V up to 31.
    r = simulate([(10, 61, False), (20, 60, False)], r0, commits=[Commit(15, r1)])
    assert [f.departure for f in r.frames] == [31, 61]
