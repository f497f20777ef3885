# SPDX-License-Identifier: BSD-2-Clause
"""Ethernet/IPv4/UDP framing of QUIC datagrams: round trip, known-answer checksums, rejections."""

import struct

import pytest

from satemu.quic.packets import (CLIENT, SERVER, Endpoint, build_frame, internet_checksum,
                                 parse_frame)


def ones_complement_checksum(data: bytes) -> int:
    """RFC 791/768 checksum written independently of the module: 16-bit words, end-around carry."""
    if len(data) % 2:
        data = data + b"\x00"
    acc = 0
    for i in range(0, len(data), 2):
        acc += (data[i] << 8) | data[i + 1]
        acc = (acc & 0xFFFF) + (acc >> 16)
    return 0xFFFF ^ acc


def test_checksum_known_answer():
    # A header often used to teach RFC 791 (192.168.0.1 -> 192.168.0.199, UDP, total length 115):
    # with the checksum field zeroed its checksum is 0xB861, worked out by hand.
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert ones_complement_checksum(header) == 0xB861
    assert internet_checksum(header) == 0xB861
    assert internet_checksum(b"\x01") == ones_complement_checksum(b"\x01")


def test_checksum_equals_the_word_by_word_sum():
    """The sum taken at once (packets.internet_checksum) against the word-by-word one: random
    data of every length to 64 and frame sizes, and the edges: no bits set, all set, words that
    sum to a multiple of 0xFFFF."""
    import random
    rng = random.Random(5)
    cases = [b"", b"\0", bytes(20), b"\xff" * 20, b"\xff\xff", b"\x00\x01\xff\xfe",
             b"\x80\x00" * 2, b"\xff\xfe\x00\x01", b"\x12\x34" * 0xFFFF]
    cases += [rng.randbytes(n) for n in list(range(65)) * 20 + [1472, 1500, 9000] * 50]
    cases += [bytes(rng.choice((0, 0xFF)) for _ in range(n)) for n in range(1, 40)]
    for data in cases:
        assert internet_checksum(data) == ones_complement_checksum(data), data.hex()


def test_round_trip():
    payload = bytes(range(256)) * 5 + b"tail"
    frame = build_frame(CLIENT, SERVER, payload, ip_id=7)
    assert len(frame) == 14 + 20 + 8 + len(payload)
    src, dst, got = parse_frame(frame)
    assert (src, dst, got) == (CLIENT, SERVER, payload)
    src, dst, got = parse_frame(build_frame(SERVER, CLIENT, b"", ip_id=0xFFFF))
    assert (src, dst, got) == (SERVER, CLIENT, b"")


def test_frame_fields_against_hand_built_frame():
    payload = b"satemu quic known-answer test payload!\x01"  # odd length: checksum pads a 0
    frame = build_frame(CLIENT, SERVER, payload, ip_id=0x1234)

    # Hand-built expectation, field by field, with the test's own checksum helper.
    src_ip, dst_ip = bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])
    udp_len = 8 + len(payload)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0x1234, 0x4000, 64, 17, 0,
                               src_ip, dst_ip))
    ip[10:12] = ones_complement_checksum(bytes(ip)).to_bytes(2, "big")
    udp = bytearray(struct.pack("!HHHH", 50000, 4433, udp_len, 0) + payload)
    pseudo = src_ip + dst_ip + bytes([0, 17]) + udp_len.to_bytes(2, "big")
    udp[6:8] = ones_complement_checksum(pseudo + bytes(udp)).to_bytes(2, "big")
    eth = SERVER.mac + CLIENT.mac + b"\x08\x00"
    assert frame == eth + bytes(ip) + bytes(udp)

    # and the checksums verify the way a receiver checks them: the sum over everything is 0
    assert ones_complement_checksum(frame[14:34]) == 0
    assert ones_complement_checksum(pseudo + frame[34:]) == 0


def test_small_frames_are_padded_to_60_bytes():
    frame = build_frame(CLIENT, SERVER, b"hi", ip_id=1)
    assert len(frame) == 60
    assert frame[14 + 20 + 8 + 2:] == bytes(60 - 44)
    assert struct.unpack_from("!H", frame, 16)[0] == 20 + 8 + 2       # IPv4 total length
    assert parse_frame(frame)[2] == b"hi"
    # exactly 18 bytes of payload fills the minimum frame with no padding
    assert len(build_frame(CLIENT, SERVER, bytes(18), ip_id=1)) == 60
    assert len(build_frame(CLIENT, SERVER, bytes(19), ip_id=1)) == 61


def _corrupt(frame: bytes, offset: int, xor: int = 0x01) -> bytes:
    return frame[:offset] + bytes([frame[offset] ^ xor]) + frame[offset + 1:]


