# SPDX-License-Identifier: BSD-2-Clause
"""What each datagram of a transfer became: its fate, its delivery, the first RTT it belongs to."""

from __future__ import annotations

from satemu.box.port_capture import check_counts
from satemu.quic.transfer import Delivery

__all__ = ["FATE_COLUMNS", "FIRST_RTT_LISTED", "known_fates", "fate_columns", "fate_summary",
           "delivered_records", "carries_ack", "first_ack_cycle", "first_rtt"]

# packets.csv's columns after time_s,direction,size,ack_only (see write_packets_csv).
FATE_COLUMNS = ("fate", "delivered_s", "packet_numbers", "packet_types", "frame_types",
                "largest_acked", "copy", "ecn")
# The most datagrams result.json's first_rtt lists one by one (it counts them all).
FIRST_RTT_LISTED = 32
DIRECTIONS = ("forward", "return")


def _seconds(t, cycle: int, origin: int) -> float:
    # (satemu.report.metrics.seconds, which imports this module)
    return (cycle - origin) / t.f_clk


def known_fates(t) -> list | None:
    """Each datagram's fate (``satemu.quic.cosim.PacketFate``, one per record of ``t.sent``),
    where the run knows them: a co-simulation's, on either engine. None for a real-time run
    (its captures are not matched frame by frame) or a Transfer made otherwise."""
    fates = getattr(t, "fates", None)
    return fates if fates is not None and len(fates) == len(t.sent) else None


def fate_columns(t, fate, origin: int) -> list[str]:
    """A datagram's values of :data:`FATE_COLUMNS` (``fate``: its PacketFate, or None: all
    empty); what its sender's stack did not tell, and its bytes could not tell either
    (``Transfer.wire_error``), is empty too."""
    if fate is None:
        return [""] * len(FATE_COLUMNS)
    at = "" if fate.delivered is None else f"{_seconds(t, fate.delivered, origin):.9f}"
    numbers = "" if fate.numbers is None else " ".join(map(str, fate.numbers))
    largest = "" if fate.largest_acked is None else str(fate.largest_acked)
    return [fate.fate, at, numbers, fate.types or "", fate.frames or "", largest,
            fate.copy or "", fate.ecn or ""]


def _tally(t, fates, copies: bool = False) -> dict:
    """Per direction, how many datagrams had each fate (``copies``: how many copies did)."""
    out: dict = {d: {} for d in DIRECTIONS}
    for r, f in zip(t.sent, fates):
        fate = f.copy if copies else f.fate
        if fate is not None:
            out[r.direction][fate] = out[r.direction].get(fate, 0) + 1
    return {d: dict(sorted(v.items())) for d, v in out.items()}


def fate_summary(t) -> dict | None:
    """result.json's ``fates``: per direction, how many datagrams had each fate (``delivered``,
    ``undecodable``, ``dropped:CAUSE``), and ``disagreements``: where those counts disagree
    with the channels' counters (``satemu.box.port_capture.check_counts``, as a capture's:
    tx_frames is delivered + undecodable, each drop_CAUSE its dropped:CAUSE); ``error`` where
    the engine's reports did not add up; ``wire_error`` where a datagram its stack did not
    tell of could not be read back (satemu.quic.wire). None where the run knows no fates (real time)."""
    fates = known_fates(t)
    error = getattr(t, "fates_error", None)
    if fates is None:
        if error is None:
            return None
        return {"forward": None, "return": None, "disagreements": [], "error": error}
    tally, copies = _tally(t, fates), _tally(t, fates, copies=True)
    out = {**tally, "disagreements": [], "error": None}
    if getattr(t, "wire_error", None):
        out["wire_error"] = t.wire_error    # quinn's datagrams not all read back
    if any(copies.values()):
        out["copies"] = copies              # duplication's copies, by fate
    # The datagrams and copies that arrived marked CE, per direction (the link's ECN marking:
    # ce_marked counts them where the endpoints sent ECT).
    out["ce"] = {d: sum((f.ecn == "ce") + (f.copy_ecn == "ce") for r, f in zip(t.sent, fates)
                        if r.direction == d) for d in DIRECTIONS}
    stats = t.board_stats or {}
    if all(stats.get(d) for d in DIRECTIONS):
        counts = {}
        for d, by in tally.items():
            both = {k: by.get(k, 0) + copies[d].get(k, 0) for k in {*by, *copies[d]}}
            counts[d] = {"delivered": both.get("delivered", 0) + both.get("undecodable", 0),
                         "duplicated": sum(copies[d].values())}
            counts[d].update({"drop_" + k.partition(":")[2]: n for k, n in both.items()
                              if k.startswith("dropped:")})
        sent = {d: sum(by.values()) for d, by in tally.items()}
        interfaces = {"A-in": sent["return"], "B-out": counts["return"]["delivered"],
                      "B-in": sent["forward"], "A-out": counts["forward"]["delivered"]}
        out["disagreements"] = check_counts({"interfaces": interfaces, "fates": counts}, stats)
    return out


