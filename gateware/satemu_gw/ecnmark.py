# SPDX-License-Identifier: BSD-2-Clause
"""ECN marking, writer half: a marked frame's beats with its ECN field set to CE and, in IPv4,
its header checksum updated; bit-exact with ``satemu.model.ecn.ce_marked``."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from satemu.base.ether import ECN_IPV4 as IPV4, ECN_VLAN as VLAN


def _ones_sum(*values):
    """One's complement sum of 16-bit values (their carries folded back twice)."""
    s = sum(values)
    s = s[:16] + s[16:]
    return (s[:16] + s[16:])[:16]


class EcnMark(wiring.Component):
    """A frame's beats as the writer stores them: ``data`` of beat ``index`` (from 0) in, ``out``
    the same beat of the frame marked CE where ``mark`` (its ``kind``: ``ecn_kind``'s), else
    ``data``. ``take`` in the cycle a beat is stored keeps the IPv4 header's first word (beat 1
    untagged, beat 2 in an 802.1Q tag), which the checksum in beat 3 is updated from."""

    data: In(64)
    index: In(9)
    take: In(1)
    mark: In(1)
    kind: In(3)
    out: Out(64)

    def elaborate(self, platform):
        m = Module()
        vlan = self.kind[2]                # (VLAN)
        v4 = (self.kind & IPV4) != 0
        assert VLAN == 4
        # The beat and bit of the IP header's first two bytes: bytes 14..15 (beat 1, bits
        # 48..63) or 18..19 (beat 2, bits 16..31).
        tos_beat = Mux(vlan, 2, 1)
        first = Mux(vlan, self.data[16:32], self.data[48:64])      # byte at + 0 in bits 7..0
        old = Signal(16)                    # that word, big-endian, before marking
        with m.If(self.take & (self.index == tos_beat)):
            m.d.sync += old.eq(Cat(first[8:], first[:8]))
        new = old | 0x0003
        # The checksum: bytes 24..25 (beat 3, bits 0..15) or 28..29 (beat 3, bits 32..47).
        raw = Mux(vlan, self.data[32:48], self.data[0:16])
        check = Cat(raw[8:], raw[:8])
        updated = ~_ones_sum(~check & 0xFFFF, ~old & 0xFFFF, new) & 0xFFFF
        wire = Cat(updated[8:], updated[:8])
        out = Signal(64)
        m.d.comb += out.eq(self.data)
        with m.If(self.mark & (self.index == tos_beat)):
            # IPv4: the TOS byte's ECN bits (bits 0, 1 of byte at + 1); IPv6: the traffic
            # class's (bits 4, 5 of byte at + 1).
            ecn = Mux(v4, 0x03, 0x30)
            with m.If(vlan):
                m.d.comb += out[24:32].eq(self.data[24:32] | ecn)
            with m.Else():
                m.d.comb += out[56:64].eq(self.data[56:64] | ecn)
        with m.If(self.mark & v4 & (self.index == 3)):
            with m.If(vlan):
                m.d.comb += out[32:48].eq(wire)
            with m.Else():
                m.d.comb += out[0:16].eq(wire)
        m.d.comb += self.out.eq(out)
        return m
