# SPDX-License-Identifier: BSD-2-Clause
"""Bandwidth-on-Demand return-link scenarios for the channel bench (issue 5)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from satemu.channel_model import ChannelParams, channel_registers
from satemu.regmap import BOD_ENABLE, BOD_FCA, BOD_BG_REPEAT, BOD_RATE_ONE
from sim.traffic import scenario, traffic

MEM_WORDS = 1 << 20
PARAMS = ChannelParams(bod=True)


def bod_regs(f_clk, *, superframe, slots, slot_bytes, cra=0, rbdc_max=0, timeout=0, vbdc_max=0,
             period=1, latency=8, background=((0, 1),), repeat=False, fca=False,
             delay=Fraction(1, 20), queue_frames=200, overhead=0, seed=1, loss=0.0):
    """Register values of a BoD return channel; rates in bit/s, times in seconds, background
    as (fraction of the slots, superframes) levels."""
    slot_cycles = round(Fraction(superframe) * f_clk / slots)
    sf_s = Fraction(slot_cycles * slots, f_clk)

    def rate(bps):
        return round(Fraction(bps) * sf_s / (8 * slot_bytes) * BOD_RATE_ONE)

    regs = channel_registers(f_clk=f_clk, delay_s=delay, queue_frames=queue_frames,
                             mem_size=MEM_WORDS, overhead=overhead, seed=seed, loss=loss,
                             params=PARAMS)
    levels = {f"bod_bg{i}": round(fr * slots) | (n << 16) for i, (fr, n) in enumerate(background)}
    return replace(regs, bod_flags=BOD_ENABLE | (BOD_FCA if fca else 0)
                   | (BOD_BG_REPEAT if repeat else 0),
                   bod_slot_cycles=slot_cycles, bod_slots=slots, bod_slot_bytes=slot_bytes,
                   bod_cra=rate(cra), bod_rbdc_max=rate(rbdc_max), bod_rbdc_timeout=timeout,
                   bod_vbdc_max=vbdc_max, bod_req_period=period, bod_latency=latency,
                   bod_bg_count=len(background), **levels)


def bod_scenarios() -> dict[str, dict]:
    sc = {}
    f = 1_000_000
    # 10 ms superframes of 40 slots x 100 bytes (a 3.2 Mbit/s carrier); frames up to 1518
    # bytes span up to 16 slots, and slots carry the ends of several frames.
    base = dict(superframe=Fraction(1, 100), slots=40, slot_bytes=100, overhead=6)

    regs = bod_regs(f, cra=64_000, rbdc_max=1_600_000, timeout=8, vbdc_max=60, latency=8,
                    background=((0.3, 1),), **base)
    sc["bod-steady"] = scenario(
        "steady return traffic at 1 Mbit/s: RBDC follows the arrival rate", f_clk=f, regs=regs,
        params=PARAMS, tb_seed=21, run_after=200_000,
        frames=traffic(31, 400, rate_bps=1_000_000, f_clk=f, load=1.0))
    return sc
