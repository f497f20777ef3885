# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of a channel's duplication (``satemu_gw.duplicate.Duplicate``), bit-exact with
it."""

from __future__ import annotations

from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import DUPLICATE_SEED_XOR

__all__ = ["Duplicate"]


class Duplicate:
    """A channel's duplication draws, one each from two xoshiro128++ streams for every frame that
    passes the length, FCS and terminal checks while ``dup_p`` is not 0 (a copy draws none), in
    arrival order: the repeat ``r`` and the decision ``u``. The frame repeats the last frame's
    decision when ``r >> 16 < dup_corr``, else it is copied when ``u < dup_p``. So each frame is
    copied with probability dup_p / 2^32 whatever the correlation, which only repeats decisions
    (lag-k correlation (dup_corr / 2^16)^k)."""

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.streams = [Xoshiro128pp(seed ^ x) for x in DUPLICATE_SEED_XOR]
        self.last = False

    def draw(self, regs) -> bool:
        """Whether the next frame is copied under ``regs`` (its dup_* values)."""
        r, u = (s.next() for s in self.streams)
        hit = self.last if r >> 16 < regs.dup_corr else u < regs.dup_p
        self.last = hit
        return hit
