# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of a channel's corruption (``satemu_gw.corrupt.Corrupt``), bit-exact with it."""

from __future__ import annotations

from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import CORRUPT_SEED_XOR

__all__ = ["Corrupt", "CorrelatedDecisions", "flipped"]


def flipped(frame: bytes, bit: int | None) -> bytes:
    """``frame`` with bit ``bit`` flipped (bit ``b`` is bit ``b % 8`` of byte ``b // 8``, as the
    beats carry byte 0 in their low bits); unchanged where ``bit`` is None."""
    if bit is None:
        return frame
    out = bytearray(frame)
    out[bit >> 3] ^= 1 << (bit & 7)
    return bytes(out)


class CorrelatedDecisions:
    """Yes/no decisions from xoshiro128++ streams of their own, seeded from ``seed`` xored with
    each of ``xors``, one draw of each stream a decision: the repeat ``r``, the decision ``u``
    and any more a caller uses. A decision repeats the last one when ``r >> 16 < corr``, else it
    is ``u < p``; so it is yes with probability p / 2^32 whatever the correlation, which only
    repeats decisions (lag-k correlation (corr / 2^16)^k). Corruption's and duplication's."""

    def __init__(self, seed: int, xors):
        self.xors = tuple(xors)
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.streams = [Xoshiro128pp(seed ^ x) for x in self.xors]
        self.last = False

    def decide(self, p: int, corr: int) -> tuple[bool, list[int]]:
        """The next decision, and the draws of the streams after the first two."""
        r, u, *rest = (s.next() for s in self.streams)
        self.last = self.last if r >> 16 < corr else u < p
        return self.last, rest


class Corrupt(CorrelatedDecisions):
    """A channel's corruption draws, one each from three xoshiro128++ streams for every frame
    it admits while ``cor_p`` is not 0, in admission order: the repeat ``r``, the decision ``u``
    and the bit ``b`` (CorrelatedDecisions). A corrupted frame of n bytes has bit ``(b x 8n)
    >> 32`` flipped, uniform over the frame's bits to within 8n / 2^32."""

    def __init__(self, seed: int):
        super().__init__(seed, CORRUPT_SEED_XOR)

    def draw(self, regs, length: int) -> int | None:
        """The bit the next admitted frame of ``length`` bytes has flipped under ``regs`` (its
        cor_* values), or None."""
        hit, (b,) = self.decide(regs.cor_p, regs.cor_corr)
        return (b * 8 * length) >> 32 if hit else None
