# SPDX-License-Identifier: BSD-2-Clause
"""Simulation top for one channel: the channel plus its timebase, with ``now`` visible."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.channel_model import ChannelParams
from satemu_gw.channel import Channel
from satemu_gw.layouts import Beat, MemPortSignature, RegBusSignature
from satemu_gw.timebase import Timebase


class ChannelTop(wiring.Component):
    def __init__(self, params: ChannelParams):
        self.params = params
        super().__init__({
            "sink": In(stream.Signature(Beat)),
            "source": Out(stream.Signature(Beat)),
            "mem": Out(MemPortSignature(params.addr_width)),
            "bus": In(RegBusSignature),
            "now": Out(64),
            "fate_valid": Out(1),
            "fate": Out(3),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.timebase = tb = Timebase()
        m.submodules.channel = ch = Channel(self.params)
        wiring.connect(m, wiring.flipped(self.sink), ch.sink)
        wiring.connect(m, ch.source, wiring.flipped(self.source))
        wiring.connect(m, ch.mem, wiring.flipped(self.mem))
        wiring.connect(m, wiring.flipped(self.bus), ch.bus)
        m.d.comb += [ch.now.eq(tb.now), self.now.eq(tb.now),
                     self.fate_valid.eq(ch.fate_valid), self.fate.eq(ch.fate)]
        return m
