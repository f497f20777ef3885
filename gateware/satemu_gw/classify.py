# SPDX-License-Identifier: BSD-2-Clause
"""Frame classifier: whose frame it is, by its MAC address or VLAN ID (satemu.base.terminals)."""

from amaranth import Module, Signal, Mux, Cat
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.terminals import MATCH_MAC, MATCH_VLAN, UNCLASSIFIED_DROP, VLAN_TPID

from .layouts import Beat


class Classifier(wiring.Component):
    """Watches a frame's beats as the ingress takes them (``beat`` in a cycle of ``take``) and,
    in the cycle of its last beat, says whose it is (``satemu.base.terminals.frame_key`` and
    ``TerminalTable.classify``): ``known`` and ``terminal``, the first of the ``n`` terminals
    with frames whose ``keys`` entry is the frame's key, else the ``unclassified`` one (not
    ``known`` where that is ``UNCLASSIFIED_DROP``, or where ``match`` is 0). The key is the
    source MAC address with ``source`` (port A's frames), else the destination's, or the VLAN
    ID of an 802.1Q tag; a frame too short to hold it, or untagged, has none. A key is a 48-bit
    number, the frame's first byte of it most significant."""

    def __init__(self, terminals: int, source: bool):
        self.terminals = terminals
        self.source = source
        super().__init__({
            "beat": In(Beat),
            "take": In(1),
            "length": In(17),       # the frame's bytes with this beat's (valid on its last)
            "match": In(2),
            "n": In(range(terminals + 1)),
            "unclassified": In(8),
            "keys": In(data.ArrayLayout(48, terminals)),
            "known": Out(1),
            "terminal": Out(6),
        })

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(3))            # beats of this frame taken before this one
        b0, b1 = Signal(64), Signal(64)
        with m.If(self.take):
            with m.If(self.beat.last):
                m.d.sync += count.eq(0)
            with m.Elif(count < 2):
                m.d.sync += count.eq(count + 1)
            with m.If(count == 0):
                m.d.sync += b0.eq(self.beat.data)
            with m.If(count == 1):
                m.d.sync += b1.eq(self.beat.data)
        w0 = Mux(count == 0, self.beat.data, b0)
        w1 = Mux(count == 1, self.beat.data, b1)
        frame = Cat(w0, w1)                 # bytes 0..15, byte 0 in bits 7..0
        byte = [frame[8 * i:8 * i + 8] for i in range(16)]

        def big_endian(first, n):
            return Cat(*reversed(byte[first:first + n]))

        key = Signal(48)
        has = Signal()
        at = 6 if self.source else 0
        with m.If(self.match == MATCH_MAC):
            m.d.comb += [key.eq(big_endian(at, 6)), has.eq(self.length >= at + 6)]
        with m.Elif(self.match == MATCH_VLAN):
            m.d.comb += [key.eq(Cat(byte[15], byte[14][:4])),
                         has.eq((self.length >= 16) & (big_endian(12, 2) == VLAN_TPID))]
        hit = Signal()
        index = Signal(6)
        for i in reversed(range(self.terminals)):
            with m.If(has & (i < self.n) & (self.keys[i] == key)):
                m.d.comb += [hit.eq(1), index.eq(i)]
        given = self.unclassified != UNCLASSIFIED_DROP
        m.d.comb += [self.known.eq((self.match != 0) & (hit | given)),
                     self.terminal.eq(Mux(hit, index, self.unclassified))]
        return m
