# SPDX-License-Identifier: BSD-2-Clause
"""pcapng files (draft-ietf-opsawg-pcapng): a writer for satemu's captures and a reader for them
and for captures taken by other tools.

The writer puts out one section: a Section Header Block, an Interface Description Block per
interface (link type, snap length, ``if_tsresol``, ``if_fcslen``), Enhanced Packet Blocks
(``epb_flags`` for direction and link-layer errors, ``opt_comment`` for free text) and
Decryption Secrets Blocks (a TLS key log, so that Wireshark decrypts QUIC without a side file).
It is written here rather than taken from a library: python-pcapng 2.1.1 wrote 25,600 packets a
second where this writer writes over 300,000 (docs/architecture.md, "Captures"), and neither it
nor scapy's writer (whose timestamps are in microseconds) writes a Decryption Secrets Block.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable

__all__ = ["LINKTYPE_ETHERNET", "INBOUND", "OUTBOUND", "ERR_CRC", "ERR_TOO_LONG", "ERR_TOO_SHORT",
           "ERR_PREAMBLE", "ERR_SFD", "PcapngWriter", "Interface", "Packet", "Capture",
           "read_pcapng", "embed_secrets", "PcapngError", "Statistics"]

LINKTYPE_ETHERNET = 1

# Block types.
SHB, IDB, SPB, ISB, EPB, DSB = (0x0A0D0D0A, 0x00000001, 0x00000003, 0x00000005, 0x00000006,
                                0x0000000A)
BYTE_ORDER_MAGIC = 0x1A2B3C4D
SECRETS_TLS_KEY_LOG = 0x544C534B

# Option codes (general, SHB, IDB, EPB).
OPT_END, OPT_COMMENT = 0, 1
SHB_HARDWARE, SHB_OS, SHB_USERAPPL = 2, 3, 4
IF_NAME, IF_DESCRIPTION, IF_TSRESOL, IF_FCSLEN, IF_TSOFFSET = 2, 3, 9, 13, 14
EPB_FLAGS = 2
ISB_IFRECV, ISB_IFDROP = 4, 5

# epb_flags: bits 0-1 the direction, bits 5-8 the FCS length, bits 16-31 link-layer errors.
INBOUND, OUTBOUND = 1, 2
ERR_CRC = 1 << 24
ERR_TOO_LONG = 1 << 25
ERR_TOO_SHORT = 1 << 26
ERR_SFD = 1 << 29
ERR_PREAMBLE = 1 << 30


class PcapngError(ValueError):
    """A file that is not pcapng, or is cut short or malformed; the message says where."""


def _pad4(n: int) -> int:
    return -n % 4


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * _pad4(len(value))


def _options(items: Iterable[tuple[int, bytes]]) -> bytes:
    body = b"".join(_option(code, value) for code, value in items)
    return body + struct.pack("<HH", OPT_END, 0) if body else b""


_EPB_HEAD = struct.Struct("<IIIIIII")      # block type and length, then the EPB's fields
_COMMENT_HEAD = struct.Struct("<HH")
_FLAGS = struct.Struct("<HHI")
_LENGTH = struct.Struct("<I")
_ZEROS = b"\0\0\0\0"


def _block(kind: int, body: bytes) -> bytes:
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


class PcapngWriter:
    """Writes a little-endian pcapng section to ``out`` (a path or a binary file object).
    Timestamps are integers in each interface's resolution (``tsresol_exp``: 10^-exp seconds,
    nanoseconds by default)."""

    def __init__(self, out: "str | Path | BinaryIO", application: str = "satemu",
                 comment: str | None = None, hardware: str | None = None):
        self._own = isinstance(out, (str, Path))
        self._f = open(out, "wb") if self._own else out
        self._interfaces = 0
        items = []
        if comment:
            items.append((OPT_COMMENT, comment.encode()))
        if hardware:
            items.append((SHB_HARDWARE, hardware.encode()))
        items.append((SHB_USERAPPL, application.encode()))
        # Version 1.0, section length unknown (-1).
        self._f.write(_block(SHB, struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)
                             + _options(items)))

    def interface(self, name: str, description: str = "", linktype: int = LINKTYPE_ETHERNET,
                  snaplen: int = 0, tsresol_exp: int = 9, fcslen: int | None = None) -> int:
        """Adds an interface; returns its id. ``fcslen``: the bytes of FCS every frame on it ends
        with (Wireshark then checks and strips them)."""
        if not 0 <= tsresol_exp < 128:
            raise ValueError("tsresol_exp: 0..127 (a power of ten)")
        items = [(IF_NAME, name.encode())]
        if description:
            items.append((IF_DESCRIPTION, description.encode()))
        items.append((IF_TSRESOL, bytes([tsresol_exp])))
        if fcslen is not None:
            items.append((IF_FCSLEN, bytes([fcslen])))
        self._f.write(_block(IDB, struct.pack("<HHI", linktype, 0, snaplen) + _options(items)))
        self._interfaces += 1
        return self._interfaces - 1

    def packet(self, interface: int, timestamp: int, data: bytes, orig_len: int | None = None,
               flags: int | None = None, comments: Iterable[str] = ()) -> None:
        """An Enhanced Packet Block: ``data`` as captured (``orig_len``: its length on the wire,
        when more than was captured), ``flags`` as ``epb_flags``, and comments."""
        if not 0 <= interface < self._interfaces:
            raise ValueError(f"interface {interface} was not added")
        if timestamp < 0 or timestamp >> 64:
            raise ValueError("timestamp: 0..2^64-1 in the interface's resolution")
        # The options written out here rather than through _options: this is the writer's
        # inner loop, a packet of every frame a co-simulation captures.
        opts = b""
        for c in comments:
            v = c.encode()
            opts += _COMMENT_HEAD.pack(OPT_COMMENT, len(v)) + v + _ZEROS[:-len(v) % 4]
        if flags is not None:
            opts += _FLAGS.pack(EPB_FLAGS, 4, flags)
        if opts:
            opts += _ZEROS
        n = len(data)
        length = 32 + n + (-n % 4) + len(opts)
        self._f.write(_EPB_HEAD.pack(EPB, length, interface, timestamp >> 32,
                                     timestamp & 0xFFFFFFFF, n, n if orig_len is None else orig_len)
                      + data + _ZEROS[:-n % 4] + opts + _LENGTH.pack(length))

    def statistics(self, interface: int, timestamp: int, received: int | None = None,
                   dropped: int | None = None, comments: Iterable[str] = ()) -> None:
        """An Interface Statistics Block: what the capturing system received (``isb_ifrecv``)
        and dropped (``isb_ifdrop``) on ``interface`` by ``timestamp``, and comments."""
        items = [(OPT_COMMENT, c.encode()) for c in comments]
        if received is not None:
            items.append((ISB_IFRECV, struct.pack("<Q", received)))
        if dropped is not None:
            items.append((ISB_IFDROP, struct.pack("<Q", dropped)))
        self._f.write(_block(ISB, struct.pack("<III", interface, timestamp >> 32,
                                              timestamp & 0xFFFFFFFF) + _options(items)))

    def flush(self) -> None:
        self._f.flush()

    def secrets(self, keylog: bytes) -> None:
        """A Decryption Secrets Block holding a TLS key log (SSLKEYLOGFILE lines). Wireshark
        takes the secrets that come before the packets they decrypt."""
        body = struct.pack("<II", SECRETS_TLS_KEY_LOG, len(keylog)) + keylog \
            + b"\0" * _pad4(len(keylog))
        self._f.write(_block(DSB, body))

    def close(self) -> None:
        if self._own:
            self._f.close()
        else:
            self._f.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- reading -----------------------------------------------------------------------------------
@dataclass
class Interface:
    linktype: int
    snaplen: int
    name: str = ""
    description: str = ""
    ticks_per_second: int = 1_000_000        # if_tsresol (10^6 unless the block says)
    offset_s: int = 0                        # if_tsoffset
    fcslen: int | None = None


@dataclass
class Packet:
    interface: int
    timestamp: int                           # in the interface's ticks
    data: bytes
    orig_len: int
    flags: int | None = None
    comments: list[str] = field(default_factory=list)

    def time_ns(self, iface: Interface) -> int:
        """Nanoseconds since the epoch (exact when the resolution divides a nanosecond)."""
        return iface.offset_s * 1_000_000_000 \
            + self.timestamp * 1_000_000_000 // iface.ticks_per_second

    @property
    def direction(self) -> int:
        return 0 if self.flags is None else self.flags & 3


@dataclass
class Statistics:
    interface: int
    timestamp: int
    received: int | None = None              # isb_ifrecv
    dropped: int | None = None               # isb_ifdrop
    comments: list[str] = field(default_factory=list)


@dataclass
class Capture:
    interfaces: list[Interface] = field(default_factory=list)
    packets: list[Packet] = field(default_factory=list)
    secrets: list[tuple[int, bytes]] = field(default_factory=list)   # (secrets type, data)
    comments: list[str] = field(default_factory=list)                 # the section's
    application: str = ""
    statistics: list[Statistics] = field(default_factory=list)
    truncated_at: int | None = None          # a file cut short: where (allow_truncated)

    def time_ns(self, p: Packet) -> int:
        return p.time_ns(self.interfaces[p.interface])


def _parse_options(raw: bytes, endian: str) -> list[tuple[int, bytes]]:
    out, i = [], 0
    while i + 4 <= len(raw):
        code, length = struct.unpack_from(endian + "HH", raw, i)
        i += 4
        if code == OPT_END:
            break
        if i + length > len(raw):
            raise PcapngError("an option runs past the end of its block")
        out.append((code, raw[i:i + length]))
        i += length + _pad4(length)
    return out


def _tsresol(value: int) -> int:
    return 2 ** (value & 0x7F) if value & 0x80 else 10 ** (value & 0x7F)


def read_pcapng(path: "str | Path", allow_truncated: bool = False) -> Capture:
    """Every block of a pcapng file that satemu uses: interfaces, enhanced and simple packets,
    interface statistics, decryption secrets, the section's comments. Both byte orders; a later
    section starts its interfaces afresh (their ids in ``packets`` are indices into
    ``interfaces`` as read). Raises PcapngError naming the byte offset where a file is not
    pcapng or is cut short; with ``allow_truncated``, a file whose last block is cut short (a
    writer killed mid-block) reads up to that block and says where in ``truncated_at``."""
    data = Path(path).read_bytes()
    cap = Capture()
    try:
        _read_blocks(data, str(path), cap)
    except _CutShort as e:
        if not allow_truncated or e.pos == 0:
            raise PcapngError(str(e)) from None
        cap.truncated_at = e.pos
    return cap


class _CutShort(PcapngError):
    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.pos = pos


def _read_blocks(data: bytes, path: str, cap: Capture) -> None:
    endian = "<"
    base = 0                                  # first interface index of the current section
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise _CutShort(f"{path}: cut short at byte {pos} (a block's header)", pos)
        kind_le = struct.unpack_from("<I", data, pos)[0]
        if kind_le == SHB:
            if len(data) - pos < 28:
                raise _CutShort(f"{path}: cut short at byte {pos} (a section header)", pos)
            magic = data[pos + 8:pos + 12]
            if magic == struct.pack("<I", BYTE_ORDER_MAGIC):
                endian = "<"
            elif magic == struct.pack(">I", BYTE_ORDER_MAGIC):
                endian = ">"
            else:
                raise PcapngError(f"{path}: byte {pos}: not a pcapng section header")
            base = len(cap.interfaces)
        elif pos == 0:
            raise PcapngError(f"{path}: not a pcapng file (no section header at byte 0)")
        kind, length = struct.unpack_from(endian + "II", data, pos)
        if length < 12 or length % 4:
            raise PcapngError(f"{path}: malformed at byte {pos} (a block of {length} bytes)")
        if pos + length > len(data):
            raise _CutShort(f"{path}: cut short at byte {pos} (a block of {length} bytes, "
                            f"{len(data) - pos} in the file)", pos)
        if struct.unpack_from(endian + "I", data, pos + length - 4)[0] != length:
            raise PcapngError(f"{path}: byte {pos}: a block's two lengths differ")
        body = data[pos + 8:pos + length - 4]
        if kind == SHB:
            opts = _parse_options(body[16:], endian)
            cap.comments += [v.decode(errors="replace") for c, v in opts if c == OPT_COMMENT]
            cap.application = next((v.decode(errors="replace") for c, v in opts
                                    if c == SHB_USERAPPL), cap.application)
        elif kind == IDB:
            linktype, _, snaplen = struct.unpack_from(endian + "HHI", body)
            iface = Interface(linktype, snaplen)
            for code, value in _parse_options(body[8:], endian):
                if code == IF_NAME:
                    iface.name = value.decode(errors="replace")
                elif code == IF_DESCRIPTION:
                    iface.description = value.decode(errors="replace")
                elif code == IF_TSRESOL and value:
                    iface.ticks_per_second = _tsresol(value[0])
                elif code == IF_FCSLEN and value:
                    iface.fcslen = value[0]
                elif code == IF_TSOFFSET and len(value) == 8:
                    iface.offset_s = struct.unpack(endian + "q", value)[0]
            cap.interfaces.append(iface)
        elif kind == EPB:
            if len(body) < 20:
                raise PcapngError(f"{path}: byte {pos}: an enhanced packet block too short")
            ifid, hi, lo, caplen, origlen = struct.unpack_from(endian + "IIIII", body)
            if 20 + caplen > len(body):
                raise PcapngError(f"{path}: byte {pos}: a packet runs past its block")
            if base + ifid >= len(cap.interfaces):
                raise PcapngError(f"{path}: byte {pos}: a packet on interface {ifid}, "
                                  "which the section does not describe")
            p = Packet(base + ifid, hi << 32 | lo, body[20:20 + caplen], origlen)
            for code, value in _parse_options(body[20 + caplen + _pad4(caplen):], endian):
                if code == OPT_COMMENT:
                    p.comments.append(value.decode(errors="replace"))
                elif code == EPB_FLAGS and len(value) == 4:
                    p.flags = struct.unpack(endian + "I", value)[0]
            cap.packets.append(p)
        elif kind == SPB:
            if base >= len(cap.interfaces):
                raise PcapngError(f"{path}: byte {pos}: a simple packet with no interface")
            origlen = struct.unpack_from(endian + "I", body)[0]
            snap = cap.interfaces[base].snaplen or origlen
            cap.packets.append(Packet(base, 0, body[4:4 + min(origlen, snap)], origlen))
        elif kind == ISB:
            ifid, hi, lo = struct.unpack_from(endian + "III", body)
            st = Statistics(base + ifid, hi << 32 | lo)
            for code, value in _parse_options(body[12:], endian):
                if code == OPT_COMMENT:
                    st.comments.append(value.decode(errors="replace"))
                elif code == ISB_IFRECV and len(value) == 8:
                    st.received = struct.unpack(endian + "Q", value)[0]
                elif code == ISB_IFDROP and len(value) == 8:
                    st.dropped = struct.unpack(endian + "Q", value)[0]
            cap.statistics.append(st)
        elif kind == DSB:
            stype, slen = struct.unpack_from(endian + "II", body)
            if 8 + slen > len(body):
                raise PcapngError(f"{path}: byte {pos}: secrets run past their block")
            cap.secrets.append((stype, body[8:8 + slen]))
        pos += length
    if not data:
        raise PcapngError(f"{path}: empty, not a pcapng file")


def embed_secrets(path: "str | Path", keylog: bytes) -> None:
    """Rewrites the little-endian pcapng file ``path`` (one section, as PcapngWriter and the
    real-time sniffer write) with a Decryption Secrets Block holding ``keylog`` straight after
    its section header and interface descriptions, ahead of every packet it decrypts."""
    path = Path(path)
    data = path.read_bytes()
    pos = 0
    while pos + 8 <= len(data):
        kind, length = struct.unpack_from("<II", data, pos)
        if kind not in (SHB, IDB) or length < 12:
            break
        pos += length
    if pos == 0:
        raise PcapngError(f"{path}: no section header to put the secrets after")
    dsb = _block(DSB, struct.pack("<II", SECRETS_TLS_KEY_LOG, len(keylog)) + keylog
                 + b"\0" * _pad4(len(keylog)))
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data[:pos] + dsb + data[pos:])
    tmp.replace(path)
