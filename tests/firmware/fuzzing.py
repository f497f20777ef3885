# SPDX-License-Identifier: BSD-2-Clause
"""The firmware's libFuzzer targets on the host: each one's build, seed corpus and a run whose
figures are read from libFuzzer's own report. Both the suite's bounded pass
(tests/firmware/test_protocol.py) and the benchmark (bench/bench_fuzz.py) use them.

Targets (firmware/tests/):
- ``fuzz_proto``: arbitrary bytes into a fresh deframer per input, each frame into the command
  layer;
- ``fuzz_stream``: one deframer for the whole run, never reset, checked against a model of the
  stream (partial frames, garbage and resynchronisation across inputs);
- ``fuzz_hw``: the command layer on hardware the input chooses: every limit, the delay lines,
  the BoD mask and ring, the frame log's rings, and what each register and DRAM read returns.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

from command_layer import C_TESTS, SOURCES, VECTORS, compile_c, write_headers
from satemu.base import protocol as P
from satemu.base.params import ChannelRegs
from satemu.base.regmap import REGMAP
from satemu.base.validate import profile_fields

TARGETS = ("fuzz_proto", "fuzz_stream", "fuzz_hw")
# The command layer's targets link it; fuzz_stream only the codec.
_SOURCES = {"fuzz_proto": SOURCES, "fuzz_stream": [s for s in SOURCES if s.name == "proto.c"],
            "fuzz_hw": SOURCES}
FLAGS = ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all"]
MAX_LEN = 4096
# fuzz_hw's seeds: the register reads after the requests, more than those requests make.
READS = 1024


def clang() -> str:
    """The compiler with libFuzzer (scripts/bootstrap.sh installs it)."""
    path = shutil.which("clang")
    if path is None:
        raise RuntimeError("clang is missing: scripts/bootstrap.sh installs it")
    return path


def build(target: str, out: Path) -> Path:
    """``target`` under libFuzzer, ASan and UBSan, against headers generated into ``out``: the
    program ``out / target``. fuzz_hw is told the known statuses (a bit per
    ``satemu.base.protocol.Status``) and those that refuse a request before it acts: all but OK and
    PENDING (a commit started that the gateware has not taken yet)."""
    assert max(P.Status) < 64
    statuses = sum(1 << int(s) for s in P.Status)
    refusals = sum(1 << int(s) for s in P.Status if s.name not in ("OK", "PENDING"))
    return compile_c(clang(), out / target, [*_SOURCES[target], C_TESTS / f"{target}.c"],
                     [*FLAGS, f"-DFUZZ_STATUSES={statuses:#x}ull",
                      f"-DFUZZ_REFUSALS={refusals:#x}ull"], write_headers(out))


def _requests() -> list[tuple[int, bytes]]:
    """Well-formed requests of every opcode, (op, payload): HELLO, a valid profile set on each
    channel then committed, a timeline, one armed for a load, then the others. Built from the request forms' sizes, so that a
    field added to a form leaves them well-formed: any bytes between SET_PROFILE's channel and
    its profile, and after COMMIT's flags (a generation), are 1s."""
    regs = ChannelRegs(rate_q=400, delay=1000, queue_frames=50, queue_bytes=100000)
    profile = P.PROFILE.pack(*profile_fields(regs).values())
    out = [(P.Op.HELLO, P.HELLO_REQUEST.pack(P.PROTOCOL_VERSION))]
    for ch in range(len(P.CHANNEL_NAMES)):
        gap = P.REQUESTS[P.Op.SET_PROFILE].size - 1 - len(profile)
        out.append((P.Op.SET_PROFILE, bytes([ch]) + b"\1" * gap + profile))
    out.append((P.Op.COMMIT, b"\0" + b"\1" * (P.REQUESTS[P.Op.COMMIT].size - 1)))
    out.append((P.Op.BOD_TRACE, P.BOD_TRACE_REQUEST.pack(P.CHANNEL_RETURN, 280,
                                                         P.BOD_TRACE_MAX)))
    out.append((P.Op.READ_LOG, P.READ_LOG_REQUEST.pack(P.CHANNEL_RETURN, 0, P.READ_LOG_MAX)))
    entries = [P.timeline_entry(0, 0, P.PROFILE_FIELDS.index(REGMAP["delay"]), 1200),
               P.timeline_entry(5000, 1, P.PROFILE_FIELDS.index(REGMAP["rate_q"]), 300)]
    out.append((P.Op.TIMELINE_WRITE, P.TIMELINE_WRITE_HEAD.pack(0, len(entries))
                + b"".join(entries)
                + bytes(P.TIMELINE_WRITE_REQUEST.size - P.TIMELINE_WRITE_HEAD.size
                        - len(entries) * P.TIMELINE_ENTRY.size)))
    out.append((P.Op.TIMELINE_START, P.TIMELINE_START_REQUEST.pack(2, 10_000, 20_000)))
    out.append((P.Op.TIMELINE_STATUS, b""))
    # A timeline armed for a load staged whole, which its COMMIT starts; then a start far
    # beyond the day a box takes (AHEAD).
    out.append((P.Op.TIMELINE_STOP, b""))
    out += [r for r in out if r[0] == P.Op.SET_PROFILE][:2]
    out.append((P.Op.TIMELINE_START, P.TIMELINE_START_REQUEST.pack(2, 10_000, 0)))
    out.append((P.Op.COMMIT, b"\0" + b"\1" * (P.REQUESTS[P.Op.COMMIT].size - 1)))
    out.append((P.Op.TIMELINE_STATUS, b""))
    out.append((P.Op.TIMELINE_STOP, b""))
    out.append((P.Op.TIMELINE_START, P.TIMELINE_START_REQUEST.pack(2, 1 << 63, 0)))
    for op, form in P.REQUESTS.items():
        if op not in dict(out):
            payload = bytearray(form.size)
            if op in P.REQUEST_CHANNEL:
                payload[0] = P.CHANNEL_RETURN
            out.append((op, bytes(payload)))
    return out


