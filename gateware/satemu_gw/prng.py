# SPDX-License-Identifier: BSD-2-Clause
"""xoshiro128++ PRNG: one 32-bit draw per cycle, bit-exact with ``satemu.base.prng``'s model."""

from amaranth import Cat, Module, Signal, Const
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from satemu.base.prng import SEED_MIX, seed_state


def _rotl(x, k):
    return Cat(x[32 - k:], x[:32 - k])


class Prng(wiring.Component):
    """``out`` is the current draw; ``next`` advances; ``load`` reseeds from ``seed``."""

    seed: In(64)
    load: In(1)
    next: In(1)
    out: Out(32)

    def __init__(self, reset_seed=1):
        self._reset = seed_state(reset_seed)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        s = [Signal(32, name=f"s{i}", init=v) for i, v in enumerate(self._reset)]
        m.d.comb += self.out.eq(_rotl((s[0] + s[3])[:32], 7) + s[0])
        t = (s[1] << 9)[:32]
        s2 = s[2] ^ s[0]
        s3 = s[3] ^ s[1]
        s1 = s[1] ^ s2
        s0 = s[0] ^ s3
        with m.If(self.load):
            lo, hi = self.seed[:32], self.seed[32:]
            m.d.sync += [s[0].eq(lo), s[1].eq(hi),
                         s[2].eq(lo ^ Const(SEED_MIX[0], 32)),
                         s[3].eq(hi ^ Const(SEED_MIX[1], 32))]
        with m.Elif(self.next):
            m.d.sync += [s[0].eq(s0), s[1].eq(s1), s[2].eq(s2 ^ t), s[3].eq(_rotl(s3, 11))]
        return m


def seeded_streams(m: Module, xors, seed, load, draw) -> list:
    """Streams of their own for a block (corruption's, duplication's): a Prng a value of
    ``xors``, each seeded from ``seed`` xored with it (at reset from 1 xored with it), reloaded by
    ``load`` and advanced by ``draw`` (not while loading); their present draws."""
    out = []
    for i, xor in enumerate(xors):
        m.submodules[f"prng{i}"] = prng = Prng(reset_seed=1 ^ xor)
        m.d.comb += [prng.seed.eq(seed ^ Const(xor, 64)), prng.load.eq(load),
                     prng.next.eq(draw & ~load)]
        out.append(prng.out)
    return out
