# SPDX-License-Identifier: BSD-2-Clause
"""Exact serialisation time of m bytes, m x (q + num/den) cycles, as a mixed number."""

from amaranth import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class SerTime(wiring.Component):
    """Sequential shift-and-reduce: one bit of ``m`` per cycle, most significant first.

    After ``start`` (with ``m``, ``q``, ``num``, ``den`` held stable), ``busy`` stays high for
    ``m_bits`` cycles; then ``ti + tf/den`` equals ``m * (q + num/den)`` with ``tf < den``. The
    invariant of each step is that ``I + X/den`` is the exact product with the bits seen so far, so
    no rounding happens at all.
    """

    def __init__(self, m_bits=12):
        self.m_bits = m_bits
        super().__init__({
            "start": In(1), "m": In(m_bits), "q": In(32), "num": In(32), "den": In(32),
            "busy": Out(1), "ti": Out(32 + m_bits), "tf": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self.m_bits + 1))
        shift = Signal(self.m_bits)
        bit = shift[-1]
        x2 = Signal(34)
        i2 = Signal(len(self.ti))
        m.d.comb += [
            x2.eq((self.tf << 1) + Mux(bit, self.num, 0)),
            i2.eq((self.ti << 1) + Mux(bit, self.q, 0)),
            self.busy.eq(count != 0),
        ]
        with m.If(self.start):
            m.d.sync += [count.eq(self.m_bits), shift.eq(self.m), self.ti.eq(0), self.tf.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += [count.eq(count - 1), shift.eq(shift << 1)]
            with m.If(x2 >= (self.den << 1)):
                m.d.sync += [self.tf.eq(x2 - (self.den << 1)), self.ti.eq(i2 + 2)]
            with m.Elif(x2 >= self.den):
                m.d.sync += [self.tf.eq(x2 - self.den), self.ti.eq(i2 + 1)]
            with m.Else():
                m.d.sync += [self.tf.eq(x2), self.ti.eq(i2)]
        return m
