# SPDX-License-Identifier: BSD-2-Clause
"""Free-running 64-bit cycle counter: the one clock every channel timestamp refers to."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out


class Timebase(wiring.Component):
    """``now`` counts system clock cycles from reset; 64 bits never wrap in practice. ``init``
    is its reset value (0; a test starts it short of 2^48, where the channel's 48-bit egress and
    departure cycles wrap)."""

    def __init__(self, init: int = 0):
        super().__init__({"now": Out(64, init=init)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.now.eq(self.now + 1)
        return m
