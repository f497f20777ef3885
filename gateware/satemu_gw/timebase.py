# SPDX-License-Identifier: BSD-2-Clause
"""Free-running 64-bit cycle counter: the one clock every channel timestamp refers to."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out


class Timebase(wiring.Component):
    """``now`` counts system clock cycles from reset; 64 bits never wrap in practice."""

    now: Out(64)

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.now.eq(self.now + 1)
        return m
