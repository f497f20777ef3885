# SPDX-License-Identifier: BSD-2-Clause
"""AF_PACKET captures on an interface, as pcapng, read back as frames and aligned with an
endpoint's log."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from satemu.base.ether import MIN_FRAME
from satemu.quic.packets import (CLIENT, ETHERTYPE_IPV4, ETHERTYPE_VLAN, HEADERS_BYTES,
    IPPROTO_UDP, SERVER, internet_checksum)

__all__ = ["capture", "CapturedFrame", "read_capture", "align_log"]

# Linux constants the socket module does not export (x86-64 and the generic ABI).
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUXDATA = struct.Struct("=IIIHHHH")    # struct tpacket_auxdata
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
SNAPLEN = 65535                 # whole frames: Wireshark decrypts QUIC in them
SNAPLEN_HEAD = 64               # what read_capture parses: the Ethernet, IPv4 and UDP headers
CAPTURE_RCVBUF = 32 << 20


def _clock_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of a few bracketed readings."""
    best = None
    for _ in range(5):
        a = time.monotonic_ns()
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.monotonic_ns()
        if best is None or b - a < best[0]:
            best = (b - a, real - (a + b) // 2)
    return best[1]


def capture(ifname: str, out: "str | Path", ready: "str | Path | None" = None,
            snaplen: int = SNAPLEN, should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Record every frame on ``ifname`` until ``should_stop()`` (checked at least every 0.2 s),
    as pcapng in ``out`` (satemu.base.pcapng): one interface, ``ifname``, at nanosecond resolution;
    each frame's first ``snaplen`` bytes and its length, its direction in ``epb_flags`` (2:
    this namespace sent it, PACKET_OUTGOING; 1: received); at the end an Interface Statistics
    Block with the kernel's packet and drop counts. The section's comment is a JSON object:
    ``capture`` (the interface), ``pid``, ``snaplen``, ``realtime_offset_ns`` (CLOCK_REALTIME
    minus CLOCK_MONOTONIC when the capture started) and ``start_ns`` (CLOCK_MONOTONIC); the
    statistics block's comment holds the trailer: ``end_ns``, ``frames``, ``kernel_packets``,
    ``kernel_drops``, ``user_stamps``. Creates ``ready`` once the socket is bound.

    The length is the frame without FCS (AF_PACKET never sees it). An 802.1Q tag the kernel
    keeps beside the frame (VLAN offload: PACKET_AUXDATA) is put back after the MACs, as the
    wire carries it. The time is the kernel's
    receive stamp (SO_TIMESTAMPNS, CLOCK_REALTIME); when a stamp is missing or implausible (not
    within 5 s before the moment it was read) the read time is used instead (on the same clock)
    and counted in the trailer as ``user_stamps``.
    """
    from satemu.base.pcapng import INBOUND, OUTBOUND, PcapngWriter
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    with sock:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, CAPTURE_RCVBUF)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CAPTURE_RCVBUF)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        sock.bind((ifname, ETH_P_ALL))
        sock.setblocking(False)               # drop what arrived before bind (any interface)
        with contextlib.suppress(BlockingIOError):
            while True:
                sock.recv(1)
        sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)      # reading resets the counters
        sock.settimeout(0.2)
        offset = _clock_offset_ns()
        header = {"capture": ifname, "pid": os.getpid(), "snaplen": snaplen,
                  "realtime_offset_ns": offset, "start_ns": time.monotonic_ns()}
        w = PcapngWriter(out, comment=json.dumps(header))
        iface = w.interface(ifname, "captured by satemu's real-time sniffer (AF_PACKET)",
                            snaplen=snaplen)
        w.flush()
        if ready is not None:
            Path(ready).write_text(f"{os.getpid()}\n", encoding="utf-8")
        buf = bytearray(snaplen)
        ancsize = socket.CMSG_SPACE(16) + socket.CMSG_SPACE(_AUXDATA.size)
        frames = user_stamps = 0

        def one() -> None:
            nonlocal frames, user_stamps
            nbytes, anc, _flags, addr = sock.recvmsg_into([buf], ancsize, socket.MSG_TRUNC)
            read_at = time.clock_gettime_ns(time.CLOCK_REALTIME)
            stamp = tag = None
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS and len(data) >= 16:
                    sec, nsec = struct.unpack_from("=qq", data)
                    stamp = sec * 1_000_000_000 + nsec
                elif level == SOL_PACKET and kind == PACKET_AUXDATA and \
                        len(data) >= _AUXDATA.size:
                    status, *_, tci, tpid = _AUXDATA.unpack_from(data)
                    if status & TP_STATUS_VLAN_VALID:
                        tag = struct.pack("!HH", tpid if status & TP_STATUS_VLAN_TPID_VALID
                                          else 0x8100, tci)
            if stamp is None or not read_at - 5_000_000_000 <= stamp <= read_at + 1_000_000:
                stamp = read_at
                user_stamps += 1
            frame = bytes(buf[:min(nbytes, snaplen)])
            if tag is not None and len(frame) >= 12:
                frame, nbytes = (frame[:12] + tag + frame[12:])[:snaplen], nbytes + len(tag)
            w.packet(iface, stamp, frame, orig_len=nbytes,
                     flags=OUTBOUND if addr[2] == PACKET_OUTGOING else INBOUND)
            frames += 1

        try:
            while not should_stop():
                try:
                    one()
                except TimeoutError:
                    pass
            sock.setblocking(False)               # what is still queued
            with contextlib.suppress(BlockingIOError):
                while True:
                    one()
            packets, drops = struct.unpack("=II",
                                           sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            trailer = {"end_ns": time.monotonic_ns(), "frames": frames,
                       "kernel_packets": packets, "kernel_drops": drops,
                       "user_stamps": user_stamps}
            w.statistics(iface, time.clock_gettime_ns(time.CLOCK_REALTIME), received=packets,
                         dropped=drops, comments=(json.dumps(trailer),))
        finally:
            w.close()
    return trailer


@dataclass(frozen=True)
class CapturedFrame:
    """An IPv4/UDP frame between the two endpoints' addresses, from a capture file."""

    t_ns: int
    outgoing: bool              # pkttype PACKET_OUTGOING: sent from the capturing namespace
    length: int                 # captured frame bytes (no FCS, not padded)
    size: int                   # length padded to the 60-byte Ethernet minimum: what a wire carries
    src: str
    dst: str
    sport: int
    dport: int
    udp_size: int               # UDP payload bytes (the QUIC datagram)
    vlan: Optional[int] = None  # its 802.1Q tag's VLAN ID, if tagged
    digest: Optional[bytes] = None  # of its UDP payload, when captured whole: the datagram's
                                    # identity at both ends of the link


def _parse_head(head: bytes, length: int, pairs: frozenset) -> Optional[tuple]:
    """(src, dst, sport, dport, udp payload size) of an IPv4/UDP frame between the two hosts
    of one of ``pairs`` (each a frozenset of two addresses);
    None if it is some other traffic; ValueError if it is between them but malformed.

    The checks of packets.parse_frame that the first 64 bytes allow: EtherType, version, IHL 5,
    header checksum, no fragments, protocol, lengths. The UDP checksum cannot be checked (the
    payload is not captured; outgoing frames on offloading interfaces do not carry it yet).
    """
    tagged = len(head) >= 16 and struct.unpack_from("!H", head, 12)[0] == ETHERTYPE_VLAN
    eth = 18 if tagged else 14
    if len(head) < HEADERS_BYTES + eth - 14 or \
            struct.unpack_from("!H", head, eth - 2)[0] != ETHERTYPE_IPV4:
        return None
    ip = head[eth:eth + 20]
    if ip[0] >> 4 != 4 or ip[9] != IPPROTO_UDP:
        return None
    src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
    if frozenset((src, dst)) not in pairs:
        return None
    if ip[0] & 0xF != 5:
        raise ValueError("IPv4 options are not supported")
    if internet_checksum(ip) != 0:
        raise ValueError("bad IPv4 header checksum")
    total_length, flags_frag = struct.unpack_from("!HxxH", ip, 2)
    if flags_frag & 0x3FFF:
        raise ValueError("fragmented IPv4 packet")
    sport, dport, udp_length = struct.unpack_from("!HHH", head, eth + 20)
    if total_length < 28 or eth + total_length > length or udp_length != total_length - 20:
        raise ValueError("IPv4/UDP lengths do not match the frame")
    if length > max(eth + total_length, MIN_FRAME):
        raise ValueError("bytes after the IPv4 packet beyond the minimum-length padding")
    return src, dst, sport, dport, udp_length - 8


def read_capture(path: "str | Path", hosts: tuple[str, str] = (CLIENT.ipv4, SERVER.ipv4),
                 pairs: "set[tuple[str, str]] | None" = None
                 ) -> tuple[list[CapturedFrame], dict]:
    """The IPv4/UDP frames between ``hosts`` (or any of ``pairs`` of hosts) in a capture file
    (:func:`capture`'s pcapng), in capture order, their times on CLOCK_MONOTONIC (the kernel's
    stamps less the offset the capture recorded), and a dict with the file's header and trailer
    and counts: ``frames`` (all captured), ``other`` (not between the hosts), ``undecodable``
    (between them but malformed; counted per direction too), ``truncated_at`` (where a sniffer
    killed mid-write cut the file short, else None). A file that is not such a capture raises
    ValueError."""
    from satemu.base.pcapng import OUTBOUND, read_pcapng
    cap = read_pcapng(path, allow_truncated=True)
    frames: list[CapturedFrame] = []
    meta: dict = {"header": None, "trailer": None, "frames": 0, "other": 0, "undecodable": 0,
                  "undecodable_in": 0, "undecodable_out": 0, "truncated_at": cap.truncated_at}
    try:
        meta["header"] = json.loads(cap.comments[0])
        offset = int(meta["header"]["realtime_offset_ns"])
    except (IndexError, ValueError, KeyError, TypeError):
        raise ValueError(f"{path}: not a capture of satemu's sniffer (its section comment "
                         "holds no header)") from None
    for st in cap.statistics:
        with contextlib.suppress(IndexError, ValueError):
            meta["trailer"] = json.loads(st.comments[0])
    pair = frozenset(frozenset(p) for p in (pairs if pairs is not None else [hosts]))
    for p in cap.packets:
        meta["frames"] += 1
        outgoing = p.direction == OUTBOUND
        try:
            parsed = _parse_head(p.data[:SNAPLEN_HEAD], p.orig_len, pair)
        except ValueError:
            meta["undecodable"] += 1
            meta["undecodable_out" if outgoing else "undecodable_in"] += 1
            continue
        if parsed is None:
            meta["other"] += 1
            continue
        src, dst, sport, dport, udp_size = parsed
        tagged = p.data[12:14] == ETHERTYPE_VLAN.to_bytes(2, "big")
        vlan = int.from_bytes(p.data[14:16], "big") & 0xFFF if tagged else None
        start = (18 if tagged else 14) + 28
        payload = p.data[start:start + udp_size]
        digest = hashlib.blake2b(payload, digest_size=12).digest() \
            if len(payload) == udp_size else None
        frames.append(CapturedFrame(cap.time_ns(p) - offset, outgoing, p.orig_len,
                                    max(p.orig_len, MIN_FRAME), src, dst, sport, dport,
                                    udp_size, vlan, digest))
    return frames, meta


def align_log(captured: list[CapturedFrame], logged: list) -> tuple[list[bool], dict]:
    """ACK-only per captured frame, from a sender's log matched by order and UDP size.

    Normally both lists are the same datagrams in the same order. When they are not (a datagram
    the kernel dropped before the interface, or one sent outside the log), a capture skips
    ahead over at most a few log entries to the next one of its size; unmatched frames get
    False. Returns the flags and counts: matched, log_only, capture_only.
    """
    flags, i, matched, capture_only = [], 0, 0, 0
    for frame in captured:
        j = next((k for k in range(i, min(i + 8, len(logged)))
                  if logged[k][1] == frame.udp_size), None)
        if j is None:
            flags.append(False)
            capture_only += 1
            continue
        flags.append(bool(logged[j][2]))
        matched += 1
        i = j + 1
    return flags, {"matched": matched, "log_only": len(logged) - matched,
                   "capture_only": capture_only}
