# SPDX-License-Identifier: BSD-2-Clause
"""Ethernet on the wire: preamble, SFD and FCS around a frame, and the checks a MAC makes.

A *frame* here is what the channels carry and count: destination MAC to the end of the payload,
without preamble or FCS. On the wire it becomes ``PREAMBLE + frame + FCS`` (IEEE 802.3 clause 3).
"""

from __future__ import annotations

import struct
import zlib

PREAMBLE = b"\x55" * 7 + b"\xd5"      # seven preamble octets and the start-of-frame delimiter
FCS_BYTES = 4
MIN_FRAME = 60                         # shortest frame without FCS; a MAC pads shorter ones
IFG_BYTES = 12
WIRE_OVERHEAD = len(PREAMBLE) + FCS_BYTES + IFG_BYTES   # 24: what a frame costs beyond its bytes
ETHER_IPV4, ETHER_IPV6 = 0x0800, 0x86DD                 # EtherTypes
# A frame ECN marking can mark (satemu.model.ecn.ecn_kind): its IP version, and an 802.1Q tag.
ECN_IPV4, ECN_IPV6, ECN_VLAN = 1, 2, 4


def fcs(frame: bytes) -> bytes:
    """The frame check sequence: CRC-32 of the frame, least significant byte first."""
    return struct.pack("<I", zlib.crc32(frame))


def to_wire(frame: bytes, bad_fcs: bool = False, bad_preamble: bool = False) -> bytes:
    """The bytes a PHY puts on the wire for ``frame``; optionally with a corrupt FCS or preamble."""
    check = fcs(frame)
    if bad_fcs:
        check = bytes([check[0] ^ 0xFF]) + check[1:]
    pre = PREAMBLE if not bad_preamble else PREAMBLE[:-1] + b"\x55"   # no SFD
    return pre + frame + check


def from_wire(wire: bytes) -> tuple[bytes, bool]:
    """Split wire bytes into the frame and whether its preamble and FCS are both right."""
    if len(wire) < len(PREAMBLE) + FCS_BYTES:
        return b"", False
    frame, check = wire[len(PREAMBLE):-FCS_BYTES], wire[-FCS_BYTES:]
    return frame, wire[:len(PREAMBLE)] == PREAMBLE and fcs(frame) == check


def padded(frame: bytes) -> bytes:
    """The frame as a transmitting MAC sends it: zero-padded to the 60-byte minimum."""
    return frame.ljust(MIN_FRAME, b"\0")
