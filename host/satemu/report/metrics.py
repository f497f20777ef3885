# SPDX-License-Identifier: BSD-2-Clause
"""Figures of one QUIC transfer: time helpers and bins, the summary and its consistency check."""

from __future__ import annotations

from typing import Callable, Iterable

from satemu.report.fates import fate_summary, first_rtt

__all__ = ["summarize", "outcome", "bin_width", "binned", "seconds"]

DIRECTIONS = ("forward", "return")

# Frames the port discarded before the channel saw them: they reach neither rx_frames nor rx_bytes.
PORT_DROPS = ("drop_overrun", "drop_preamble")


# ---------------------------------------------------------------------------------------------
# Time

def origin_cycle(t) -> int:
    """The cycle time is measured from: the first sent record's (the first delivery's if the
    transfer sent nothing, which only a failed start can produce)."""
    if t.sent:
        return t.sent[0].cycle
    if t.delivered:
        return t.delivered[0].cycle
    return 0


def seconds(t, cycle: int, origin: int) -> float:
    """Seconds from cycle ``origin`` to ``cycle`` on ``t``'s clock."""
    return (cycle - origin) / t.f_clk


def _last_time(t) -> float:
    origin = origin_cycle(t)
    cycles = [r.cycle for r in t.sent] + [d.cycle for d in t.delivered]
    return seconds(t, max(cycles), origin) if cycles else 0.0


def duration_s(t) -> float:
    """How long the transfer lasted: its completion time, or the last event if it never
    completed."""
    return t.completion_s if t.completion_s is not None else _last_time(t)


# The most bins a rate plot draws: a slow link's long run gets wider bins, not more bars.
MAX_BINS = 2000


def _span(t) -> int:
    """Cycles from the origin to the transfer's last event (0 without events)."""
    cycles = [r.cycle for r in t.sent] + [d.cycle for d in t.delivered]
    return max(cycles) - origin_cycle(t) if cycles else 0


def bin_width(t) -> tuple[int, str]:
    """The time bin for rate plots as (milliseconds, label): 100 ms for transfers of 10 s or
    less, 1 s for longer ones, and for a run so long that this would make more than
    :data:`MAX_BINS` bins (:func:`binned`), the first of 2, 5, 10, 20, 50 s, ... that makes
    at most that many."""
    ms = 1000 if duration_s(t) > 10 else 100
    span = _span(t)
    while span * 1000 // (t.f_clk * ms) + 1 > MAX_BINS:      # binned's length
        ms = _wider(ms)
    return ms, f"{ms} ms" if ms < 1000 else f"{ms // 1000} s"


def _wider(ms: int) -> int:
    """The first of 1, 2, 5, 10, 20, 50 s, ... above ``ms`` milliseconds."""
    scale = 1000
    while True:
        for m in (1, 2, 5):
            if m * scale > ms:
                return m * scale
        scale *= 10


def binned(t, records: Iterable, value: Callable[[object], float] = lambda r: 1) -> list[float]:
    """Sum ``value(record)`` per time bin (:func:`bin_width`) over ``records``; index ``i`` covers
    ``[i*bin, (i+1)*bin)`` seconds. Bins are assigned with integer arithmetic on cycles, so a
    record exactly on a boundary always opens the next bin. The list covers every event of the
    transfer, so series of one transfer share their length."""
    ms, _ = bin_width(t)
    origin = origin_cycle(t)
    span = t.f_clk * ms            # cycles per bin, times 1000

    def index(cycle: int) -> int:
        return (cycle - origin) * 1000 // span

    out = [0] * (index(origin + _span(t)) + 1)
    for r in records:
        out[index(r.cycle)] += value(r)
    return out


# ---------------------------------------------------------------------------------------------
# Summary

def _ratio(num, den):
    return num / den if den else None