def delivered_records(t, direction: str) -> list[Delivery]:
    """The datagrams of ``direction`` an endpoint received, at the cycle it did: those whose
    fate (or whose copy's, where duplication made one) is ``delivered`` where the fates are
    known, once, at the first delivery; else every frame that left the box (``t.delivered``,
    undecodable ones and copies too)."""
    fates = known_fates(t)
    if fates is None:
        return [d for d in t.delivered if d.direction == direction]
    out = []
    for r, f in zip(t.sent, fates):
        at = [c for fate, c in ((f.fate, f.delivered), (f.copy, f.copy_delivered))
              if fate == "delivered"]
        if r.direction == direction and at:
            out.append(Delivery(min(at), r.direction, r.size, r.flow))
    out.sort(key=lambda d: d.cycle)
    return out


def carries_ack(fate) -> bool | None:
    """Whether a datagram carries an ACK frame, as its sender told (None: its stack does not
    tell)."""
    if fate.frames is None:
        return None
    return any("ack" in packet.split("+") for packet in fate.frames.split())


def first_ack_cycle(t) -> tuple[int | None, bool | None]:
    """The cycle the first ACK reached the client: the first forward datagram delivered that
    carries an ACK frame, or, where it is not known which do (``wire_error``), the
    first forward datagram delivered (a server's first flight acknowledges the client's
    Initial); None if none did. With whether the server's stack told (None: it sent nothing):
    (cycle, told)."""
    forward = [f for r, f in zip(t.sent, known_fates(t) or []) if r.direction == "forward"]
    told = all(carries_ack(f) is not None for f in forward) if forward else None
    acks = [f.delivered for f in forward
            if f.fate == "delivered" and carries_ack(f) is not False]
    return min(acks, default=None), told


def first_rtt(t, origin: int) -> dict | None:
    """result.json's ``first_rtt``: the first round trip seen from the client, every datagram it
    sent before the first ACK reached it (:func:`first_ack_cycle`):

    * ``first_ack_s``: when that ACK arrived, from the transfer's start (cycle ``origin``, the
      client's first Initial), so the first RTT the client measured; None: no ACK ever reached
      it, and every datagram it sent counts;
    * ``ack_told``: False where the server's stack does not tell which datagrams carry ACK
      frames (quinn's, where its datagrams could not be read), and the first one delivered
      is taken; None: the server sent nothing;
    * ``datagrams``, ``packets`` (QUIC packets; None where the client's stack does not tell),
      ``bytes`` (frame bytes) and ``udp_bytes``;
    * ``sent``: the first :data:`FIRST_RTT_LISTED` of them, each with its time, sizes, fate,
      packet numbers, packet types and frame types (None: not told).

    None where the run knows no fates."""
    fates = known_fates(t)
    if fates is None:
        return None
    first, told = first_ack_cycle(t)
    before = [(r, f) for r, f in zip(t.sent, fates) if r.direction == "return"
              and (first is None or r.cycle < first)]
    numbers = [f.numbers for _, f in before]
    listed = []
    for r, f in before[:FIRST_RTT_LISTED]:
        listed.append({
            "time_s": _seconds(t, r.cycle, origin), "size": r.size, "udp_size": r.udp_size,
            "fate": f.fate, "packet_numbers": None if f.numbers is None else list(f.numbers),
            "packet_types": None if f.types is None else f.types.split(),
            "frame_types": None if f.frames is None else f.frames.split()})
    return {
        "first_ack_s": None if first is None else _seconds(t, first, origin),
        "ack_told": told,
        "datagrams": len(before),
        "packets": None if any(n is None for n in numbers) else sum(map(len, numbers)),
        "bytes": sum(r.size for r, _ in before),
        "udp_bytes": sum(r.udp_size for r, _ in before),
        "sent": listed,
    }
