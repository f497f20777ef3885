# SPDX-License-Identifier: BSD-2-Clause
"""The protocol codec on both sides against one set of committed vectors, plus a bounded fuzz
pass of the firmware's deframer."""

import random
import shutil
import subprocess

import pytest

from command_layer import (BUILD, C_TESTS, PROFILE_CASES, PROTO, SANITIZERS, SOURCES, VECTORS,
                           case_hardware, compile_c, run_command_layer, write_headers)
import fuzzing
from satemu.model import framelog as L
from satemu.base import protocol as P
from satemu.base.records import unpack_record
from satemu.base.params import ChannelRegs
from satemu.base.validate import profile_fields


def test_crc_known_answer():
    assert P.crc16(b"123456789") == 0x29B1


def test_python_codec_matches_vectors():
    for v in VECTORS["crc16"]:
        assert P.crc16(bytes.fromhex(v["data"])) == v["crc"]
    for v in VECTORS["cobs"]:
        raw, enc = bytes.fromhex(v["raw"]), bytes.fromhex(v["encoded"])
        assert P.cobs_encode(raw) == enc
        assert P.cobs_decode(enc) == raw
    for v in VECTORS["frames"]:
        payload = bytes.fromhex(v["payload"])
        assert P.encode_frame(v["seq"], v["op"], payload).hex() == v["wire"]
        assert P.Deframer().feed(bytes.fromhex(v["wire"])) == [(v["seq"], v["op"], payload)]
    for v in VECTORS["streams"]:
        d = P.Deframer()
        got = d.feed(bytes.fromhex(v["bytes"]))
        assert [[s, o, p.hex()] for s, o, p in got] == v["frames"], v["name"]
        assert d.errors == v["errors"], v["name"]


def _vector_ring(bod: dict, count: int) -> dict[int, list[int]]:
    """The shared BOD_TRACE vectors' ring: slot s mod depth holds the newest superframe s."""
    ring = {}
    for sf in range(max(0, count - bod["ring"]), count):
        ring[sf % bod["ring"]] = bod["history"][sf]
    return ring


def test_bod_trace_matches_vectors():
    """The Python reference of the firmware's BOD_TRACE answer and the host's decoder against
    the shared vectors (the C side answers them in test_firmware_command_layer)."""
    bod = VECTORS["bod_trace"]
    oks = 0
    for c in bod["cases"]:
        ring = _vector_ring(bod, c["count"])
        request, response = bytes.fromhex(c["request"]), bytes.fromhex(c["response"])
        got = P.bod_trace_answer(request, bod["bod_mask"], bod["ring"], lambda ch: c["count"],
                                 lambda ch: c["start"], lambda ch, sf: ring[sf % bod["ring"]])
        assert got == response, c
        if response[0] != P.Status.OK:
            continue
        oks += 1
        count, start, first, records = P.decode_bod_trace(response[1:])
        channel, want, most = P.BOD_TRACE_REQUEST.unpack(request)
        assert count == c["count"] and start == c["start"]
        assert first == max(want, count - bod["ring"])
        assert len(records) == min(most, max(0, count - first), P.BOD_TRACE_MAX)
        for i, rec in enumerate(records):
            words = bod["history"][first + i]
            assert rec == unpack_record(sum(w << (32 * k) for k, w in enumerate(words)))
            assert rec.sf == first + i
    assert oks >= 8
    assert any(c["start"] >> 32 for c in bod["cases"])     # both words of bod_start count
    assert P.BOD_TRACE_HEAD.size == 17 and P.BOD_TRACE_MAX == 17
    assert P.BOD_TRACE_HEAD.size + P.BOD_TRACE_MAX * P.BOD_RECORD_BYTES + 1 <= P.MAX_PAYLOAD
    with pytest.raises(P.ProtocolError, match="does not hold 2 records"):
        P.decode_bod_trace(P.BOD_TRACE_HEAD.pack(5, 1 << 40, 0, 2) + bytes(P.BOD_RECORD_BYTES))
    with pytest.raises(P.ProtocolError, match="too short"):
        P.decode_bod_trace(b"\1\0")