def _consistency(t, sent_n, sent_bytes, delivered_n) -> dict:
    """Endpoints' view against the board's counters, per direction.

    * ``frames_in``: frames the endpoints sent == rx_frames + drop_overrun + drop_preamble (a frame
      the port discarded never reaches rx_frames; with no port drops this is rx_frames itself);
    * ``bytes_in``: frame bytes sent == rx_bytes (exact only without port drops, whose bytes no
      counter holds; a port drop therefore shows as a mismatch here);
    * ``frames_out``: frames delivered to the endpoints == tx_frames (a frame that left the board
      but could not be decoded, or was still in flight when the run stopped, shows here);
    * ``frames_dropped``: sent + the link's copies (``duplicated``) - delivered == the sum of
      every ``drop_*`` counter.

    Without board counters (the real-time mode) there is nothing to compare: ``applicable`` is
    False and ``consistent`` None.
    """
    if not any(t.board_stats.get(d) for d in DIRECTIONS):
        return {"applicable": False, "mismatches": [], "consistent": None}
    out: dict = {"applicable": True}
    mismatches = []
    for d in DIRECTIONS:
        board = t.board_stats.get(d) or {}

        def get(key):
            return board.get(key)

        drops = [v for k, v in board.items() if k.startswith("drop_")]
        rx = get("rx_frames")
        port = [get(k) or 0 for k in PORT_DROPS]
        pairs = {
            "frames_in": (sent_n[d], None if rx is None else rx + sum(port)),
            "bytes_in": (sent_bytes[d], get("rx_bytes")),
            "frames_out": (delivered_n[d], get("tx_frames")),
            "frames_dropped": (sent_n[d] + (get("duplicated") or 0) - delivered_n[d],
                               sum(drops) if board else None),
        }
        section = {}
        for name, (ours, theirs) in pairs.items():
            equal = theirs is not None and ours == theirs
            section[name] = {"endpoints": ours, "board": theirs, "equal": equal}
            if not equal:
                mismatches.append(f"{d}.{name}")
        out[d] = section
    out["mismatches"] = mismatches
    out["consistent"] = not mismatches
    return out


