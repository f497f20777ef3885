#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write tests/vectors/protocol.json: the protocol vectors both codecs are checked against.

Run it only to change the wire format on purpose; the tests compare both the Python and the C
codec with the committed file, so an accidental format change fails them.
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "host"))
from satemu.base import protocol as P  # noqa: E402
from satemu.base.records import BodRecord, pack_record  # noqa: E402
from satemu.model import framelog as L  # noqa: E402
from satemu.base.regmap import BOD_RECORD, BOD_RECORD_WORDS  # noqa: E402


def frames():
    rng = random.Random(1)
    cases = [(0, P.Op.HELLO, (1).to_bytes(2, "little")),
             (1, P.Op.COMMIT, P.COMMIT_REQUEST.pack(2, 0x5A7E0001)),
             (255, P.Op.RESET_STATS, b""), (7, P.Op.GET_STATS | P.RESPONSE_BIT, bytes(145)),
             (42, P.Op.SET_PROFILE, bytes([1]) + rng.randbytes(144)),
             (9, 0x7F, rng.randbytes(P.MAX_PAYLOAD)),
             (3, P.Op.BOD_TRACE, P.BOD_TRACE_REQUEST.pack(1, 0x01020304, 17)),
             (200, P.Op.LINK_STATS | P.RESPONSE_BIT,
              bytes([P.Status.OK]) + P.LINK_STATS.pack(70000, 1, 2, 3, 0x01020304, 5)),
             (11, P.Op.READ_LOG, P.READ_LOG_REQUEST.pack(1, 0x0102_0304_0506_0708, 30)),
             (12, P.Op.CLEAR_LOG, b""),
             (13, P.Op.TIMELINE_WRITE, P.TIMELINE_WRITE_HEAD.pack(0x0102_0304, 2)
              + P.timeline_entry(0, 1, 7, 0x0000_1234_5678_9ABC)
              + P.timeline_entry(0x0011_2233_4455_6677, 0, 11, 0xFF)
              + bytes(P.TIMELINE_ENTRY.size * (P.TIMELINE_WRITE_MAX - 2))),
             (14, P.Op.TIMELINE_START, P.TIMELINE_START_REQUEST.pack(3, 1 << 40, 93_750_000)),
             (15, P.Op.TIMELINE_STATUS | P.RESPONSE_BIT, bytes([P.Status.OK])
              + P.TIMELINE_STATE.pack(1, 3, 1 << 40, 93_750_000, 2, 7, 22, 1, (1 << 40) + 5, 0,
                                      0, 0))]
    return [{"seq": s, "op": int(o), "payload": p.hex(), "wire": P.encode_frame(s, o, p).hex()}
            for s, o, p in cases]


def streams():
    good = [P.encode_frame(3, P.Op.HELLO, b"\x01\x00"), P.encode_frame(4, P.Op.GET_STATS, b"\x01")]
    bad_crc = bytearray(P.encode_frame(5, P.Op.COMMIT, b"\x01"))
    bad_crc[2] ^= 0x10
    short = P.cobs_encode(b"\x01\x02\x03") + b"\0"
    wrong_len = P.cobs_encode(b"\x05\x01\x09\x00" + b"\xaa" * 3 + b"\x00\x00") + b"\0"
    overlong = bytes(range(1, 256)) * 3 + b"\0"
    body_too_long = P.cobs_encode(bytes(P.MAX_FRAME + 10)) + b"\0"
    malformed = bytes([0x05, 0x11, 0x22]) + b"\0"
    rng = random.Random(2)
    garbage = bytes(rng.randrange(256) for _ in range(300))
    cases = {
        "two good frames": good[0] + good[1],
        "leading garbage then a frame": b"\x13\x37\xff" + good[0],
        "bad crc between good frames": good[0] + bytes(bad_crc) + good[1],
        "short, wrong length, malformed": short + wrong_len + malformed + good[1],
        "overlong run then a frame": overlong + good[0],
        "decodes past the frame limit": body_too_long + good[1],
        "empty frames and zero runs": b"\0\0\0" + good[0] + b"\0\0",
        "random garbage then a frame": garbage + b"\0" + good[1],
        "truncated frame then a frame": good[0][:5] + good[1],
        "truncated frame, then a frame led by a delimiter": good[0][:5] + b"\0" + good[1],
    }
    out = []
    for name, data in cases.items():
        d = P.Deframer()
        got = d.feed(data)
        out.append({"name": name, "bytes": data.hex(),
                    "frames": [[s, o, p.hex()] for s, o, p in got], "errors": d.errors})
    return out