def test_hello_matches_vectors():
    """The host reads HELLO's answer in the shared vectors as the box parameters they name (the
    C side must give exactly these bytes, in test_firmware_command_layer): the limits the host
    checks profiles against are the firmware's."""
    assert len(VECTORS["hello"]) >= 6
    for c in VECTORS["hello"]:
        answer = bytes.fromhex(c["response"])
        version = int.from_bytes(bytes.fromhex(c["request"]), "little")
        ok = version == P.PROTOCOL_VERSION
        assert answer[0] == (P.Status.OK if ok else P.Status.BAD_VERSION)
        assert len(answer) == 1 + P.HELLO_RESPONSE.size
        info = dict(zip(P.HELLO_FIELDS, P.HELLO_RESPONSE.unpack(answer[1:])))
        assert info.pop("version") == P.PROTOCOL_VERSION
        assert info.pop("capabilities") == P.Capability.CHANNELS | (
            P.Capability.BOD if c["bod_mask"] else 0) | (
            P.Capability.FRAME_LOG if c["log_records"] else 0) | (
            P.Capability.TIMELINE if c["timeline_entries"] else 0) | (
            P.Capability.TERMINALS if c["terminals"] else 0) | (
            P.Capability.JITTER if c["jitter_table"] else 0)
        assert info == {k: c[k] for k in info}
    assert {c["mem_wpc_forward"] for c in VECTORS["hello"]} >= {0, 0x1_2345, 0xFFFF_FFFF}
    assert {c["mem_wpc_return"] for c in VECTORS["hello"]} >= {0, 0x6789, 0x8765_4321}
    assert {c["log_records"] for c in VECTORS["hello"]} >= {0, 1 << 31}
    assert {c["timeline_entries"] for c in VECTORS["hello"]} >= {0, 1 << 18}


def _read_words(log: dict, case: dict):
    """The firmware's reads of a READ_LOG vector's ring (protocol.read_log_answer's
    ``read_words``): word 1, word 0, word 1 again, the channel overwriting the case's torn
    record with ``later`` right after the first read of its word 1."""
    ring, state = log["ring"], log["states"][case["state"]]
    memory = [list(w) for w in state["slots"]]

    def read_words(channel, n):
        assert state["count"] - ring <= n < state["count"]
        slot = memory[n % ring]
        w1 = slot[1]
        if n == case["torn"]:
            slot[:] = case["later"]
        return slot[0], w1 if slot[1] == w1 else 0
    return read_words


