#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""What a capture costs: satemu.base.pcapng's writer alone (packets a second, 1300-byte packets with a
comment and flags each, as a co-simulation's capture has them), and a 10 MB geo-testbed download
on the model engine with and without --pcap (best of three each). Where python-pcapng is
installed it is timed on the same packets too (it is not a dependency: the figure that made
satemu write its own is in docs/architecture.md, "Captures"). Writes
bench/results/pcapng.json."""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "host"))

from satemu.base.pcapng import INBOUND, PcapngWriter  # noqa: E402

PACKETS = 20_000
DATA = bytes(1300)
COMMENT = "forward channel, frame 12345 in on port B: delivered, left port A at cycle 1925669"


def ours() -> float:
    f = io.BytesIO()
    w = PcapngWriter(f)
    i = w.interface("portB-in", fcslen=4)
    t = time.perf_counter()
    for k in range(PACKETS):
        w.packet(i, k * 160, DATA, flags=INBOUND, comments=(COMMENT,))
    return PACKETS / (time.perf_counter() - t)


def python_pcapng() -> float | None:
    try:
        from pcapng import FileWriter, blocks
    except ImportError:
        return None
    shb = blocks.SectionHeader(options={"shb_userappl": "satemu"})
    shb.new_member(blocks.InterfaceDescription, link_type=1,
                   options={"if_name": "portB-in", "if_tsresol": b"\x09"})
    w = FileWriter(io.BytesIO(), shb)
    t = time.perf_counter()
    for k in range(PACKETS):
        epb = shb.new_member(blocks.EnhancedPacket)
        epb.interface_id = 0
        epb.timestamp_high, epb.timestamp_low = (k * 160) >> 32, (k * 160) & 0xFFFFFFFF
        epb.packet_data = DATA
        epb.options["opt_comment"] = COMMENT
        epb.options["epb_flags"] = INBOUND
        w.write_block(epb)
    return PACKETS / (time.perf_counter() - t)


def transfer(pcap: bool) -> tuple[float, int]:
    from satemu.quic.engine import run_model_transfer
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        t = run_model_transfer("geo-testbed", 10_000_000, ack="ratio:10",
                               pcap=Path(tmp) / "capture.pcapng" if pcap else None)
        wall = time.perf_counter() - t0
        assert t.completed and (not pcap or not t.capture["disagreements"])
        return wall, sum(t.capture["interfaces"].values()) if pcap else 0


def main() -> int:
    transfer(False)                                      # warm up: imports, certificates
    plain = min(transfer(False)[0] for _ in range(3))
    runs = [transfer(True) for _ in range(3)]
    captured = min(w for w, _ in runs)
    result = {
        "writer_packets_per_s": round(ours()),
        "python_pcapng_packets_per_s": (lambda v: None if v is None else round(v))(
            python_pcapng()),
        "packets": PACKETS, "packet_bytes": len(DATA),
        "transfer": "geo-testbed, 10 MB, ACK ratio:10, model engine, best of 3",
        "transfer_s_without_pcap": round(plain, 3),
        "transfer_s_with_pcap": round(captured, 3),
        "frames_captured": runs[0][1],
        "pcap_overhead_pct": round(100 * (captured - plain) / plain, 1),
        "date": time.strftime("%Y-%m-%d"),
    }
    out = ROOT / "bench" / "results" / "pcapng.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
