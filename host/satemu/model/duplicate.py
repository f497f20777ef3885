# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of a channel's duplication (``satemu_gw.duplicate.Duplicate``), bit-exact with
it."""

from __future__ import annotations

from satemu.base.regmap import DUPLICATE_SEED_XOR
from satemu.model.corrupt import CorrelatedDecisions

__all__ = ["Duplicate"]


class Duplicate(CorrelatedDecisions):
    """A channel's duplication draws, one each from two xoshiro128++ streams for every frame that
    passes the length, FCS and terminal checks while ``dup_p`` is not 0 (a copy draws none), in
    arrival order: the repeat ``r`` and the decision ``u`` (CorrelatedDecisions), so each frame
    is copied with probability dup_p / 2^32 whatever the correlation."""

    def __init__(self, seed: int):
        super().__init__(seed, DUPLICATE_SEED_XOR)

    def draw(self, regs) -> bool:
        """Whether the next frame is copied under ``regs`` (its dup_* values)."""
        return self.decide(regs.dup_p, regs.dup_corr)[0]