def _box(limits: dict[str, int], bod_mask: int, *, mem: int = 6 << 20, ring: int = 32,
         counter_bits: int = 32, log_bits: int = 5, flags: int = 0) -> bytes:
    """fuzz_hw's box (firmware/tests/fuzz_hw.c): the limits in HELLO's order, each channel's
    delay line one after the other, then each channel's frame-log ring (2 << log_bits words,
    below the delay lines), the timeline store (64 entries after the rings), bod_mask,
    bod_ring, counter_bits, log_bits, flags, then the link's counts (1, 2, ...)."""
    out = b"".join(limits[name].to_bytes(struct.calcsize(fmt), "little")
                   for name, fmt in P.LIMIT_FIELDS)
    for ch in range(len(P.CHANNEL_NAMES)):
        out += (ch * mem).to_bytes(4, "little") + mem.to_bytes(4, "little")
    log = (2 << log_bits) & 0xFFFF_FFFF
    for ch in range(len(P.CHANNEL_NAMES)):
        out += (ch * log & 0xFFFF_FFFF).to_bytes(4, "little") + log.to_bytes(4, "little")
    out += (2 * log & 0xFFFF_FFFF).to_bytes(4, "little") + (128).to_bytes(4, "little")
    counts = b"".join(n.to_bytes(4, "little") for n in range(1, len(P.LINK_STATS_FIELDS)))
    return (out + bod_mask.to_bytes(4, "little") + ring.to_bytes(4, "little")
            + bytes([counter_bits, log_bits, flags]) + counts)


