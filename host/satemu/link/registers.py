# SPDX-License-Identifier: BSD-2-Clause
"""A channel's settings in physical units made register values at a clock: the translation only.
Whether a channel can run the result is ``satemu.base.validate``'s to say."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from satemu.base.params import ChannelParams, ChannelRegs, ConfigError
from satemu.base.regmap import LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT

__all__ = ["rate_registers", "probability_register", "channel_registers"]


def rate_registers(rate_bps: int | Fraction | None, f_clk: int) -> tuple[int, int, int]:
    """(rate_q, rate_num, rate_den) for a shaped rate in bit/s; None or 0 means unshaped.
    Serialisation time per byte is exactly 8 * f_clk / rate cycles, held as q + num/den, so no
    rounding error exists to accumulate. Whether the registers hold the values, and the channel
    can go that fast, is ``satemu.base.validate``'s to say (``satemu.base.validate.require_registers``)."""
    if not rate_bps:
        return 0, 0, 1
    per_byte = Fraction(8 * f_clk) / Fraction(rate_bps)
    q = per_byte.numerator // per_byte.denominator
    return q, per_byte.numerator % per_byte.denominator, per_byte.denominator


def probability_register(p: float | Fraction, name: str = "probability") -> int:
    """A probability as the 32-bit threshold the gateware compares draws against."""
    if not 0 <= p <= 1:
        raise ConfigError(f"{name}={p} is not in [0, 1]")
    return min(round(Fraction(p) * (1 << 32)), (1 << 32) - 1)


def channel_registers(*, f_clk: int, rate_bps=None, overhead: int = 0, delay_s=0,
                      queue_frames: int | None = None, queue_bytes: int | None = None,
                      loss: float = 0.0, gilbert_elliott: tuple[float, float, float, float] | None = None,
                      seed: int = 1, min_len: int = 60, max_len: int = 1518,
                      mem_base: int = 0, mem_size: int = 0,
                      params: ChannelParams = ChannelParams()) -> ChannelRegs:
    """Register values for a channel profile in physical units at system clock ``f_clk`` Hz.

    ``delay_s`` is rounded to the nearest cycle. ``gilbert_elliott`` is (p, r, loss in Good,
    loss in Bad), per frame. A delay below the latency floor is delivered as the floor. Only the
    conversion: ``satemu.base.validate.require_registers`` says whether a channel can run
    the result.
    """
    q, num, den = rate_registers(rate_bps, f_clk)
    delay = round(Fraction(delay_s) * f_clk)
    regs = ChannelRegs(rate_q=q, rate_num=num, rate_den=den, overhead=overhead, delay=delay,
                       queue_frames=params.queue_depth if queue_frames is None else queue_frames,
                       queue_bytes=queue_bytes if queue_bytes is not None else 0xFFFF_FFFF,
                       seed=seed, min_len=min_len, max_len=max_len,
                       mem_base=mem_base, mem_size=mem_size)
    if gilbert_elliott is not None:
        gp, gr, kg, kb = gilbert_elliott
        regs = replace(regs, loss_mode=LOSS_GILBERT_ELLIOTT,
                       ge_p=probability_register(gp, "ge_p"), ge_r=probability_register(gr, "ge_r"),
                       ge_loss_good=probability_register(kg, "ge_loss_good"),
                       ge_loss_bad=probability_register(kb, "ge_loss_bad"))
    elif loss:
        regs = replace(regs, loss_mode=LOSS_BERNOULLI, loss_p=probability_register(loss, "loss"))
    return regs
