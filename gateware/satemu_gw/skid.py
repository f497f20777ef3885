# SPDX-License-Identifier: BSD-2-Clause
"""Skid buffer: a stream register whose ready, like its valid and payload, is a flip-flop."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


class SkidBuffer(wiring.Component):
    """Passes ``sink`` to ``source`` one cycle later, at a transfer per cycle. Neither
    ``sink.ready`` nor anything on ``source`` depends combinationally on the other side, so
    the logic on either side of it meets the clock on its own (the channel puts one before
    the DRAM controller's command port). Order and content are kept; a payload offered while
    the output is stalled waits in the skid register."""

    def __init__(self, shape):
        super().__init__({
            "sink": In(stream.Signature(shape)),
            "source": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        skid_valid = Signal()
        skid = Signal.like(self.sink.payload)
        take = self.sink.valid & self.sink.ready
        m.d.comb += self.sink.ready.eq(~skid_valid)
        with m.If(self.source.ready | ~self.source.valid):
            # The output register is free (or leaves this cycle): refill it, from the skid
            # register first.
            with m.If(skid_valid):
                m.d.sync += [self.source.payload.eq(skid), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.source.payload.eq(self.sink.payload), self.source.valid.eq(take)]
        with m.Elif(take):
            m.d.sync += [skid.eq(self.sink.payload), skid_valid.eq(1)]
        return m
