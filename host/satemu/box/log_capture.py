# SPDX-License-Identifier: BSD-2-Clause
"""The box's frame log (``satemu.model.framelog``) as pcapng, alone or joined with host captures
of the ports: what ``satemu capture`` writes.

The capture has the four interfaces of the co-simulation's (``satemu.box.port_capture``): port A in,
port A out, port B in, port B out, with the same comments and flags for each frame's fate. The
box keeps no payloads: a frame from the log alone has 0 bytes captured and its length as its
original length (no FCS). Timestamps are the channel's own cycles, counted from the box's reset,
at nanosecond resolution: a frame into a port at its arrival (the cycle its last beat entered
the channel, after the MAC), a frame out of a port at its egress start (the cycle it began to
leave the channel). docs/architecture.md, "The frame log" and "Captures".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from satemu.model.board import CHANNEL_INTO, EGRESS_PORT, PORT_A, PORT_B
from satemu.box.port_capture import CAUSES, CHANNEL_NAMES, INTERFACES, PORT_NAMES, ms_of, ns_of
from satemu.base.params import Fate
from satemu.base.pcapng import INBOUND, OUTBOUND, PcapngWriter

__all__ = ["ChannelLog", "read_box_log", "write_log_capture", "merge_log_capture"]


@dataclass
class ChannelLog:
    """What READ_LOG gave for one channel: the ring's size (records), the records written and
    lost since the last CLEAR_LOG, the first record number read and the records that checked
    (satemu.model.framelog.check_records), with the count of those that did not."""
    ring: int
    count: int
    lost: int
    first: int
    records: list
    stale: int

    def problems(self) -> list[str]:
        """Why this channel's capture is not every frame since the clear, in words (empty:
        it is)."""
        out = []
        if self.first:
            out.append(f"the ring ({self.ring} records) wrapped: the oldest {self.first} records "
                       "were overwritten before they were read")
        if self.lost:
            out.append(f"{self.lost} records were lost in the box (its log's buffer was full)")
        if self.stale:
            out.append(f"{self.stale} records were overwritten while they were read")
        return out


def read_box_log(dev, ring: int) -> dict[int, ChannelLog]:
    """Both channels' frame logs from the box behind ``dev`` (a ``satemu.box.device.Device``), each
    ring ``ring`` records (HELLO's ``log_records``), every record read checked."""
    from satemu.model.framelog import check_records
    logs = {}
    for ch in CHANNEL_NAMES:
        count, lost, first, pairs = dev.read_log(ch)
        records, stale = check_records(first, pairs, ring.bit_length() - 1)
        logs[ch] = ChannelLog(ring, count, lost, first, records, stale)
    return logs


def _whose(terminal: int) -> str:
    from satemu.base.terminals import NO_TERMINAL
    return "no terminal's" if terminal == NO_TERMINAL else f"terminal {terminal}"


def _log_packets(logs: dict[int, ChannelLog], f_clk: int,
                 tables: Iterable[int] = ()) -> list[dict]:
    """The frame log as packets, each a dict: ``ns`` (the channel's cycle, counted from the
    box's reset), ``port``, ``dir`` ("in"/"out"), ``length``, ``flags``, ``text``, ``channel``
    and ``n`` (its place among the channel's frames of that direction in the log read)."""
    from satemu.base.records import SENT
    from satemu.model.framelog import join, unwrap
    out = []
    for ch, log in logs.items():
        port_in = [p for p, c in CHANNEL_INTO.items() if c == ch][0]
        port_out = EGRESS_PORT[ch]
        name, out_name = PORT_NAMES[port_in], PORT_NAMES[port_out]
        entries, _ = join(log.records)
        first = log.records[0].cycle if log.records else 0
        arrivals = unwrap([e.arrival for e in entries], first)
        egress = unwrap([e.arrival if e.egress is None else e.egress for e in entries], first)
        copies = set()
        n = 0
        for k, (e, a, g) in enumerate(zip(entries, arrivals, egress)):
            # Duplication's copy: decided right after its original, with its arrival (no two
            # frames arrive in one cycle); what became of it goes in the original's comment.
            copy = (k > 0 and out and e.index == entries[k - 1].index + 1
                    and a == arrivals[k - 1] and out[-1]["channel"] == ch)
            at = f"{CHANNEL_NAMES[ch]} channel, frame {e.index} in on port {name}"
            if ch in tables:
                at += f", {_whose(e.terminal)}"
            flags = INBOUND
            if e.fate is Fate.DELIVERED:
                key = "delivered"
                text = (f"{at}: delivered, left the channel for port {out_name} at cycle {g}, "
                        f"{ms_of(g - a, f_clk)} after its arrival" if e.egress is not None else
                        f"{at}: delivered (its start is not in the log read)")
                if e.late:
                    text += ", late"
            else:
                cause, why, err = CAUSES[e.fate]
                key = f"drop_{cause}"
                flags |= err
                text = f"{at}: dropped: {cause} ({why})"
            if copy:
                copies.add(e.index)
                prev = out[-1]
                prev["text"] += f"; duplicated, the copy{text[len(at):]}"
                prev["also"] = prev.get("also", []) + [key, "duplicated"]
                continue
            out.append({"ns": ns_of(a, 0, f_clk), "port": port_in, "dir": "in",
                        "length": e.length, "flags": flags, "channel": ch, "n": n, "fate": key,
                        "text": text + f" (arrival: cycle {a})"})
            n += 1
        # A delivered frame's decided record, by the sent-index it took: its number, arrival.
        decided = {(r.terminal, r.tx): (r.index, a) for r, a in zip(
            [r for r in log.records if r.kind != SENT], arrivals) if Fate(r.fate) is Fate.DELIVERED}
        sent = [r for r in log.records if r.kind == SENT]
        for k, (r, g) in enumerate(zip(sent, unwrap([r.cycle for r in sent], first))):
            origin = decided.get((r.terminal, r.tx))
            who = f", {_whose(r.terminal)}" if ch in tables else ""
            frame = (f"the copy of frame {origin[0] - 1}" if origin and origin[0] in copies
                     else f"frame {origin[0]}" if origin else "")
            text = (f"{CHANNEL_NAMES[ch]} channel, {frame} in on port {name}{who} at "
                    f"cycle {origin[1]}, held {ms_of(g - origin[1], f_clk)}" if origin else
                    f"{CHANNEL_NAMES[ch]} channel{who}, a frame whose arrival is not in the log "
                    "read")
            if r.late:
                text += "; it started later than scheduled"
            out.append({"ns": ns_of(g, 0, f_clk), "port": port_out, "dir": "out",
                        "length": r.length, "flags": OUTBOUND, "channel": ch, "n": k,
                        "text": text + f" (egress: cycle {g})"})
    return out


LOG_DESCRIPTIONS = {
    (PORT_A, "in"): "port A: frames into the box (the return channel's), at their arrival",
    (PORT_A, "out"): "port A: frames out of the box (the forward channel's), at their start",
    (PORT_B, "in"): "port B: frames into the box (the forward channel's), at their arrival",
    (PORT_B, "out"): "port B: frames out of the box (the return channel's), at their start",
}


def _write_packets(path, packets: list[dict], comment: str) -> dict:
    """Writes ``packets`` (``_log_packets``' dicts, with ``data`` where a payload is known) in
    time order on the four interfaces; returns the counts per interface and per fate."""
    iface = {key: i for i, key in enumerate(INTERFACES)}
    counts = {f"{PORT_NAMES[p]}-{d}": 0 for p, d in INTERFACES}
    fates: dict[str, dict[str, int]] = {name: {} for name in CHANNEL_NAMES.values()}
    with PcapngWriter(path, comment=comment or None) as w:
        for port, d in INTERFACES:
            w.interface(f"port{PORT_NAMES[port]}-{d}", LOG_DESCRIPTIONS[(port, d)])
        for k, p in sorted(enumerate(packets), key=lambda kp: (kp[1]["ns"], kp[0])):
            data = p.get("data", b"")
            w.packet(iface[(p["port"], p["dir"])], max(p["ns"], 0), data,
                     orig_len=max(len(data), p["length"]), flags=p["flags"],
                     comments=(p["text"],))
            counts[f"{PORT_NAMES[p['port']]}-{p['dir']}"] += 1
            if "fate" in p:
                tally = fates[CHANNEL_NAMES[p["channel"]]]
                for key in [p["fate"], *p.get("also", ())]:
                    tally[key] = tally.get(key, 0) + 1
    return {"path": str(path), "interfaces": counts, "fates": fates}


def write_log_capture(path: "str | Path", logs: dict[int, ChannelLog], f_clk: int,
                      comment: str = "", tables: Iterable[int] = ()) -> dict:
    """Writes the pcapng of the box's frame log: the four interfaces of the co-simulation's
    captures, each frame without its payload (the box keeps none: 0 bytes captured, its length
    as the original length, no FCS) at the channel's own cycles, counted from the box's reset:
    a frame into a port at its arrival (the cycle its last beat entered the channel, after the
    MAC), a frame out of a port at its egress start (the cycle it began to leave the channel).
    Comments and flags as ``write_capture``'s; on the channels in ``tables`` (those with a
    terminal table in force) each frame's terminal, by its index. Returns the counts."""
    return _write_packets(path, _log_packets(logs, f_clk, tables), comment)


MERGE_WINDOW = 32              # frames either side may skip to find the next match


ANCHOR = 12                    # lengths in a row that place one sequence within the other


def _anchor(host: list[int], box: list[int]) -> tuple[int, int]:
    """Where the two sequences of frame lengths start to overlap: the first place in the host's
    where the box's first ANCHOR lengths occur in a row (the ring had already overwritten the
    records of the frames before), else the first place in the box's where the host's first
    ones do (the host's capture began later); (0, 0) when neither."""
    for a, b, flip in ((host, box, False), (box, host, True)):
        k = min(ANCHOR, len(b))
        if k == 0:
            continue
        head = b[:k]
        for i in range(len(a) - k + 1):
            if a[i:i + k] == head:
                return (0, i) if flip else (i, 0)
    return 0, 0


def _match(host: list[int], box: list[int]) -> list[tuple[int, int]]:
    """Pairs (host index, box index) of two sequences of frame lengths, in order, from where
    they start to overlap (``_anchor``): each next pair is the nearest equal lengths within
    MERGE_WINDOW frames of both."""
    pairs = []
    i, j = _anchor(host, box)
    while i < len(host) and j < len(box):
        best = None
        for di in range(min(MERGE_WINDOW, len(host) - i)):
            for dj in range(min(MERGE_WINDOW, len(box) - j)):
                if host[i + di] == box[j + dj] and (best is None or di + dj < sum(best)):
                    best = (di, dj)
            if best is not None and best[0] + best[1] <= di:
                break
        if best is None:
            i, j = i + MERGE_WINDOW, j + MERGE_WINDOW
            continue
        pairs.append((i + best[0], j + best[1]))
        i, j = i + best[0] + 1, j + best[1] + 1
    return pairs


def merge_log_capture(path: "str | Path", logs: dict[int, ChannelLog], f_clk: int,
                      hosts: dict[int, "str | Path"], comment: str = "",
                      tables: Iterable[int] = ()) -> dict:
    """The box's frame log joined with host captures (pcapng) of the ports: ``hosts`` maps a
    port to a capture taken on the host's interface cabled to it, whose frames carry their
    direction (``epb_flags``: satemu's sniffer and dumpcap write it). The frames the host sent
    are matched, in order and by length (padded to 60 bytes), with the frames the box took in
    on that port, and those it received with the frames the box sent out of it; a matched frame
    gets the host's bytes with the box's timestamp, fate and comment. The host's clock is put
    onto the box's by the median offset of the matched frames; a host frame the box's log does
    not hold keeps its own time, so shifted, and says so. Raises ValueError when a capture does
    not match the log (under half of the shorter side's frames: another run, or another port)."""
    from satemu.base.ether import MIN_FRAME
    from satemu.base.pcapng import read_pcapng
    packets = _log_packets(logs, f_clk, tables)
    extra, offsets, summary = [], [], {}
    for port, host_path in hosts.items():
        cap = read_pcapng(host_path)
        frames = [(p, cap.time_ns(p)) for p in cap.packets]
        if frames and all(p.direction == 0 for p, _ in frames):
            raise ValueError(f"{host_path}: its frames carry no direction (epb_flags); take the "
                             "capture with satemu's sniffer or dumpcap")
        for d, host_dir in (("in", OUTBOUND), ("out", INBOUND)):
            mine = [p for p in frames if p[0].direction == host_dir]
            box = [b for b in packets if b["port"] == port and b["dir"] == d]
            pairs = _match([max(p.orig_len, MIN_FRAME) for p, _ in mine],
                           [max(b["length"], MIN_FRAME) for b in box])
            # Under half the shorter side matched; or the host has frames and the log none.
            shorter = max(1, min(len(mine), len(box)))
            if mine and len(pairs) * 2 < shorter:
                raise ValueError(
                    f"{host_path}: only {len(pairs)} of its {len(mine)} frames "
                    f"{'sent into' if d == 'in' else 'received from'} port {PORT_NAMES[port]} "
                    f"match the box's log ({len(box)} frames): a capture of another run, or of "
                    "the other port?")
            matched_host = set()
            for hi, bi in pairs:
                p, t = mine[hi]
                box[bi]["data"] = p.data
                box[bi]["text"] += "; in the host's capture"
                offsets.append(t - box[bi]["ns"])
                matched_host.add(hi)
            for hi, (p, t) in enumerate(mine):
                if hi not in matched_host:
                    extra.append({"host_ns": t, "port": port, "dir": d, "length": p.orig_len,
                                  "data": p.data, "flags": host_dir,
                                  "text": "in the host's capture only: the box's log does not "
                                          "hold it (never reached the box, or its record is "
                                          "gone)"})
            summary[f"{PORT_NAMES[port]}-{d}"] = {"host": len(mine), "box": len(box),
                                                   "matched": len(pairs)}
    offsets.sort()
    offset = offsets[len(offsets) // 2] if offsets else 0
    for e in extra:
        e["ns"] = e.pop("host_ns") - offset
    out = _write_packets(path, packets + extra, comment)
    out["merged"] = summary
    out["host_offset_ns"] = offset
    return out


def log_ring(dev, url: str) -> tuple[dict, int]:
    """The box's HELLO and the records of each channel's frame-log ring; DeviceError, one line,
    if it has no frame log."""
    from satemu.base.protocol import Capability
    from satemu.box.device import DeviceError
    info = dev.hello()
    ring = info.get("log_records", 0)
    if not info["capabilities"] & Capability.FRAME_LOG or not ring:
        raise DeviceError(f"{url} has no frame log: its gateware was built without one (a "
                          "build option; the Colorlight 5A-75B and the Versa-5G leave it out, "
                          "see docs/hardware.md)")
    return info, ring


@dataclass
class BoxCapture:
    """``capture_box_log``'s account: the records read and logged, the ring, the bytes read
    over the UART and how long it took, what the capture holds and what it lacks."""
    records: int
    logged: int
    ring: int
    uart_bytes: int
    wall_s: float
    summary: dict
    problems: list[str]


def capture_box_log(dev, path: "str | Path", url: str, merges: dict | None = None) -> BoxCapture:
    """The frame logs of both channels of the box on ``dev`` (HELLO's FRAME_LOG) read over its
    UART into the pcapng ``path``, the frames of a terminal table in force named by terminal,
    ``merges`` (port: host capture) joined to them (``merge_log_capture``). DeviceError if the
    box has no log; a capture that lacks records (overwritten in the ring, or still being
    written) says so in its comment and in ``problems``."""
    import time
    from satemu.base.protocol import CHANNEL_NAMES, Capability
    from satemu.box.device import DeviceError
    t0 = time.monotonic()
    info, ring = log_ring(dev, url)
    logs = read_box_log(dev, ring)
    f_clk = info["f_clk"]
    # the channels with a terminal table in force: their frames' terminals are named
    tables = [ch for ch in logs if dev.get_profile(ch)["term_match"]] \
        if info["capabilities"] & Capability.TERMINALS else []
    comment = (f"satemu frame log of {url}: timestamps are the box's cycles since its reset "
               f"at {1e9 / f_clk:g} ns a cycle, a frame into a port at its arrival at the "
               "channel, one out of a port at its egress start")
    problems = [f"{CHANNEL_NAMES[ch]}: {p}" for ch, log in logs.items() for p in log.problems()]
    if problems:
        comment += "; PARTIAL: " + "; ".join(problems)
    if merges:
        try:
            summary = merge_log_capture(path, logs, f_clk, merges, comment, tables)
        except (ValueError, OSError) as e:
            raise DeviceError(f"--merge: {e}") from None
    else:
        summary = write_log_capture(path, logs, f_clk, comment, tables)
    return BoxCapture(records=sum(len(log.records) for log in logs.values()),
                      logged=sum(log.count for log in logs.values()), ring=ring,
                      uart_bytes=sum(16 * (len(log.records) + log.stale)
                                     for log in logs.values()),
                      wall_s=time.monotonic() - t0, summary=summary, problems=problems)
