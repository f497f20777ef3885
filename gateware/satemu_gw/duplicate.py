# SPDX-License-Identifier: BSD-2-Clause
"""Duplication: whether a frame is copied; bit-exact with the model."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import DUPLICATE_SEED_XOR

from .prng import seeded_streams


class Duplicate(wiring.Component):
    """The duplication of ``satemu.model.duplicate.Duplicate``, a draw at a time.

    A ``draw`` strobe in cycle d takes one draw of each of the two streams (the repeat, the
    decision). From cycle d + 1 until the next draw's d + 1, ``hit`` says whether the frame is
    copied. ``load`` reseeds the streams from ``seed`` (xored with DUPLICATE_SEED_XOR) and
    forgets the last decision.
    """

    p: In(32)
    corr: In(16)
    seed: In(64)
    load: In(1)
    draw: In(1)
    hit: Out(1)

    def elaborate(self, platform):
        m = Module()
        streams = seeded_streams(m, DUPLICATE_SEED_XOR, self.seed, self.load, self.draw)
        r, u = streams
        last = Signal()
        hit = Mux(r[16:] < self.corr, last, u < self.p)
        with m.If(self.load):
            m.d.sync += last.eq(0)
        with m.Elif(self.draw):
            m.d.sync += [last.eq(hit), self.hit.eq(hit)]
        return m