def test_read_log_matches_vectors():
    """The Python reference of the firmware's READ_LOG answer and the host's decoder against the
    shared vectors (the C side answers them in test_firmware_command_layer): the window, the
    records as the ring holds them (each one's lap that of its number), a torn record's word 1
    as 0, and every refusal."""
    log = VECTORS["read_log"]
    ring = log["ring"]
    statuses = {}
    for c in log["cases"]:
        state = log["states"][c["state"]]
        request, response = bytes.fromhex(c["request"]), bytes.fromhex(c["response"])
        got = P.read_log_answer(request, c["log_records"], lambda ch: state["count"],
                                lambda ch: state["lost"], _read_words(log, c))
        assert got == response, c
        statuses[P.Status(response[0])] = statuses.get(P.Status(response[0]), 0) + 1
        if response[0] != P.Status.OK:
            continue
        count, lost, first, records = P.decode_read_log(response[1:])
        channel, want, most = P.READ_LOG_REQUEST.unpack(request)
        assert (count, lost) == (state["count"], state["lost"])
        assert (first, len(records)) == P.read_log_window(count, ring, want, most)
        assert first == max(want, count - ring)
        assert len(records) == min(most, max(0, count - first), P.READ_LOG_MAX)
        for n, (w0, w1) in enumerate(records, first):
            rec = L.unpack(w0, w1)
            if n == c["torn"]:
                assert rec is None and w1 == 0          # the host counts it stale
                continue
            assert [w0, w1] == state["slots"][n % ring]
            assert rec.lap == (n // ring) % L.LAP_MOD
    assert statuses[P.Status.OK] >= 15 and statuses[P.Status.NO_LOG] == 2
    assert statuses[P.Status.BAD_CHANNEL] == 3 and statuses[P.Status.BAD_LENGTH] == 4
    assert any(log["states"][c["state"]]["count"] >> 32 for c in log["cases"])
    assert sum(c["torn"] is not None for c in log["cases"]) == 2
    assert P.READ_LOG_HEAD.size == 21 and P.READ_LOG_MAX == 30 and P.LOG_RECORD_BYTES == 16
    assert P.READ_LOG_HEAD.size + P.READ_LOG_MAX * P.LOG_RECORD_BYTES + 1 <= P.MAX_PAYLOAD
    with pytest.raises(P.ProtocolError, match="does not hold 2 records"):
        P.decode_read_log(P.READ_LOG_HEAD.pack(5, 0, 0, 2) + bytes(P.LOG_RECORD_BYTES))
    with pytest.raises(P.ProtocolError, match="too short"):
        P.decode_read_log(b"\1\0")
    assert P.clear_log_answer(b"", 32) == bytes([P.Status.OK])
    assert P.clear_log_answer(b"", 0) == bytes([P.Status.NO_LOG])
    assert P.clear_log_answer(b"\0", 32) == bytes([P.Status.BAD_LENGTH])


def test_profile_fits_a_frame():
    assert P.SET_PROFILE_REQUEST.size <= P.MAX_PAYLOAD
    assert P.PROTOCOL_VERSION == 16 and P.Op.LINK_STATS == 0x08 and P.Status.PENDING == 12
    assert P.Op.READ_LOG == 0x09 and P.Op.CLEAR_LOG == 0x0A and P.Status.NO_LOG == 13
    assert P.Capability.FRAME_LOG == 1 << 2 and P.Capability.TIMELINE == 1 << 3
    assert P.Op.TIMELINE_WRITE == 0x0B and P.Op.TIMELINE_STATUS == 0x0E
    assert P.Status.NO_TIMELINE == 14 and P.Status.RUNNING == 16
    assert P.HELLO_RESPONSE.size == 62 and P.HELLO_FIELDS[-6] == "timeline_entries"
    assert P.HELLO_FIELDS[-5:] == ("terminals", "synthetic", "demand_levels", "jitter_table",
                                   "impairments")
    assert P.Op.TERMINAL_SET == 0x0F and P.Op.TERMINAL_STATS == 0x11
    assert P.Status.TERMINAL_BAD == 17 and P.Capability.TERMINALS == 1 << 4
    assert P.Op.JITTER_SET == 0x12 and P.Status.NO_JITTER == 18 and P.Status.JITTER_BAD == 19
    assert P.Capability.JITTER == 1 << 5 and P.JITTER_SET_REQUEST.size == 501
    for op in (P.Op.TERMINAL_SET, P.Op.LEVEL_SET, P.Op.JITTER_SET):
        assert P.REQUESTS[op].size <= P.MAX_PAYLOAD
    assert P.HELLO_FIELDS[3:8] == ("queue_depth", "queue_fifo", "spill_mask", "bod_queue",
                                   "delta_queue")
    assert P.HELLO_FIELDS[12:14] == ("mem_wpc_forward", "mem_wpc_return")
    assert P.TIMELINE_WRITE_REQUEST.size <= P.MAX_PAYLOAD and P.TIMELINE_WRITE_MAX == 31


def test_python_deframer_survives_random_input():
    rng = random.Random(3)
    good = P.encode_frame(1, P.Op.HELLO, b"\x01\x00")
    for _ in range(300):
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 2000)))
        d = P.Deframer()
        d.feed(noise)
        # Whatever came before, a delimiter-led frame is received intact.
        assert d.feed(b"\0" + good) == [(1, P.Op.HELLO, b"\x01\x00")]


def test_c_codec_matches_vectors():
    exe = compile_c("cc", BUILD / "test_proto", [PROTO / "proto.c", C_TESTS / "test_proto.c"],
                    SANITIZERS, write_headers(BUILD))
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith(" 0 failed")