def summarize(t) -> dict:
    """The content of result.json for one transfer.

    ``t`` has the attributes of ``satemu.quic.transfer.Transfer`` (duck-typed). Time runs from the cycle
    of the first sent datagram (the client's first Initial): cycle ``c`` is ``(c - origin) / f_clk``
    seconds. Packet counts and bytes come from ``t.sent`` (what the endpoints put on the wire) and
    are Ethernet frame bytes without FCS, what the emulator counts, unless a key says ``udp`` or
    ``delivered``. Figures that cannot be computed (no completion, division by zero) are None.

    * ``outcome``: how it ended (:func:`outcome`): a run that never completed, even one
      whose handshake never did, is summarized with the counters it has.
    * ``goodput_mbps``: ``size * 8 / completion_s / 1e6``, application bytes over the time from
      the client's start to the last byte received.
    * ``return_share_pct``: return frame bytes as a percentage of forward frame bytes.
    * ``ack_ratio``: forward packets that are not ACK-only (the server's ack-eliciting packets:
      data and handshake) divided by all return packets, ACK-only or not (every return packet
      carries an ACK once the handshake has started). 2 means one return packet per two
      ack-eliciting forward packets.
    * ``forward_pps``/``return_pps``: packets sent in that direction / completion_s.
    * ``speed``: virtual_s / wall_s.
    * ``engine``: what carried the transfer (``board``, ``model`` or ``realtime``); for the model,
      ``exactness`` says where the board could have differed (``BoardModel.exactness``).
    * ``settings``/``stacks``: the endpoint settings (EndpointSettings) and each side's stack.
    * ``handshake_losses``: per side, what its loss recovery declared lost before the handshake
      was confirmed (``handshake_*`` counters, see ``EndpointStats``), and ``declared``, the
      packets both sides declared lost then: a run dominated by them shows here.
    * ``capture``: the run's pcapng when one was written (``satemu.box.port_capture``): its file and
      the key log's (beside result.json), frames per interface, per channel per fate, and
      ``disagreements`` with the box's counters (none, when all is well).
    * ``consistency``: see :func:`_consistency`.
    * ``timeline``: a link with a timeline: the cycle it started at, its period and the
      settings from each step on (``satemu.link.timeline.timeline_dict``); None otherwise.
    * ``fates``: per direction, the datagrams of each fate (delivered, undecodable,
      dropped:CAUSE) and where they disagree with the channels' counters; ``first_rtt``: every
      datagram the client sent before the first ACK reached it (satemu.report.fates); both
      None where the run knows no fates (real time).
    """
    sent_n = {d: 0 for d in DIRECTIONS}
    sent_bytes = {d: 0 for d in DIRECTIONS}
    sent_udp = {d: 0 for d in DIRECTIONS}
    delivered_n = {d: 0 for d in DIRECTIONS}
    delivered_bytes = {d: 0 for d in DIRECTIONS}
    ack_only_n = {d: 0 for d in DIRECTIONS}
    ack_only_bytes = {d: 0 for d in DIRECTIONS}
    for r in t.sent:
        sent_n[r.direction] += 1
        sent_bytes[r.direction] += r.size
        sent_udp[r.direction] += r.udp_size
        if r.ack_only:
            ack_only_n[r.direction] += 1
            ack_only_bytes[r.direction] += r.size
    for dv in t.delivered:
        delivered_n[dv.direction] += 1
        delivered_bytes[dv.direction] += dv.size

    c = t.completion_s if t.completion_s else None       # a zero completion time has no rate
    forward_eliciting = sent_n["forward"] - ack_only_n["forward"]
    return {
        "profile": t.profile, "size": t.size, "ack": t.ack, "cc": t.cc, "seed": t.seed,
        "f_clk": t.f_clk, "engine": getattr(t, "engine", "board"),
        "exactness": getattr(t, "exactness", None),
        "completed": t.completed, "error": t.error, "outcome": outcome(t),
        "completion_s": t.completion_s, "handshake_s": t.handshake_s,
        "goodput_mbps": None if c is None else t.size * 8 / c / 1e6,
        "forward_packets": sent_n["forward"], "forward_bytes": sent_bytes["forward"],
        "forward_udp_bytes": sent_udp["forward"],
        "forward_ack_only_packets": ack_only_n["forward"],
        "return_packets": sent_n["return"], "return_bytes": sent_bytes["return"],
        "return_udp_bytes": sent_udp["return"],
        "return_share_pct": (None if not sent_bytes["forward"]
                             else 100 * sent_bytes["return"] / sent_bytes["forward"]),
        "ack_only_packets": ack_only_n["return"], "ack_only_bytes": ack_only_bytes["return"],
        "ack_ratio": _ratio(forward_eliciting, sent_n["return"]),
        "forward_pps": None if c is None else sent_n["forward"] / c,
        "return_pps": None if c is None else sent_n["return"] / c,
        "forward_delivered_packets": delivered_n["forward"],
        "forward_delivered_bytes": delivered_bytes["forward"],
        "return_delivered_packets": delivered_n["return"],
        "return_delivered_bytes": delivered_bytes["return"],
        "max_ack_delay_advertised_ms": t.max_ack_delay_advertised_ms,
        "max_ack_delay_used_ms": t.max_ack_delay_used_ms,
        "undecodable": t.undecodable,
        "terminal_stats": getattr(t, "terminal_stats", None),
        "board": {d: dict(v) for d, v in t.board_stats.items()},
        "client_stats": dict(t.client_stats), "server_stats": dict(t.server_stats),
        "consistency": _consistency(t, sent_n, sent_bytes, delivered_n),
        "timeline": getattr(t, "timeline", None),
        "wall_s": t.wall_s, "virtual_s": t.virtual_s,
        "speed": _ratio(t.virtual_s, t.wall_s),
        "bod": bod_summary(t),
        "capture": getattr(t, "capture", None),
        "settings": getattr(t, "settings", None), "stacks": getattr(t, "stacks", None),
        "handshake_losses": handshake_losses(t),
        "fates": fate_summary(t), "first_rtt": first_rtt(t, origin_cycle(t)),
    }


