# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of a channel's corruption (``satemu_gw.corrupt.Corrupt``), bit-exact with it."""

from __future__ import annotations

from satemu.base.prng import Xoshiro128pp
from satemu.base.regmap import CORRUPT_SEED_XOR

__all__ = ["Corrupt", "flipped"]


def flipped(frame: bytes, bit: int | None) -> bytes:
    """``frame`` with bit ``bit`` flipped (bit ``b`` is bit ``b % 8`` of byte ``b // 8``, as the
    beats carry byte 0 in their low bits); unchanged where ``bit`` is None."""
    if bit is None:
        return frame
    out = bytearray(frame)
    out[bit >> 3] ^= 1 << (bit & 7)
    return bytes(out)


class Corrupt:
    """A channel's corruption draws, one each from three xoshiro128++ streams for every frame
    it admits while ``cor_p`` is not 0, in admission order: the repeat ``r``, the decision ``u``
    and the bit ``b``. The frame repeats the last frame's decision when ``r >> 16 < cor_corr``,
    else it is corrupted when ``u < cor_p``; a corrupted frame of n bytes has bit ``(b x 8n) >>
    32`` flipped. So each frame is corrupted with probability cor_p / 2^32 whatever the
    correlation, which only repeats decisions (lag-k correlation (cor_corr / 2^16)^k), and the
    bit is uniform over the frame's bits to within 8n / 2^32."""

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.streams = [Xoshiro128pp(seed ^ x) for x in CORRUPT_SEED_XOR]
        self.last = False

    def draw(self, regs, length: int) -> int | None:
        """The bit the next admitted frame of ``length`` bytes has flipped under ``regs`` (its
        cor_* values), or None."""
        r, u, b = (s.next() for s in self.streams)
        hit = self.last if r >> 16 < regs.cor_corr else u < regs.cor_p
        self.last = hit
        return (b * 8 * length) >> 32 if hit else None
