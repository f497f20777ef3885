# SPDX-License-Identifier: BSD-2-Clause
"""The soak (sim/soak.py) on the fast engine, shortened: every frame accounted for, exactly."""

from satemu.base.params import ChannelParams, Fate
from sim.soak import MIN_LEN, run_soak, soak_traffic


def test_soak_conserves_every_frame_and_drains():
    # run_soak raises unless rx = tx + each drop cause, each cause's counter equals the frames
    # given that fate, and the queue and memory gauges are 0 once the channel has drained.
    r = run_soak(20_000)
    assert r["frames"] == 20_000
    assert r["min_size_frames"] >= 0.2 * r["frames"]
    for name in ("drop_runt", "drop_oversize", "drop_error", "drop_loss", "drop_queue",
                 "drop_mem"):
        assert r["drops"][name] > 0, name                  # every cause occurs
    assert r["delivered"] + sum(r["drops"].values()) == r["frames"]
    assert r["gauges_after_drain"] == {"queue_frames_now": 0, "queue_bytes_now": 0,
                                       "mem_words_now": 0}
    assert r["peaks"]["queue_frames_hwm"] == 30 and r["peaks"]["mem_words_hwm"] <= 9000


def test_soak_traffic_is_reproducible_and_paced():
    a, b = soak_traffic(3000), soak_traffic(3000)
    assert a == b
    assert all(t2 > t1 for (t1, _, _), (t2, _, _) in zip(a, a[1:]))
    assert sum(length == MIN_LEN for _, length, _ in a) >= 600


def test_soak_counts_from_a_preset_near_the_wrap():
    # The model starts its counters at counter_init, as the gateware does (the wrap test).
    base = run_soak(2000)
    preset = run_soak(2000, params=ChannelParams(counter_bits=32, counter_init=(1 << 32) - 2))
    assert preset["counters"] == base["counters"] and preset["fates"] == base["fates"]
    assert base["fates"].count(int(Fate.DELIVERED)) == base["delivered"]
