# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of a channel's jitter (``satemu_gw.jitter.Jitter``), bit-exact with it."""

from __future__ import annotations

from typing import Sequence

from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import JITTER_SEED_XOR, JITTER_SHIFT, JITTER_TABLE

__all__ = ["Jitter", "empty_banks"]


def empty_banks() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Both banks as the gateware holds them before any is written: zeros."""
    return ((0,) * JITTER_TABLE, (0,) * JITTER_TABLE)


class Jitter:
    """A channel's jitter draws, in the order the channel times its frames: one xoshiro128++
    draw a frame; its low INDEX_BITS index the bank in force unless its high 16 bits fall below
    ``jit_corr``, when the frame repeats the last index. The frame's delay grows by the entry
    times ``jit_sigma``, shifted right by JITTER_SHIFT, rounded down (it may be negative).

    So each frame's jitter follows the table's distribution exactly, whatever the correlation:
    the correlation only repeats draws (with probability jit_corr / 2^16 each), which makes the
    jitter of frames k apart correlated by (jit_corr / 2^16)^k.
    """

    def __init__(self, seed: int, banks: Sequence[Sequence[int]] | None = None):
        self.banks = [list(b) for b in (banks or empty_banks())]
        if len(self.banks) != 2 or any(len(b) != JITTER_TABLE for b in self.banks):
            raise ValueError(f"jitter needs two banks of {JITTER_TABLE} entries")
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.prng = Xoshiro128pp(seed ^ JITTER_SEED_XOR)
        self.last = 0

    def draw(self, regs) -> int:
        """The cycles the next frame's delay grows by, under ``regs`` (its jit_* values)."""
        r = self.prng.next()
        index = self.last if r >> 16 < regs.jit_corr else r & (JITTER_TABLE - 1)
        self.last = index
        return (self.banks[regs.jit_bank][index] * regs.jit_sigma) >> JITTER_SHIFT
