# SPDX-License-Identifier: BSD-2-Clause
"""satemu.quic.wire: QUIC packets read back from a run's capture with its TLS secrets equal what
aioquic told of the packets it sent, read quinn's through a key update, and refuse what they
cannot read in one line."""

import pytest

from satemu.base.pcapng import read_pcapng
from satemu.quic.engine import run_model_transfer
from satemu.quic.packets import parse_frame
from satemu.quic.wire import WireError, WireReader, frame_names

# The frames aioquic tracks for delivery, which are the ones it tells (satemu.quic.ackpolicy).
AIOQUIC_TOLD = {"ack", "stream", "crypto", "max_data", "max_streams", "max_stream_data",
                "handshake_done", "ping", "new_connection_id", "retire_connection_id",
                "path_challenge", "reset_stream", "stop_sending", "ack_frequency",
                "immediate_ack"}


def sent_datagrams(capture):
    """(sent by the client, UDP payload) of every datagram into the box, in each side's order:
    the client's into port A, the server's into port B."""
    cap = read_pcapng(capture)
    names = {i: iface.name for i, iface in enumerate(cap.interfaces)}
    out = []
    for packet in cap.packets:
        name = names[packet.interface]
        if name.endswith("-in"):
            fcs = cap.interfaces[packet.interface].fcslen    # each frame with its FCS
            out.append((name == "portA-in", parse_frame(packet.data[:-fcs])[2]))
    return out


def read_all(t, tmp_path):
    keys = (tmp_path / "keys.log").read_text()
    reader = WireReader(keys)
    data = sent_datagrams(tmp_path / "capture.pcapng")
    by_side = {True: [], False: []}
    for from_client, payload in data:
        by_side[from_client].append(reader.read(payload, from_client))
    return reader, by_side


def test_what_aioquic_told_is_what_its_packets_say(tmp_path):
    """Every datagram of an aioquic run that asks for ACK_FREQUENCY, read from the wire: the
    packet numbers, types and largest acknowledged aioquic told, and its frames (those it
    tracks)."""
    t = run_model_transfer("short-asym", 200_000, ack="ack-frequency:4",
                           pcap=tmp_path / "capture.pcapng")
    assert t.completed
    _, by_side = read_all(t, tmp_path)
    for direction, side in (("return", True), ("forward", False)):
        told = [f for r, f in zip(t.sent, t.fates) if r.direction == direction]
        assert len(told) == len(by_side[side])
        for f, read in zip(told, by_side[side]):
            assert (read.numbers, read.types, read.largest_acked) == \
                (f.numbers, f.types, f.largest_acked)
            kept = " ".join("+".join(k for k in p.split("+") if k in AIOQUIC_TOLD) or "-"
                            for p in read.frames.split())
            assert kept == f.frames
    frames = {k for reads in by_side.values() for r in reads
              for k in r.frames.replace("+", " ").split()}
    assert {"ack_frequency", "crypto", "stream", "ack", "handshake_done"} <= frames


def test_quinn_is_read_through_a_key_update(tmp_path):
    """quinn greases the QUIC bit and updates its keys after some hundreds of packets: its
    datagrams are read all the same, as the run's own fates hold them."""
    t = run_model_transfer("short-asym", 1_000_000, stacks="quinn",
                           pcap=tmp_path / "capture.pcapng")
    assert t.completed and t.wire_error is None
    reader, by_side = read_all(t, tmp_path)
    assert reader.key_updates >= 1
    for direction, side in (("return", True), ("forward", False)):
        fates = [f for r, f in zip(t.sent, t.fates) if r.direction == direction]
        assert [(f.numbers, f.types, f.frames, f.largest_acked) for f in fates] == \
            [r.astuple() for r in by_side[side]]


def test_what_cannot_be_read_is_one_line(tmp_path):
    t = run_model_transfer("short-asym", 20_000, pcap=tmp_path / "capture.pcapng")
    data = sent_datagrams(tmp_path / "capture.pcapng")
    first = next(p for side, p in data if side)
    server = next(p for side, p in data if not side)
    cases = [
        ("", None, (server, False), "before the client's first"),
        ("", first, (server, False), "no SERVER_HANDSHAKE_TRAFFIC_SECRET"),
        ("", first, (b"\xc0\x00", True), "runs past the datagram"),
        ("", b"\xe0\x00\x00\x00\x01\x00\x00\x00", None, "not an Initial"),
        ("", b"\x40" + bytes(20), None, "no QUIC header"),
        ("", first, (first[:40], True), "runs past the datagram"),
        ("", first, (b"\xc0\x00\x00\x00\x02" + bytes(8), True), "version 0x00000002"),
        ("", first, (first[:100] + bytes([first[100] ^ 1]) + first[101:], True), "does not open"),
        ("", first, (b"\x40" + bytes(20), True), "before any long header"),
        ("CLIENT_HANDSHAKE_TRAFFIC_SECRET 00 " + "ab" * 32, first, (first, True), None),
    ]
    for keylog, initial, datagram, message in cases:
        try:
            reader = WireReader(keylog, initial)
            if datagram is not None:
                reader.read(*datagram)
        except WireError as e:
            assert message is not None and message in str(e) and "\n" not in str(e), \
                (message, str(e))
        else:
            assert message is None, message
    with pytest.raises(WireError, match="frame type 0x21"):
        frame_names(b"\x21")
    with pytest.raises(WireError, match="past its packet"):
        frame_names(b"\x06\x00\x10abc")                 # CRYPTO of 16 bytes holding 3
    assert frame_names(b"\x01\x00\x00\x02\x05\x00\x00\x00") == (["ping", "ack"], 5)
