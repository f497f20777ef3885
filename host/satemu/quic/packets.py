# SPDX-License-Identifier: BSD-2-Clause
"""Ethernet II / IPv4 / UDP frames that carry one QUIC datagram each, built and checked in full."""

# A frame here is what the emulator's channels carry (see satemu.base.ether): destination MAC to the
# end of the payload, without preamble or FCS. Frames shorter than the 60-byte Ethernet minimum
# are zero-padded; the IPv4 total length tells the real size. Checksums follow RFC 791 (IPv4
# header) and RFC 768 (UDP, over the pseudo-header). No IP options, no fragments. A frame to or
# from an endpoint on a VLAN carries its 802.1Q tag (TPID 0x8100, priority 0) after the MACs.

from __future__ import annotations

import functools
import ipaddress
import struct
from dataclasses import dataclass

from satemu.base.ether import MIN_FRAME

__all__ = ["Endpoint", "CLIENT", "SERVER", "build_frame", "parse_frame", "internet_checksum",
           "ETHERTYPE_IPV4", "ETHERTYPE_VLAN", "IPPROTO_UDP", "HEADERS_BYTES", "MAX_FRAME",
           "MAX_UDP_PAYLOAD"]

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_VLAN = 0x8100
VLAN_TAG_BYTES = 4
IPPROTO_UDP = 17
ETH_HEADER_BYTES = 14
IPV4_HEADER_BYTES = 20                  # IHL 5: no options
UDP_HEADER_BYTES = 8
HEADERS_BYTES = ETH_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_HEADER_BYTES    # 42
MAX_FRAME = 1514                        # a 1518-byte Ethernet frame less its FCS (1500-byte MTU)
MAX_UDP_PAYLOAD = MAX_FRAME - HEADERS_BYTES                                # 1472
TTL = 64
FLAG_DF = 0x4000                        # don't fragment: QUIC sets it (RFC 9000 section 14)

_ETH = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")


@dataclass(frozen=True)
class Endpoint:
    """Where one side of the link lives: its MAC, IPv4 address and UDP port, and the VLAN its
    frames are tagged with (None: untagged)."""

    mac: bytes
    ipv4: str
    port: int
    vlan: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.mac, bytes) or len(self.mac) != 6:
            raise ValueError(f"MAC must be 6 bytes, got {self.mac!r}")
        if self.vlan is not None and (isinstance(self.vlan, bool) or not isinstance(
                self.vlan, int) or not 1 <= self.vlan <= 4094):
            raise ValueError(f"VLAN ID {self.vlan!r} is out of range (1..4094)")
        ipaddress.IPv4Address(self.ipv4)            # raises ValueError on a bad address
        if not 0 < self.port < 65536:
            raise ValueError(f"UDP port {self.port} is out of range")

    @property
    def addr(self) -> tuple[str, int]:
        """The network address as a QUIC connection sees it: (IPv4 address, UDP port)."""
        return (self.ipv4, self.port)

    @functools.cached_property
    def ip_bytes(self) -> bytes:
        return ipaddress.IPv4Address(self.ipv4).packed


# Locally administered unicast MACs (first octet 0x02): "SAT" then the host number.
CLIENT = Endpoint(mac=bytes.fromhex("025341540002"), ipv4="10.0.0.2", port=50000)  # terminal: A
SERVER = Endpoint(mac=bytes.fromhex("025341540001"), ipv4="10.0.0.1", port=4433)   # gateway: B


def internet_checksum(data: bytes) -> int:
    """The 16-bit one's complement of the one's complement sum of ``data`` (RFC 1071).

    The sum is taken at once: read as one big-endian integer N, the 16-bit words are its digits
    in base 2^16, and 2^16 = 1 modulo 0xFFFF, so their sum is N modulo 0xFFFF; the one's
    complement sum (end-around carries) is the representative in 1..0xFFFF, or 0 for no bits
    set (tests/host/test_packets.py holds it to the word-by-word sum)."""
    if len(data) % 2:
        data += b"\0"
    n = int.from_bytes(data, "big")
    return ~((n - 1) % 0xFFFF + 1) & 0xFFFF if n else 0xFFFF


def _udp_checksum(src_ip: bytes, dst_ip: bytes, udp: bytes) -> int:
    """The UDP checksum over the pseudo-header and ``udp`` (header with a zero checksum field)."""
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, IPPROTO_UDP, len(udp))
    check = internet_checksum(pseudo + udp)
    return check or 0xFFFF              # zero means "no checksum" in IPv4, so send all ones