def bod_trace():
    """BOD_TRACE requests against a BoD ring of the return channel, with the exact answers. The
    ring holds the last ``ring`` superframes of ``history``; a case sets how many were recorded
    and the cycle superframe 0 began (``bod_start``, beyond 32 bits so both words count)."""
    rng = random.Random(4)
    ring, mask = 32, 1 << P.CHANNEL_RETURN
    history = []
    for sf in range(48):
        fields = {name: rng.randrange(1 << width) for name, width in BOD_RECORD if name != "sf"}
        rec = pack_record(BodRecord(sf=sf, **fields))
        history.append([(rec >> (32 * w)) & 0xFFFFFFFF for w in range(BOD_RECORD_WORDS)])
    req = P.BOD_TRACE_REQUEST.pack
    cases = [(45, req(1, 0, 255)), (45, req(1, 30, 255)), (45, req(1, 40, 3)), (45, req(1, 45, 5)),
             (45, req(1, 1000, 5)), (45, req(1, 13, 0)), (45, req(1, 14, 17)), (10, req(1, 0, 255)),
             (10, req(1, 4, 2)), (0, req(1, 0, 17)), (45, req(0, 0, 17)), (45, req(2, 0, 17)),
             (45, req(1, 0, 17)[:-1]), (45, req(1, 0, 17) + b"\0")]
    starts = {45: 0x0000_0123_89AB_CDEF, 10: 0xFEDC_BA98_7654_3211, 0: 0}
    out = []
    for count, request in cases:
        def read_record(channel, sf, count=count):
            assert count - ring <= sf < count          # the firmware reads only what the ring holds
            return history[sf]
        answer = P.bod_trace_answer(request, mask, ring, lambda ch, count=count: count,
                                    lambda ch, count=count: starts[count], read_record)
        out.append({"count": count, "start": starts[count], "request": request.hex(),
                    "response": answer.hex()})
    return {"ring": ring, "bod_mask": mask, "history": history, "cases": out}


def hello():
    """HELLO answers, status byte first, of boxes with these limits (protocol.LIMIT_FIELDS) and
    BoD masks: the firmware must give exactly these bytes (protocol.hello_answer is its
    reference), and the host reads its limits from them (HELLO_FIELDS). A frame log's rings
    hold a power of two records (the firmware's log_bits), or none; a timeline store any number
    of entries."""
    boxes = [dict(f_clk=75_000_000, queue_depth=1024, queue_fifo=1024, spill_mask=0,
                  bod_queue=16384, delta_queue=0, max_frame=2048, latency_floor=2048,
                  mem_words=6 << 20,
                  port_bps=1_000_000_000, mem_wpc_forward=0, mem_wpc_return=0,
                  log_records=1 << 21, timeline_entries=1 << 18, terminals=8, synthetic=32,
                  demand_levels=256, jitter_table=4096, impairments=1, bod_mask=2),
             dict(f_clk=6_250_000, queue_depth=65535, queue_fifo=1024, spill_mask=1,
                  bod_queue=1024, delta_queue=16384, max_frame=2048, latency_floor=2048,
                  mem_words=4 << 20, port_bps=400_000_000,
                  mem_wpc_forward=0x0001_2345, mem_wpc_return=0x0000_6789, log_records=0,
                  timeline_entries=0, terminals=0, synthetic=0, demand_levels=0, jitter_table=0,
                  impairments=0, bod_mask=0),
             dict(f_clk=0x89AB_CDEF, queue_depth=0xFEDC, queue_fifo=0x1357, spill_mask=0xA5C3,
                  bod_queue=0xBEEF, delta_queue=0xC0DE, max_frame=0x1234, latency_floor=0x7654_3210, mem_words=0xFFFF_FFFF,
                  port_bps=0x0123_4567_89AB_CDEF, mem_wpc_forward=0xFFFF_FFFF,
                  mem_wpc_return=0x8765_4321, log_records=1 << 31,
                  timeline_entries=0x7654_3210, terminals=0xA5, synthetic=0x5A,
                  demand_levels=0xC3E1, jitter_table=0x9A7B, impairments=0xB5E2,
                  bod_mask=3)]
    out = []
    for box in boxes:
        for version in (P.PROTOCOL_VERSION, P.PROTOCOL_VERSION - 1):
            request = P.HELLO_REQUEST.pack(version)
            answer = P.hello_answer(request, box, box["bod_mask"])
            out.append(dict(box, request=request.hex(), response=answer.hex()))
    return out


def log_record(n: int) -> list[int]:
    """Record number ``n`` of the READ_LOG vectors' log, its two words: made up, but of the
    layout satemu.model.framelog gives, with the lap a ring of 32 records gives it."""
    rng = random.Random(n)
    kind = rng.randrange(2)
    r = L.Record(kind=kind, cycle=rng.randrange(1 << 48), length=rng.randrange(60, 1519),
                 index=n % L.INDEX_MOD if kind == L.DECIDED else 0, tx=rng.randrange(1 << 24),
                 fate=rng.randrange(6) if kind == L.DECIDED else 0,
                 late=bool(kind and rng.randrange(2)), lap=(n >> 5) % L.LAP_MOD)
    return list(L.pack(r))