def handshake_losses(t) -> dict:
    """Each side's ``handshake_*`` counters and ``cwnd_at_confirmation``, and ``declared``: the
    packets the two sides declared lost (by loss detection or a probe timeout's resend) before
    their handshakes were confirmed, or so far, for a side whose handshake never was. quinn's
    ``handshake_lost_packets`` is its loss count as its handshake completed, None until then:
    every packet it has declared lost (``lost_packets``) counts then."""
    out: dict = {}
    declared = 0
    for side, stats in (("client", t.client_stats), ("server", t.server_stats)):
        stats = dict(stats)
        mine = {k: v for k, v in stats.items()
                if k.startswith("handshake_") or k == "cwnd_at_confirmation"}
        out[side] = mine
        lost = mine.get("handshake_lost_packets")
        if lost is None and "handshake_lost_packets" in mine:
            lost = stats.get("lost_packets")
        declared += (lost or 0) + (mine.get("handshake_pto_resent") or 0)
    out["declared"] = declared
    return out


def outcome(t) -> str:
    """How the transfer ended, in words: ``completed``; ``failed: ERROR``; or, stopped by its
    time limit, how far it got (whether its handshake ever completed)."""
    if t.completed:
        return "completed"
    if t.error:
        return f"failed: {t.error}"
    if t.handshake_s is None:
        return f"time limit: the handshake never completed in {t.virtual_s:.3f} s"
    return (f"time limit: the handshake completed at {t.handshake_s:.3f} s, the download not "
            f"in {t.virtual_s:.3f} s")


def bod_summary(t) -> dict | None:
    """What the BoD return link granted during the transfer, from the superframes that start
    between the transfer's first datagram (``origin``) and its end (``virtual_s``):

    * ``granted_slots``/``used_slots`` (a slot is used when it carried a byte), and their bytes;
    * ``slot_use_pct``: used as a percentage of granted;
    * ``time_to_first_grant_s``: from the first datagram to the start of the first superframe
      with RBDC or VBDC slots (demand-driven capacity; CRA and FCA come without asking);
    * ``lost``: superframes the ring overwrote before they were read (the figures then cover
      only what was read).
    """
    bod = getattr(t, "bod", None)
    if not bod:
        return None
    from satemu.box.bod_trace import superframe_at
    origin = origin_cycle(t)
    end = origin + round(t.virtual_s * t.f_clk)
    sf_cycles, slot_bytes = bod["superframe_cycles"], bod["slot_bytes"]
    segments = bod.get("segments") or [(0, 0, sf_cycles, slot_bytes)]
    shape = {r["sf"]: superframe_at(segments, r["sf"]) for r in bod["records"]}
    window = [r for r in bod["records"] if origin <= bod["start"] + shape[r["sf"]][0] < end]
    granted = sum(r["g_cra"] + r["g_rbdc"] + r["g_vbdc"] + r["g_fca"] for r in window)
    used = sum(r["used"] for r in window)
    first = next((r for r in window if r["g_rbdc"] + r["g_vbdc"] > 0), None)
    return {
        "superframes": len(window), "superframe_s": sf_cycles / t.f_clk, "slot_bytes": slot_bytes,
        "granted_slots": granted, "used_slots": used,
        "granted_bytes": sum((r["g_cra"] + r["g_rbdc"] + r["g_vbdc"] + r["g_fca"])
                             * shape[r["sf"]][2] for r in window),
        "used_bytes": sum(r["used"] * shape[r["sf"]][2] for r in window),
        "slot_use_pct": _ratio(100 * used, granted),
        "rbdc_slots": sum(r["g_rbdc"] for r in window),
        "vbdc_slots": sum(r["g_vbdc"] for r in window),
        "time_to_first_grant_s": None if first is None else
        (bod["start"] + shape[first["sf"]][0] - origin) / t.f_clk,
        "lost": bod.get("lost", []),
    }
