# SPDX-License-Identifier: BSD-2-Clause
"""ECN marking, ingress half: whether the channel can mark a frame, and how (IPv4 or IPv6, 802.1Q
tagged or not); bit-exact with ``satemu.model.ecn.ecn_kind``."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from satemu.base.ether import (ECN_IPV4 as IPV4, ECN_IPV6 as IPV6, ECN_VLAN as VLAN, ETHER_IPV4,
    ETHER_IPV6)
from satemu.base.terminals import VLAN_TPID as ETHER_VLAN

from .layouts import Beat


class EcnParse(wiring.Component):
    """Watches a frame's beats as the ingress takes them (``beat`` in a cycle of ``take``) and,
    in the cycle of its last beat, gives its ``kind`` (``satemu.model.ecn.ecn_kind``): IPV4 or
    IPV6, with VLAN, for an ECN-capable IP packet long enough to mark, else 0. ``length`` is the
    frame's bytes with this beat's (valid on its last)."""

    beat: In(Beat)
    take: In(1)
    length: In(17)
    kind: Out(3)

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(4))            # beats of this frame taken before this one (to 3)
        b1, b2 = Signal(64), Signal(64)
        with m.If(self.take):
            with m.If(self.beat.last):
                m.d.sync += count.eq(0)
            with m.Elif(count < 3):
                m.d.sync += count.eq(count + 1)
            with m.If(count == 1):
                m.d.sync += b1.eq(self.beat.data)
            with m.If(count == 2):
                m.d.sync += b2.eq(self.beat.data)
        w1 = Mux(count == 1, self.beat.data, b1)
        w2 = Mux(count == 2, self.beat.data, b2)
        frame = Cat(w1, w2)                 # bytes 8..23, byte 8 in bits 7..0
        byte = {8 + i: frame[8 * i:8 * i + 8] for i in range(16)}

        def word(first):
            return Cat(byte[first + 1], byte[first])

        tagged = (self.length >= 14) & (word(12) == ETHER_VLAN)
        ip = {0: 14, 1: 18}
        kinds = []
        for vlan in (0, 1):
            at = ip[vlan]
            ether = word(at - 2)
            version = byte[at][4:]
            v4 = ((ether == ETHER_IPV4) & (self.length >= at + 12) & (version == 4)
                  & (byte[at + 1][:2] != 0))
            v6 = ((ether == ETHER_IPV6) & (self.length >= at + 2) & (version == 6)
                  & (byte[at + 1][4:6] != 0))
            kinds.append(Mux(v4, IPV4 | VLAN * vlan, Mux(v6, IPV6 | VLAN * vlan, 0)))
        m.d.comb += self.kind.eq(Mux(tagged, kinds[1], kinds[0]))
        return m