def test_fuzz_deframer_bounded():
    """libFuzzer over the firmware's deframer and command layer: no crash, no sanitizer report,
    every frame it accepts re-encodes to itself and gets a well-formed response. Bounded in runs
    so CI time stays fixed."""
    clang = shutil.which("clang")
    if clang is None:
        pytest.fail("clang is missing: scripts/bootstrap.sh installs it")
    exe = compile_c(clang, BUILD / "fuzz_proto", [*SOURCES, C_TESTS / "fuzz_proto.c"],
                    ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all"],
                    write_headers(BUILD))
    corpus = BUILD / "fuzz-corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir()
    for i, v in enumerate(VECTORS["frames"] + VECTORS["streams"]):
        (corpus / f"seed{i}").write_bytes(bytes.fromhex(v.get("wire") or v["bytes"]))
    # Well-formed requests of every opcode, so the fuzzer starts inside the command layer.
    regs = ChannelRegs(rate_q=400, delay=1000, queue_frames=50, queue_bytes=100000)
    profile = bytes([0]) + P.PROFILE.pack(*profile_fields(regs).values())
    for op, payload in ((P.Op.HELLO, P.PROTOCOL_VERSION.to_bytes(2, "little")),
                        (P.Op.SET_PROFILE, profile),
                        (P.Op.GET_PROFILE, b"\x01"), (P.Op.COMMIT, b"\x02"),
                        (P.Op.GET_STATS, b"\x00"), (P.Op.RESET_STATS, b""),
                        (P.Op.BOD_TRACE, P.BOD_TRACE_REQUEST.pack(1, 280, 17)),
                        (P.Op.READ_LOG, P.READ_LOG_REQUEST.pack(1, 0, P.READ_LOG_MAX)),
                        (P.Op.CLEAR_LOG, b"")):
        (corpus / f"req{int(op)}").write_bytes(P.encode_frame(7, op, payload))
    run = subprocess.run([str(exe), str(corpus), "-runs=100000", "-seed=1", "-max_len=4096"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done 100000 runs" in run.stderr


@pytest.mark.parametrize("target, runs", [("fuzz_stream", 40_000), ("fuzz_hw", 40_000)])
def test_fuzz_bounded(target, runs):
    """A bounded pass of the other libFuzzer targets (tests/firmware/fuzzing.py): one deframer
    kept across all inputs, checked against a model of the stream; the command layer on
    hardware the input chooses. No crash, no sanitizer report, and libFuzzer ran every input
    it was asked to (bench/bench_fuzz.py runs each for 10^6)."""
    out = BUILD / "fuzz"
    corpus = out / f"{target}-corpus"
    fuzzing.seed(target, corpus)
    r = fuzzing.run(fuzzing.build(target, out), corpus, runs, timeout=120)
    assert r["returncode"] == 0 and r["crashes"] == 0, r["log_tail"]
    assert r["runs"] == runs and r["executed_units"] == runs, r["log_tail"]


def test_firmware_command_layer():
    """The firmware's profile checks give the verdicts of satemu.base.validate on every shared case,
    SET_PROFILE writes each field to its own register, and its request handling answers
    malformed requests with the right status."""
    print(run_command_layer(BUILD))


def test_python_validator_matches_vectors():
    from satemu.base.protocol import PROFILE_FIELDS
    from satemu.base.validate import validate
    for c in PROFILE_CASES:
        fields = {f.name: v for f, v in zip(PROFILE_FIELDS, c["fields"])}
        hw = case_hardware(c)
        assert hw.bod_mask == c["limits"]["bod_mask"]
        v = validate(fields, hw, c["channel"])
        assert [int(v.status), v.field, v.value, v.lo, v.hi] == \
            [c["verdict"][k] for k in ("status", "field", "value", "lo", "hi")], c["why"]


def test_python_terminal_checks_match_vectors():
    """tests/vectors/terminals.json, which test_fw.c holds the firmware's COMMIT check to, is
    what satemu.base.validate's terminal_verdict and terminal_budget say of each table, read
    back from the case as the firmware sees it (the term_* registers and the staged entries)."""
    import sys
    from pathlib import Path
    from satemu.base.terminals import TerminalRegs, TerminalTable
    from command_layer import TERMINAL_CASES, case_hardware
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vectors"))
    from generate_terminals import verdict
    assert sum(1 for c in TERMINAL_CASES if c["verdict"]) >= 20
    for c in TERMINAL_CASES:
        fields = {f.name: v for f, v in zip(P.PROFILE_FIELDS, c["fields"])}
        regs = ChannelRegs(**fields, mem_base=0, mem_size=c["limits"]["mem_words"])
        hw = case_hardware(c)
        table = TerminalTable(fields["term_match"],
                              tuple(TerminalRegs(*t) for t in c["terminals"]),
                              fields["term_unclassified"], tuple(map(tuple, c["levels"])),
                              shared=c["channel"] == P.CHANNEL_FORWARD)
        side = P.CHANNEL_NAMES[c["channel"]]
        assert verdict(table, regs, hw, side) == c["verdict"], c["why"]
