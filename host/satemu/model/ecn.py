# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of ECN marking's two halves: which frames a channel can mark
(``satemu_gw.ecnparse.EcnParse``) and the bytes of a frame marked CE (``satemu_gw.ecnmark``),
bit-exact with them."""

from __future__ import annotations

__all__ = ["IPV4", "IPV6", "VLAN", "ecn_kind", "ce_marked", "describe_kind"]

from satemu.base.ether import (ECN_IPV4 as IPV4, ECN_IPV6 as IPV6, ECN_VLAN as VLAN, ETHER_IPV4,
    ETHER_IPV6)
from satemu.base.terminals import VLAN_TPID as ETHER_VLAN


def ecn_kind(frame: bytes) -> int:
    """How a channel may mark ``frame`` (its bytes from the destination address, no FCS): IPV4
    or IPV6, with VLAN where one 802.1Q tag precedes the IP header, for an ECN-capable packet
    (its ECN field not 00) whose header reaches the bytes marking changes (an IPv4 header's
    checksum, an IPv6 header's traffic class); 0 for any other frame."""
    ip, vlan = 14, 0
    if len(frame) >= 14 and int.from_bytes(frame[12:14], "big") == ETHER_VLAN:
        ip, vlan = 18, VLAN
    ether = int.from_bytes(frame[ip - 2:ip], "big") if len(frame) >= ip else 0
    if ether == ETHER_IPV4 and len(frame) >= ip + 12 and frame[ip] >> 4 == 4:
        return IPV4 | vlan if frame[ip + 1] & 3 else 0
    if ether == ETHER_IPV6 and len(frame) >= ip + 2 and frame[ip] >> 4 == 6:
        return IPV6 | vlan if frame[ip + 1] >> 4 & 3 else 0
    return 0


def ce_marked(frame: bytes, kind: int) -> bytes:
    """``frame`` with its ECN field set to CE (11), as the delay line's writer stores a frame
    the channel marks (``kind``: ``ecn_kind``'s): an IPv4 header's checksum updated by RFC 1624's
    equation 3, HC' = ~(~HC + ~m + m'), m and m' the 16-bit word that holds the field before and
    after; an IPv6 header has no checksum. Unchanged where ``kind`` is 0."""
    if not kind:
        return frame
    out = bytearray(frame)
    ip = 18 if kind & VLAN else 14
    if kind & IPV4:
        old = out[ip] << 8 | out[ip + 1]
        out[ip + 1] |= 0x03
        new = out[ip] << 8 | out[ip + 1]
        check = out[ip + 10] << 8 | out[ip + 11]
        s = (~check & 0xFFFF) + (~old & 0xFFFF) + new
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        out[ip + 10:ip + 12] = (~s & 0xFFFF).to_bytes(2, "big")
    else:
        out[ip + 1] |= 0x30
    return bytes(out)


def describe_kind(kind: int) -> str:
    """A markable frame's kind in words, for captures."""
    return ("IPv4" if kind & IPV4 else "IPv6") + (" in an 802.1Q tag" if kind & VLAN else "")