def build_frame(src: Endpoint, dst: Endpoint, payload: bytes, ip_id: int,
                ecn: int = 0) -> bytes:
    """An Ethernet II frame (no FCS) carrying ``payload`` in one UDP datagram from src to dst,
    tagged with the VLAN of ``src``, else of ``dst`` (a terminal's, both ways), if either has
    one; ``ecn``: its IPv4 header's ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE)."""
    udp_length = UDP_HEADER_BYTES + len(payload)
    total_length = IPV4_HEADER_BYTES + udp_length
    if total_length > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes does not fit in one IPv4 packet")
    if not 0 <= ip_id <= 0xFFFF:
        raise ValueError(f"IPv4 identification {ip_id} is not a 16-bit value")
    src_ip, dst_ip = src.ip_bytes, dst.ip_bytes

    udp_header = _UDP.pack(src.port, dst.port, udp_length, 0)
    check = _udp_checksum(src_ip, dst_ip, udp_header + payload)
    udp_header = _UDP.pack(src.port, dst.port, udp_length, check)

    ip_header = _IPV4.pack(0x45, ecn & 3, total_length, ip_id, FLAG_DF, TTL, IPPROTO_UDP, 0,
                           src_ip, dst_ip)
    ip_header = ip_header[:10] + struct.pack("!H", internet_checksum(ip_header)) + ip_header[12:]

    vlan = src.vlan if src.vlan is not None else dst.vlan
    tag = b"" if vlan is None else struct.pack("!HH", ETHERTYPE_VLAN, vlan)
    frame = (dst.mac + src.mac + tag + struct.pack("!H", ETHERTYPE_IPV4) + ip_header + udp_header
             + payload)
    return frame.ljust(MIN_FRAME, b"\0")


ECN_NAMES = ("not-ect", "ect1", "ect0", "ce")          # an IPv4 header's ECN field, by value


def ecn_of(frame: bytes) -> str | None:
    """The ECN field of an IPv4 frame's header (untagged or in one 802.1Q tag), by its name
    (:data:`ECN_NAMES`); None for a frame too short to hold it or not IPv4."""
    at = ETH_HEADER_BYTES + (VLAN_TAG_BYTES if frame[12:14] == struct.pack("!H", ETHERTYPE_VLAN)
                             else 0)
    if len(frame) < at + 2 or frame[at - 2:at] != struct.pack("!H", ETHERTYPE_IPV4):
        return None
    return ECN_NAMES[frame[at + 1] & 3]


def parse_frame(frame: bytes) -> tuple[Endpoint, Endpoint, bytes]:
    """(source, destination, payload) of a frame from :func:`build_frame`, both endpoints with
    its VLAN if it is tagged; ValueError if bad."""
    if len(frame) < ETH_HEADER_BYTES + IPV4_HEADER_BYTES:
        raise ValueError(f"truncated frame: {len(frame)} bytes cannot hold Ethernet and IPv4 "
                         "headers")
    dst_mac, src_mac, ethertype = _ETH.unpack_from(frame, 0)
    eth, vlan = ETH_HEADER_BYTES, None
    if ethertype == ETHERTYPE_VLAN:
        tci, ethertype = struct.unpack_from("!HH", frame, 14)
        eth, vlan = ETH_HEADER_BYTES + VLAN_TAG_BYTES, tci & 0xFFF
        if not 1 <= vlan <= 4094:
            raise ValueError(f"802.1Q tag with VLAN ID {vlan}")
    if ethertype != ETHERTYPE_IPV4:
        raise ValueError(f"EtherType 0x{ethertype:04x} is not IPv4 (0x0800)")

    ip = frame[eth:eth + IPV4_HEADER_BYTES]
    (ver_ihl, _tos, total_length, _ip_id, flags_frag, _ttl, protocol, _check,
     src_ip, dst_ip) = _IPV4.unpack(ip)
    if ver_ihl >> 4 != 4:
        raise ValueError(f"IP version {ver_ihl >> 4} is not 4")
    if ver_ihl & 0xF != 5:
        raise ValueError(f"IPv4 IHL {ver_ihl & 0xF} is not 5 (options are not supported)")
    if internet_checksum(ip) != 0:
        raise ValueError("bad IPv4 header checksum")
    if flags_frag & 0x3FFF:
        raise ValueError("fragmented IPv4 packets are not supported")
    if protocol != IPPROTO_UDP:
        raise ValueError(f"IPv4 protocol {protocol} is not UDP (17)")
    if total_length < IPV4_HEADER_BYTES + UDP_HEADER_BYTES:
        raise ValueError(f"IPv4 total length {total_length} is too short for a UDP datagram")
    end = eth + total_length
    if len(frame) < end:
        raise ValueError(f"truncated frame: IPv4 total length {total_length} needs {end} bytes, "
                         f"frame has {len(frame)}")
    if len(frame) != max(end, MIN_FRAME):
        raise ValueError(f"frame has {len(frame) - end} bytes after the IPv4 packet "
                         "beyond the minimum-length padding")

    udp = frame[eth + IPV4_HEADER_BYTES:end]
    src_port, dst_port, udp_length, udp_check = _UDP.unpack_from(udp, 0)
    if udp_length != len(udp):
        raise ValueError(f"UDP length {udp_length} does not match the IPv4 payload of "
                         f"{len(udp)} bytes")
    if udp_check == 0:
        raise ValueError("UDP checksum absent (zero)")
    if internet_checksum(src_ip + dst_ip + struct.pack("!BBH", 0, IPPROTO_UDP, udp_length)
                         + udp) != 0:
        raise ValueError("bad UDP checksum")

    return (_endpoint(src_mac, src_ip, src_port, vlan), _endpoint(dst_mac, dst_ip, dst_port, vlan),
            udp[UDP_HEADER_BYTES:])


@functools.lru_cache(maxsize=4096)
def _endpoint(mac: bytes, ip: bytes, port: int, vlan: int | None) -> Endpoint:
    """The Endpoint of a frame's MAC, IPv4 address (4 bytes), port and VLAN: one object for the
    same four (Endpoint is frozen), so a run's frames do not parse their addresses each."""
    return Endpoint(mac, str(ipaddress.IPv4Address(ip)), port, vlan)