def seed(target: str, corpus: Path) -> int:
    """Writes ``target``'s seed inputs into ``corpus`` (emptied first); returns their number.
    The deframers' targets start from the shared vectors' frames and streams (fuzz_stream also
    from frames cut in two, which only a kept deframer puts back together) and a framed request
    of every opcode; fuzz_hw from the HELLO vectors' boxes, one of all ones and one of zeros,
    each followed by every request, then reads that return the registers' values (zeros), and
    the first box's also with reads of all ones, and of 4: the channels idle, their delay lines
    empty, so that COMMIT applies."""
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    seeds = []
    requests = _requests()
    if target in ("fuzz_proto", "fuzz_stream"):
        seeds += [bytes.fromhex(v.get("wire") or v["bytes"])
                  for v in VECTORS["frames"] + VECTORS["streams"]]
        framed = [P.encode_frame(7, op, payload) for op, payload in requests]
        seeds += framed
        if target == "fuzz_stream":
            seeds += [half for f in framed for half in (f[:len(f) // 2], f[len(f) // 2:])]
    else:
        boxes = [_box(c, c["bod_mask"]) for c in VECTORS["hello"]]
        ones = {name: (1 << 8 * struct.calcsize(fmt)) - 1 for name, fmt in P.LIMIT_FIELDS}
        boxes += [_box(ones, 0xFFFF_FFFF, mem=0xFFFF_FFFF, ring=0xFFFF_FFFF, counter_bits=255,
                       log_bits=255),
                  _box(dict.fromkeys(ones, 0), 0, mem=0, ring=0, counter_bits=0, log_bits=0,
                       flags=7)]
        # Each request in its form's length (form byte 0).
        stream = b"".join(bytes([op, 0]) + payload for op, payload in requests)
        stream += b"\0\0"                # the end of the requests
        seeds += [box + stream + bytes(READS) for box in boxes]
        seeds += [boxes[0] + stream + sel * READS for sel in (b"\2", bytes([6 | 4 << 3]))]
    for i, data in enumerate(seeds):
        (corpus / f"seed{i}").write_bytes(data)
    return len(seeds)


def run(exe: Path, corpus: Path, runs: int, *, seed_value: int = 1,
        timeout: float = 3600) -> dict:
    """Runs ``exe`` over ``corpus`` for ``runs`` inputs (libFuzzer's ``-runs``), crash inputs
    written beside the corpus; returns libFuzzer's figures: the runs it reports done, wall time,
    executions a second, the coverage it reached (edges and features of its last status line),
    the corpus it ended with (files, bytes), the crash inputs it wrote, its exit status and its
    output's tail."""
    artifacts = corpus.parent / f"{corpus.name}-crashes"
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    t0 = time.monotonic()
    proc = subprocess.run([str(exe), str(corpus), f"-runs={runs}", f"-seed={seed_value}",
                           f"-max_len={MAX_LEN}", "-timeout=10", "-print_final_stats=1",
                           f"-artifact_prefix={artifacts}/"],
                          capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    log = proc.stderr
    done = re.search(r"^Done (\d+) runs in (\d+) second", log, re.M)
    stats = dict(re.findall(r"^stat::(\w+):\s*(\d+)", log, re.M))
    cov = re.findall(r"^#\d+\s+\w+\s+cov: (\d+) ft: (\d+)", log, re.M)
    files = [f for f in corpus.iterdir() if f.is_file()]
    return {
        "runs": int(done.group(1)) if done else None,
        "executed_units": int(stats.get("number_of_executed_units", 0)),
        "wall_s": round(wall, 2),
        "exec_per_s": round(int(stats.get("number_of_executed_units", 0)) / wall),
        "edges": int(cov[-1][0]) if cov else None,
        "features": int(cov[-1][1]) if cov else None,
        "corpus_files": len(files),
        "corpus_bytes": sum(f.stat().st_size for f in files),
        "new_units": int(stats.get("new_units_added", 0)),
        "peak_rss_mb": int(stats.get("peak_rss_mb", 0)),
        "crashes": len(list(artifacts.iterdir())),
        "returncode": proc.returncode,
        "log_tail": log[-3000:],
    }
