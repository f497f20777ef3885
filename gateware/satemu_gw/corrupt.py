# SPDX-License-Identifier: BSD-2-Clause
"""Corruption: whether an admitted frame has a bit flipped, and which; bit-exact with the model."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import CORRUPT_SEED_XOR

from .prng import seeded_streams

BIT_BITS = 15           # a bit of a frame of up to 4095 bytes (a header's 12-bit length)


class Corrupt(wiring.Component):
    """The corruption of ``satemu.model.corrupt.Corrupt``, a draw at a time.

    A ``draw`` strobe in cycle d, with the frame's ``length``, takes one draw of each of the three
    streams (the repeat, the decision, the bit). From cycle d + 1 until the next draw's d + 1,
    ``flip`` says whether the frame has a bit flipped and ``bit`` which: ``(b x 8 length) >>
    32``. ``load`` reseeds the streams from ``seed`` (xored with CORRUPT_SEED_XOR) and forgets
    the last decision.
    """

    p: In(32)
    corr: In(16)
    seed: In(64)
    load: In(1)
    draw: In(1)
    length: In(12)
    flip: Out(1)
    bit: Out(BIT_BITS)

    def elaborate(self, platform):
        m = Module()
        streams = seeded_streams(m, CORRUPT_SEED_XOR, self.seed, self.load, self.draw)
        r, u, b = streams
        last = Signal()
        hit = Mux(r[16:] < self.corr, last, u < self.p)
        with m.If(self.load):
            m.d.sync += last.eq(0)
        with m.Elif(self.draw):
            m.d.sync += [last.eq(hit), self.flip.eq(hit),
                         self.bit.eq((b * (self.length << 3)) >> 32)]
        return m
