# SPDX-License-Identifier: BSD-2-Clause
"""satemu.base.pcapng: what the writer puts out, read back by the reader and by tshark (Debian's
Wireshark), block by block; the reader's errors on files that are not pcapng or are cut short."""

import shutil
import struct
import subprocess

import pytest

from satemu.base.pcapng import (ERR_CRC, INBOUND, OUTBOUND, PcapngError, PcapngWriter,
    embed_secrets, read_pcapng)

TSHARK = shutil.which("tshark") or "tshark"        # make's set-up installs it (Debian's)


def sample(path):
    with PcapngWriter(path, comment="a test section") as w:
        a = w.interface("portA-in", "into port A", fcslen=4)
        b = w.interface("portB-out", "out of port B", tsresol_exp=6)
        w.secrets(b"CLIENT_RANDOM 00 11\n")
        w.packet(a, 1_000_000_123, b"\x01" * 61, flags=INBOUND | ERR_CRC, comments=("dropped",))
        w.packet(b, 7, b"\x02\x03", orig_len=100, flags=OUTBOUND)
        w.packet(a, (1 << 40) + 5, b"", comments=("one", "two"))


def test_what_is_written_reads_back(tmp_path):
    path = tmp_path / "a.pcapng"
    sample(path)
    cap = read_pcapng(path)
    assert cap.comments == ["a test section"] and cap.application == "satemu"
    assert [(i.name, i.description, i.ticks_per_second, i.fcslen) for i in cap.interfaces] == [
        ("portA-in", "into port A", 10**9, 4), ("portB-out", "out of port B", 10**6, None)]
    assert cap.secrets == [(0x544C534B, b"CLIENT_RANDOM 00 11\n")]
    p = cap.packets
    assert [(x.interface, x.timestamp, x.data, x.orig_len, x.flags, x.comments) for x in p] == [
        (0, 1_000_000_123, b"\x01" * 61, 61, INBOUND | ERR_CRC, ["dropped"]),
        (1, 7, b"\x02\x03", 100, OUTBOUND, []),
        (0, (1 << 40) + 5, b"", 0, None, ["one", "two"])]
    assert cap.time_ns(p[0]) == 1_000_000_123 and cap.time_ns(p[1]) == 7000
    assert p[0].direction == INBOUND and p[2].direction == 0


def test_a_big_endian_section_reads_the_same(tmp_path):
    """A section written the other way round (the reader follows the byte-order magic)."""
    def block(kind, body):
        n = 12 + len(body)
        return struct.pack(">II", kind, n) + body + struct.pack(">I", n)
    shb = block(0x0A0D0D0A, struct.pack(">IHHq", 0x1A2B3C4D, 1, 0, -1))
    idb = block(1, struct.pack(">HHI", 1, 0, 0) + struct.pack(">HH", 9, 1) + b"\x09\0\0\0"
                + struct.pack(">HH", 0, 0))
    epb = block(6, struct.pack(">IIIII", 0, 0, 42, 3, 3) + b"abc\0")
    path = tmp_path / "be.pcapng"
    path.write_bytes(shb + idb + epb)
    cap = read_pcapng(path)
    assert cap.interfaces[0].ticks_per_second == 10**9
    assert [(x.timestamp, x.data) for x in cap.packets] == [(42, b"abc")]


@pytest.mark.parametrize("cut", [1, 11, 27, 40, -1, -4])
def test_a_cut_file_is_refused_with_where(tmp_path, cut):
    path = tmp_path / "a.pcapng"
    sample(path)
    whole = path.read_bytes()
    path.write_bytes(whole[:cut])
    with pytest.raises(PcapngError, match="byte"):
        read_pcapng(path)


def test_a_file_cut_in_its_last_block_reads_up_to_it_when_allowed(tmp_path):
    path = tmp_path / "a.pcapng"
    sample(path)
    whole = path.read_bytes()
    last = len(whole) - len(read_last_block(whole))
    path.write_bytes(whole[:-5])
    cap = read_pcapng(path, allow_truncated=True)
    assert cap.truncated_at == last and len(cap.packets) == 2
    path.write_bytes(whole[:20])                  # not even a section header: refused
    with pytest.raises(PcapngError, match="cut short"):
        read_pcapng(path, allow_truncated=True)


def read_last_block(data: bytes) -> bytes:
    length = struct.unpack_from("<I", data, len(data) - 4)[0]
    return data[-length:]


def test_statistics_and_secrets_embedded_afterwards(tmp_path):
    """An Interface Statistics Block reads back; secrets embedded into a finished file land
    after the interface descriptions, ahead of every packet, and tshark still reads it."""
    path = tmp_path / "a.pcapng"
    with PcapngWriter(path) as w:
        i = w.interface("eth0")
        w.packet(i, 5, b"\xff" * 60, flags=OUTBOUND)
        w.statistics(i, 9, received=7, dropped=1, comments=('{"frames": 1}',))
    embed_secrets(path, b"CLIENT_TRAFFIC_SECRET_0 aa bb\n")
    data = path.read_bytes()
    kinds = []
    pos = 0
    while pos < len(data):
        kind, length = struct.unpack_from("<II", data, pos)
        kinds.append(kind)
        pos += length
    assert kinds == [0x0A0D0D0A, 1, 0x0A, 6, 5]
    cap = read_pcapng(path)
    assert cap.secrets == [(0x544C534B, b"CLIENT_TRAFFIC_SECRET_0 aa bb\n")]
    st = cap.statistics[0]
    assert (st.interface, st.timestamp, st.received, st.dropped, st.comments) == \
        (0, 9, 7, 1, ['{"frames": 1}'])
    out = subprocess.run([TSHARK, "-r", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 1


def test_not_pcapng(tmp_path):
    path = tmp_path / "x.pcapng"
    path.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(20))          # a classic pcap header
    with pytest.raises(PcapngError, match="not a pcapng"):
        read_pcapng(path)
    path.write_bytes(b"")
    with pytest.raises(PcapngError, match="empty"):
        read_pcapng(path)


def test_the_writer_refuses_what_pcapng_cannot_hold(tmp_path):
    with PcapngWriter(tmp_path / "a.pcapng") as w:
        with pytest.raises(ValueError, match="interface 0"):
            w.packet(0, 0, b"")
        i = w.interface("x")
        with pytest.raises(ValueError, match="timestamp"):
            w.packet(i, -1, b"")
        with pytest.raises(ValueError, match="timestamp"):
            w.packet(i, 1 << 64, b"")


def test_tshark_reads_every_field(tmp_path):
    path = tmp_path / "a.pcapng"
    sample(path)
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=|",
         "-e", "frame.interface_name", "-e", "frame.time_epoch", "-e", "frame.len",
         "-e", "frame.cap_len", "-e", "frame.comment", "-e", "frame.packet_flags_direction"],
        capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [line.split("|") for line in out]
    assert [r[0] for r in rows] == ["portA-in", "portB-out", "portA-in"]
    assert rows[0][1].startswith("1.000000123") and rows[1][1].startswith("0.000007000")
    assert [(r[2], r[3]) for r in rows] == [("61", "61"), ("100", "2"), ("0", "0")]
    assert rows[0][4] == "dropped" and rows[2][4] == "one,two"
    assert rows[0][5] in ("1", "0x1", "0x00000001") and rows[1][5] in ("2", "0x2", "0x00000002")
