# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of the gateware PRNG (xoshiro128++), seeded from a 64-bit seed."""

MASK32 = 0xFFFF_FFFF
SEED_MIX = (0x9E37_79B9, 0x6A09_E667)


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & MASK32


def seed_state(seed: int) -> tuple[int, int, int, int]:
    """The 128-bit state the gateware loads from a 64-bit seed; never all zero."""
    s0 = seed & MASK32
    s1 = (seed >> 32) & MASK32
    return (s0, s1, s0 ^ SEED_MIX[0], s1 ^ SEED_MIX[1])


class Xoshiro128pp:
    """xoshiro128++: one 32-bit draw per call, bit-exact with ``satemu_gw.prng.Prng``."""

    def __init__(self, seed: int):
        self.s = list(seed_state(seed))

    def next(self) -> int:
        s0, s1, s2, s3 = self.s
        result = (_rotl((s0 + s3) & MASK32, 7) + s0) & MASK32
        t = (s1 << 9) & MASK32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 11)
        self.s = [s0, s1, s2, s3]
        return result
