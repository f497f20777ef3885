# SPDX-License-Identifier: BSD-2-Clause
"""Per-frame jitter: a drawn entry of a table in block RAM, scaled; bit-exact with the model."""

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import (JITTER_INDEX_BITS as INDEX_BITS, JITTER_SEED_XOR, JITTER_SHIFT,
    JITTER_TABLE)

from .prng import Prng


class Jitter(wiring.Component):
    """The jitter of ``satemu.model.jitter.Jitter``, a draw at a time.

    A ``draw`` strobe in cycle d takes one 32-bit draw of the jitter's own xoshiro128++ stream:
    its low bits index the table bank ``bank``, unless its high 16 bits fall below ``corr``, when
    the last index repeats. From cycle d + 2 until the next draw's d + 2, ``offset`` is that
    entry times ``sigma``, shifted right by JITTER_SHIFT (rounded down): cycles to add to the
    frame's delay. ``load`` reseeds the stream from ``seed`` (xored with JITTER_SEED_XOR) and
    makes the last index 0. The table is written through ``w_*`` at once (``w_addr``: bank x
    JITTER_TABLE + index): the host writes only a bank not in force.
    """

    sigma: In(32)
    corr: In(16)
    bank: In(1)
    seed: In(64)
    load: In(1)
    draw: In(1)
    offset: Out(signed(16 + 33 - JITTER_SHIFT))
    w_en: In(1)
    w_addr: In(INDEX_BITS + 1)
    w_data: In(16)

    def elaborate(self, platform):
        m = Module()
        m.submodules.prng = prng = Prng(reset_seed=1 ^ JITTER_SEED_XOR)
        m.submodules.table = table = Memory(shape=signed(16), depth=2 * JITTER_TABLE, init=[])
        wr = table.write_port()
        rd = table.read_port(transparent_for=())
        m.d.comb += [wr.en.eq(self.w_en), wr.addr.eq(self.w_addr), wr.data.eq(self.w_data)]

        last = Signal(INDEX_BITS)
        index = Signal(INDEX_BITS)
        repeat = prng.out[16:] < self.corr
        m.d.comb += [index.eq(Mux(repeat, last, prng.out[:INDEX_BITS])),
                     rd.addr.eq(Cat(index, self.bank)),
                     prng.seed.eq(self.seed ^ Const(JITTER_SEED_XOR, 64)),
                     prng.load.eq(self.load), prng.next.eq(self.draw & ~self.load)]
        with m.If(self.load):
            m.d.sync += last.eq(0)
        with m.Elif(self.draw):
            m.d.sync += last.eq(index)
        drawn = Signal()
        product = Signal(signed(16 + 33))
        m.d.sync += drawn.eq(self.draw & ~self.load)
        with m.If(drawn):
            m.d.sync += product.eq(rd.data * Cat(self.sigma, Const(0, 1)).as_signed())
        m.d.comb += self.offset.eq(product >> JITTER_SHIFT)
        return m