def read_log():
    """READ_LOG requests against a frame log's ring of 32 records, with the exact answers. A
    state is what the memory has taken (log_count), lost (log_lost) and what each slot holds:
    the last 32 records (record n in slot n mod 32), the other slots records of no concern (the
    firmware must not read them). A case names a state, the records each channel's ring holds
    (0: the channel has no log) and, where ``torn`` is set, the record the channel overwrites
    with ``later`` right after the firmware's first read of its word 1."""
    ring = 32
    states = []
    for count, lost in ((45, 3), (10, 0), (0, 0), ((1 << 32) + 7, 0xFFFF_FFFF), (32, 1)):
        slots = [log_record(1_000_000 + k) for k in range(ring)]
        for n in range(max(0, count - ring), count):
            slots[n % ring] = log_record(n)
        states.append({"count": count, "lost": lost, "slots": slots})
    req = P.READ_LOG_REQUEST.pack
    both, fwd, none = [ring, ring], [ring, 0], [0, 0]
    big = (1 << 32) + 7
    cases = [
        (0, both, req(0, 0, 255), None),          # from the oldest held, across the wrap
        (0, both, req(1, 0, 255), None),
        (0, both, req(0, 30, 255), None),
        (0, both, req(0, 40, 3), None),
        (0, both, req(0, 45, 5), None),           # caught up: none
        (0, both, req(0, 1000, 5), None),         # beyond the count
        (0, both, req(0, (1 << 64) - 1, 30), None),
        (0, both, req(0, 13, 0), None),           # max 0: the head only
        (0, both, req(0, 14, 30), None),
        (1, both, req(0, 0, 255), None),
        (1, both, req(1, 4, 2), None),
        (2, both, req(0, 0, 30), None),
        (3, both, req(0, 0, 30), None),           # a count beyond 32 bits
        (3, both, req(1, big - 2, 30), None),
        (4, both, req(0, 0, 30), None),           # the ring just full
        (4, both, req(0, 31, 30), None),
        (0, fwd, req(0, 20, 4), None),            # the forward channel has a log ...
        (0, fwd, req(1, 0, 30), None),            # ... the return channel none
        (0, none, req(0, 0, 30), None),           # a box without a log
        (0, none, req(2, 0, 30), None),
        (0, both, req(2, 0, 30), None),
        (0, both, req(255, 0, 30), None),
        (0, both, req(0, 0, 30)[:-1], None),
        (0, both, req(0, 0, 30) + b"\0", None),
        (0, both, b"", None),
        (0, none, req(0, 0, 30)[:-1], None),
        (0, both, req(0, 13, 4), 13),             # the oldest slot overwritten while read
        (0, both, req(1, 20, 5), 22),
    ]
    out = []
    for state, records, request, torn in cases:
        st = states[state]
        memory = [list(w) for w in st["slots"]]
        later = log_record(torn + ring) if torn is not None else None

        def read_words(channel, n, st=st, memory=memory, torn=torn, later=later):
            assert st["count"] - ring <= n < st["count"]   # only what the ring holds is read
            slot = memory[n % ring]
            w1 = slot[1]
            if n == torn:                                  # the channel writes it now
                slot[:] = later
            w0 = slot[0]
            return w0, w1 if slot[1] == w1 else 0

        answer = P.read_log_answer(request, records, lambda ch, st=st: st["count"],
                                   lambda ch, st=st: st["lost"], read_words)
        out.append({"state": state, "log_records": records, "torn": torn, "later": later,
                    "request": request.hex(), "response": answer.hex()})
    return {"ring": ring, "states": states, "cases": out}


def main():
    vectors = {
        "crc16": [{"data": b"123456789".hex(), "crc": 0x29B1}, {"data": "", "crc": 0xFFFF},
                  {"data": "00", "crc": P.crc16(b"\0")}, {"data": "ff" * 64, "crc": P.crc16(b"\xff" * 64)}],
        # The first six are textbook COBS examples; the rest cover the 254-byte block edges.
        "cobs": [{"raw": r.hex(), "encoded": P.cobs_encode(r).hex()} for r in (
            b"\x00", b"\x00\x00", b"\x11\x22\x00\x33", b"\x11\x22\x33\x44", b"\x11\x00\x00\x00",
            bytes(range(1, 255)), bytes(range(0, 255)), bytes(range(1, 256)),
            bytes(range(2, 256)) + b"\x00", bytes(range(3, 256)) + b"\x00\x01", b"")],
        "frames": frames(),
        "streams": streams(),
        "bod_trace": bod_trace(),
        "hello": hello(),
        "read_log": read_log(),
    }
    out = Path(__file__).with_name("protocol.json")
    out.write_text(json.dumps(vectors, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
