# SPDX-License-Identifier: BSD-2-Clause
"""Simulation top for one channel: the channel plus its timebase, with ``now`` visible."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from satemu.base.params import ChannelParams
from satemu_gw.channel import Channel, channel_ports
from satemu_gw.timebase import Timebase


class ChannelTop(wiring.Component):
    """The channel's ports, except that ``now`` comes from the top's own timebase, which starts
    at ``params.now_init``."""

    def __init__(self, params: ChannelParams):
        self.params = params
        super().__init__({**channel_ports(params), "now": Out(64)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.timebase = tb = Timebase(self.params.now_init)
        m.submodules.channel = ch = Channel(self.params)
        wiring.connect(m, wiring.flipped(self.sink), ch.sink)
        wiring.connect(m, ch.source, wiring.flipped(self.source))
        wiring.connect(m, ch.mem, wiring.flipped(self.mem))
        wiring.connect(m, wiring.flipped(self.bus), ch.bus)
        m.d.comb += [ch.now.eq(tb.now), self.now.eq(tb.now),
                     self.fate_valid.eq(ch.fate_valid), self.fate.eq(ch.fate),
                     self.fate_copy.eq(ch.fate_copy),
                     self.arrived.eq(ch.arrived), self.overrun.eq(ch.overrun)]
        return m
