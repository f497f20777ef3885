# SPDX-License-Identifier: BSD-2-Clause
"""The result files of one QUIC transfer: result.json, packets.csv and the plots."""

from __future__ import annotations

import json
from pathlib import Path

from satemu.report.fates import FATE_COLUMNS, fate_columns, known_fates
from satemu.report.metrics import origin_cycle, seconds, summarize
from satemu.report.plots import plot_transfer

__all__ = ["write_packets_csv", "write_transfer"]


def write_packets_csv(t, path) -> Path:
    """One row per sent datagram, in the order the records were made:
    ``time_s,direction,size,ack_only`` (size in frame bytes, ack_only 0/1), then what became
    of it (satemu.report.fates.FATE_COLUMNS):

    * ``fate``: ``delivered``; ``undecodable``: it left the box but its bytes failed a check
      (the channel's corruption flipped a bit), and the host discarded it; or
      ``dropped:CAUSE``, the channel's cause (loss, queue, mem, runt, oversize, error,
      unclassified, overrun, preamble: satemu.box.port_capture.CAUSES);
    * ``delivered_s``: when it reached the host behind the other port (not dropped:
      delivered or undecodable), on the same clock as time_s;
    * ``packet_numbers``, ``packet_types`` (qlog's names: initial, handshake, 1RTT),
      ``frame_types`` (each packet's, joined by "+"; "-": none listed) and ``largest_acked``
      (the largest packet number its ACK frames acknowledge), as its sender knows them;
      packets separated by spaces. aioquic tells them, the frame types as it tracks their
      delivery: every frame but PADDING, CONNECTION_CLOSE and PATH_RESPONSE. quinn tells
      none of them: its datagrams are read back with the connection's TLS secrets
      (satemu.quic.wire), every frame but PADDING; empty where one could not be (the
      transfer's ``wire_error`` says why);
    * ``copy``: where the channel's duplication copied it, its copy's fate as ``fate`` says
      one (empty: not copied);
    * ``ecn``: the ECN field it arrived with (``not-ect``, ``ect1``, ``ect0``, ``ce``: the
      link marked it; empty where it did not arrive decodable).

    The fate columns are empty where the run knows no fates: a real-time run, whose captures
    are not matched datagram by datagram."""
    path = Path(path)
    origin = origin_cycle(t)
    fates = known_fates(t) or [None] * len(t.sent)
    lines = [",".join(("time_s", "direction", "size", "ack_only") + FATE_COLUMNS)]
    for r, f in zip(t.sent, fates):
        lines.append(",".join([f"{seconds(t, r.cycle, origin):.9f}", r.direction, str(r.size),
                               str(int(bool(r.ack_only)))] + fate_columns(t, f, origin)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_transfer(t, outdir) -> dict:
    """result.json (indent 2, sorted keys), packets.csv and the plots into ``outdir``; returns
    the summary."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    summary = summarize(t)
    text = json.dumps(summary, indent=2, sort_keys=True, allow_nan=False, default=str)
    (outdir / "result.json").write_text(text + "\n", encoding="utf-8")
    write_packets_csv(t, outdir / "packets.csv")
    plot_transfer(t, outdir)
    return summary