@pytest.mark.parametrize("mutate, message", [
    (lambda f: _corrupt(f, 24), "bad IPv4 header checksum"),             # the checksum field
    (lambda f: _corrupt(f, 22), "bad IPv4 header checksum"),             # TTL changed in transit
    (lambda f: _corrupt(f, 40), "bad UDP checksum"),                     # the UDP checksum field
    (lambda f: _corrupt(f, 60), "bad UDP checksum"),                     # one payload bit
    (lambda f: f[:12] + b"\x86\xdd" + f[14:], r"EtherType 0x86dd is not IPv4"),
    (lambda f: f[:-1], "truncated frame: IPv4 total length"),
    (lambda f: f[:20], "truncated frame: 20 bytes"),
    (lambda f: f + b"\0", "1 bytes after the IPv4 packet"),
])
def test_rejections(mutate, message):
    frame = build_frame(SERVER, CLIENT, bytes(range(100)), ip_id=99)
    parse_frame(frame)
    with pytest.raises(ValueError, match=message):
        parse_frame(mutate(frame))


def test_rejects_other_protocols_and_bad_headers():
    frame = bytearray(build_frame(SERVER, CLIENT, b"x" * 30, ip_id=5))

    def with_ip_field(offset: int, value: bytes) -> bytes:
        f = bytearray(frame)
        f[offset:offset + len(value)] = value
        f[24:26] = b"\0\0"
        f[24:26] = ones_complement_checksum(bytes(f[14:34])).to_bytes(2, "big")
        return bytes(f)

    with pytest.raises(ValueError, match="protocol 6 is not UDP"):
        parse_frame(with_ip_field(23, b"\x06"))
    with pytest.raises(ValueError, match="IP version 6"):
        parse_frame(with_ip_field(14, b"\x65"))
    with pytest.raises(ValueError, match="IHL 6"):
        parse_frame(with_ip_field(14, b"\x46"))
    with pytest.raises(ValueError, match="fragmented"):
        parse_frame(with_ip_field(20, b"\x20\x00"))                     # more-fragments flag
    f = bytearray(frame)
    f[38:40] = (8 + 29).to_bytes(2, "big")                              # UDP length one short
    with pytest.raises(ValueError, match="UDP length 37 does not match"):
        parse_frame(bytes(f))


def test_endpoint_validation():
    with pytest.raises(ValueError, match="6 bytes"):
        Endpoint(mac=b"\x02", ipv4="10.0.0.1", port=1)
    with pytest.raises(ValueError):
        Endpoint(mac=bytes(6), ipv4="10.0.0.300", port=1)
    with pytest.raises(ValueError, match="out of range"):
        Endpoint(mac=bytes(6), ipv4="10.0.0.1", port=70000)
    assert CLIENT.mac != SERVER.mac and all(m[0] & 0x03 == 0x02 for m in (CLIENT.mac, SERVER.mac))
    assert SERVER.addr == ("10.0.0.1", 4433) and CLIENT.addr == ("10.0.0.2", 50000)


def test_a_vlan_endpoints_frames_carry_its_tag_both_ways():
    """A terminal on a VLAN: its frames, and the server's to it, carry the 802.1Q tag after the
    MACs (TPID 0x8100, priority 0); parsing gives the payload and the VLAN back; the box's
    classifier reads the same tag."""
    from satemu.base.terminals import MATCH_VLAN, frame_key
    host = Endpoint(CLIENT.mac, CLIENT.ipv4, CLIENT.port, 100)
    for src, dst in ((host, SERVER), (SERVER, host)):
        frame = build_frame(src, dst, b"\x40" * 1472, 9)
        assert frame[12:16] == b"\x81\x00\x00\x64" and frame[16:18] == b"\x08\x00"
        assert len(frame) == 1518 == len(build_frame(CLIENT, SERVER, b"\x40" * 1472, 9)) + 4
        s, d, payload = parse_frame(frame)
        assert (s.addr, d.addr, s.vlan, d.vlan, payload) == (src.addr, dst.addr, 100, 100,
                                                             b"\x40" * 1472)
        assert frame_key(frame, MATCH_VLAN, source=src is host) == 100
    assert len(build_frame(host, SERVER, b"x", 1)) == 60                # padded as untagged
    with pytest.raises(ValueError, match="VLAN ID"):
        Endpoint(CLIENT.mac, CLIENT.ipv4, CLIENT.port, 4095)
    bad = bytearray(build_frame(host, SERVER, b"x" * 40, 1))
    bad[14:16] = b"\x00\x00"
    with pytest.raises(ValueError, match="VLAN ID 0"):
        parse_frame(bytes(bad))
