# SPDX-License-Identifier: BSD-2-Clause
"""Captures of the box's two ports as pcapng (``satemu.base.pcapng``): what a co-simulation put on
each port's wire and what left each port, with every frame's fate, timed from the board's cycles.

A capture has four interfaces: port A in, port A out, port B in, port B out (``INTERFACES``).
Each frame is as on the wire after the SFD: its bytes and its FCS (``if_fcslen`` 4), so that a
frame with a bad FCS shows as one. Its timestamp is the cycle its first wire beat (the preamble)
was on the port's wire, counted from the transfer's origin, at nanosecond resolution
(``cycle * 10^9 // f_clk``; exact when a cycle is a whole number of nanoseconds, 160 ns on the
simulated board). Every frame into a port carries, as a comment and in ``epb_flags``, what the
channel did with it: delivered (when and where it left) or dropped, and why; every frame out of
a port says when it came in. docs/architecture.md, "Captures", has the details.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from satemu.model.board import CHANNEL_INTO, EGRESS_PORT, PORT_A, PORT_B, Traffic
from satemu.base.ether import PREAMBLE
from satemu.base.params import FATE_COPY, Fate
from satemu.model.ecn import ce_marked, describe_kind, ecn_kind
from satemu.base.pcapng import (ERR_CRC, ERR_PREAMBLE, ERR_TOO_LONG, ERR_TOO_SHORT, INBOUND,
    OUTBOUND, PcapngWriter)

__all__ = ["INTERFACES", "CAUSES", "FrameFate", "fates_of", "write_capture", "check_counts"]

PORT_NAMES = {PORT_A: "A", PORT_B: "B"}
CHANNEL_NAMES = {0: "forward", 1: "return"}
# (port, direction) in the order of the capture's interface ids.
INTERFACES = ((PORT_A, "in"), (PORT_A, "out"), (PORT_B, "in"), (PORT_B, "out"))
FCS_LEN = 4
FCS_FLAGS = FCS_LEN << 5               # epb_flags bits 5-8: the FCS length

# Why a frame was dropped: a cause's name (as in the counters, drop_<name>), what it means, and
# the link-layer error bit of epb_flags that goes with it (0: the emulated link dropped it).
CAUSES = {
    Fate.RUNT: ("runt", "shorter than the profile's min_len", ERR_TOO_SHORT),
    Fate.OVERSIZE: ("oversize", "longer than the profile's max_len", ERR_TOO_LONG),
    Fate.ERROR: ("error", "bad FCS", ERR_CRC),
    Fate.LOSS: ("loss", "the link's loss drew it", 0),
    Fate.QUEUE: ("queue", "the bottleneck queue was full", 0),
    Fate.MEM: ("mem", "the delay line's memory was full", 0),
    Fate.UNCLASSIFIED: ("unclassified", "from no terminal the profile declares", 0),
    "overrun": ("overrun", "the channel's ingress FIFO had no room", 0),
    "preamble": ("preamble", "no preamble and SFD: the MAC discarded it", ERR_PREAMBLE),
}


@dataclass(frozen=True)
class FrameFate:
    """What became of one frame put on a port's wire."""
    fate: object                     # a Fate, "overrun" or "preamble"
    arrival: int | None = None       # the channel's arrival cycle (None: never reached it)
    egress: object | None = None     # a satemu.model.board.Egress, when delivered
    copy: "FrameFate | None" = None  # duplication's copy of it, where it was copied


def fates_of(traffic: Traffic, port: int, wires: list[bytes]) -> list[FrameFate]:
    """Each frame put on ``port``'s wire (``wires``, in order, preamble to FCS) matched with what
    the engine reported: the channel's ingress events (taken or overrun), its fate reports (one
    per taken frame, in order) and the frames that left the other port (delivered ones leave in
    order). A frame without a preamble and SFD never reaches the channel: the MAC drops it.
    A frame duplication copied has its copy's fate (the next report, marked FATE_COPY) in
    ``copy``."""
    ch = CHANNEL_INTO[port]
    events, fates, egress = traffic.events[ch], traffic.fates[ch], traffic.egress[ch]
    out, e, taken, delivered = [], 0, 0, 0
    for wire in wires:
        if wire[:len(PREAMBLE)] != PREAMBLE or len(wire) == len(PREAMBLE):
            out.append(FrameFate("preamble"))
            continue
        if e >= len(events):
            raise ValueError(f"port {PORT_NAMES[port]}: {len(wires)} frames on the wire but "
                             f"only {len(events)} ingress events reported")
        cycle, kind = events[e]
        e += 1
        if kind == "O":
            out.append(FrameFate("overrun"))
            continue
        if taken >= len(fates) or fates[taken] & FATE_COPY:
            raise ValueError(f"port {PORT_NAMES[port]}: no fate reported for frame {taken} "
                             f"the {CHANNEL_NAMES[ch]} channel took")

        def decided() -> FrameFate:
            nonlocal taken, delivered
            fate = Fate(fates[taken] & ~FATE_COPY)
            taken += 1
            if fate is not Fate.DELIVERED:
                return FrameFate(fate, cycle)
            if delivered >= len(egress):
                raise ValueError(f"the {CHANNEL_NAMES[ch]} channel delivered frame {taken - 1} "
                                 f"but only {len(egress)} frames left port "
                                 f"{PORT_NAMES[EGRESS_PORT[ch]]}")
            delivered += 1
            return FrameFate(fate, cycle, egress[delivered - 1])

        f = decided()
        if taken < len(fates) and fates[taken] & FATE_COPY:
            f = replace(f, copy=decided())
        out.append(f)
    return out


def flipped_bits(sent: bytes, left: bytes) -> list[int]:
    """The bits of a frame (bit b: bit b % 8 of byte b // 8, satemu.model.corrupt) that differ
    between the bytes ``sent`` into a port and those that ``left`` the other (which the MAC may
    have padded): corruption's."""
    out = []
    for i, (a, b) in enumerate(zip(sent, left)):
        x = a ^ b
        while x:
            low = x & -x
            out.append(8 * i + low.bit_length() - 1)
            x ^= low
    return out


def ns_of(cycle: int, origin: int, f_clk: int) -> int:
    """A cycle as a timestamp: nanoseconds since ``origin``, rounded down."""
    return (cycle - origin) * 1_000_000_000 // f_clk


def ms_of(cycles: int, f_clk: int) -> str:
    """A number of cycles as milliseconds, to the nanosecond."""
    return f"{cycles * 1000 / f_clk:.6f} ms"


def write_capture(path: "str | Path", traffic: Traffic, wires: dict[int, list[tuple[int, bytes]]],
                  f_clk: int, origin: int = 0, keylog: bytes | None = None,
                  comment: str = "", whose=None) -> dict:
    """Writes the pcapng of one run: ``wires`` holds, per port, the frames put on its wire
    (the cycle each started on the wire, its bytes from preamble to FCS), ``traffic`` what the
    engine reported. ``keylog`` (SSLKEYLOGFILE lines) goes in a Decryption Secrets Block ahead
    of the packets. ``whose`` (``satemu.link.terminals.Terminals.whose``), where the profile
    declares terminals, names each frame's terminal in its comments. Returns the counts per
    interface and, per channel, per fate."""
    records = []                  # (timestamp ns, order, interface, data, flags, comment)
    counts = {f"{PORT_NAMES[p]}-{d}": 0 for p, d in INTERFACES}
    fates: dict[str, dict[str, int]] = {name: {} for name in CHANNEL_NAMES.values()}
    iface = {key: i for i, key in enumerate(INTERFACES)}
    seq = 0

    def what_became(r: FrameFate, at: str, cycle: int) -> tuple[str, str]:
        """The comment on a frame in (its outbound record added, where it left) and its tally
        key."""
        nonlocal seq
        if r.egress is None:
            cause, why, _ = CAUSES[r.fate]
            text = f"{at}: dropped: {cause} ({why})"
            if r.arrival is not None:
                text += f"; arrival at the channel {r.arrival - origin}"
            return text, f"drop_{cause}"
        e = r.egress
        text = (f"{at}: delivered, left port {out_name} at cycle {e.wire - origin}, "
                f"{ms_of(e.wire - cycle, f_clk)} after it came in (channel: arrival "
                f"{r.arrival - origin}, egress {e.start - origin})")
        sent, left = data[:-FCS_LEN], e.data[len(PREAMBLE):-FCS_LEN]
        flips = flipped_bits(sent, left)
        kind = ecn_kind(sent)
        marked = ce_marked(sent, kind)
        if kind and marked != sent and len(flipped_bits(marked, left)) < len(flips):
            # ECN marking set the ECN field to CE (and the IPv4 checksum); any other bit
            # that differs is corruption's.
            flips = flipped_bits(marked, left)
            text += f", marked CE ({describe_kind(kind)})"
        if flips:
            text += (f", {'bits' if len(flips) > 1 else 'bit'} "
                     f"{', '.join(map(str, flips))} flipped, FCS recomputed")
        seq += 1
        records.append((ns_of(e.wire, origin, f_clk), seq, iface[(EGRESS_PORT[ch], "out")],
                        e.data[len(PREAMBLE):], OUTBOUND | FCS_FLAGS,
                        f"{at} at cycle {cycle - origin}, held {ms_of(e.wire - cycle, f_clk)}"
                        + (f", bit {flips[0]} flipped" if len(flips) == 1 else "")))
        counts[f"{out_name}-out"] += 1
        return text, "delivered"

    for port in (PORT_A, PORT_B):
        ch = CHANNEL_INTO[port]
        name, out_name = PORT_NAMES[port], PORT_NAMES[EGRESS_PORT[ch]]
        sent = wires.get(port, [])
        results = fates_of(traffic, port, [w for _, w in sent])
        for n, ((cycle, wire), r) in enumerate(zip(sent, results)):
            data = wire[len(PREAMBLE):] if wire[:len(PREAMBLE)] == PREAMBLE else wire
            flags = INBOUND | FCS_FLAGS
            at = f"{CHANNEL_NAMES[ch]} channel, frame {n} in on port {name}"
            if whose is not None:
                at += f", {whose(ch, data)}"
            text, key = what_became(r, at, cycle)
            if r.copy is not None:
                # Duplication's copy: a frame of its own, out behind the original.
                copy_text, copy_key = what_became(r.copy, f"{at}, its copy", cycle)
                text += f"; duplicated, the copy{copy_text[len(at) + len(', its copy'):]}"
                tally = fates[CHANNEL_NAMES[ch]]
                tally[copy_key] = tally.get(copy_key, 0) + 1
                tally["duplicated"] = tally.get("duplicated", 0) + 1
            if r.egress is None:
                flags |= CAUSES[r.fate][2]
            tally = fates[CHANNEL_NAMES[ch]]
            tally[key] = tally.get(key, 0) + 1
            seq += 1
            records.append((ns_of(cycle, origin, f_clk), seq, iface[(port, "in")], data, flags,
                            text))
            counts[f"{name}-in"] += 1
    records.sort(key=lambda r: (r[0], r[1]))
    descriptions = {
        (PORT_A, "in"): "port A (terminal side), frames into the box: the return channel's",
        (PORT_A, "out"): "port A (terminal side), frames out of the box: the forward channel's",
        (PORT_B, "in"): "port B (gateway side), frames into the box: the forward channel's",
        (PORT_B, "out"): "port B (gateway side), frames out of the box: the return channel's",
    }
    with PcapngWriter(path, comment=comment or None) as w:
        for port, d in INTERFACES:
            w.interface(f"port{PORT_NAMES[port]}-{d}", descriptions[(port, d)], fcslen=FCS_LEN)
        if keylog:
            w.secrets(keylog)
        for ts, _, i, data, flags, text in records:
            w.packet(i, max(ts, 0), data, flags=flags, comments=(text,))
    return {"path": str(path), "interfaces": counts, "fates": fates}


def check_counts(summary: dict, stats: dict) -> list[str]:
    """Where a capture's counts (``write_capture``'s summary) disagree with the channels'
    counters ``stats`` (per direction, as GET_STATS reports them): the frames into each port
    against the channel's rx_frames, overruns and preamble errors, the frames out of each port
    against its tx_frames, and each fate against its counter. Empty when they agree."""
    out = []
    for ch, name in CHANNEL_NAMES.items():
        s, tally = stats[name], summary["fates"][name]
        port_in = PORT_NAMES[[p for p, c in CHANNEL_INTO.items() if c == ch][0]]
        port_out = PORT_NAMES[EGRESS_PORT[ch]]
        entered = s["rx_frames"] + s.get("drop_overrun", 0) + s.get("drop_preamble", 0)
        pairs = [(f"port {port_in} in", summary["interfaces"][f"{port_in}-in"], entered),
                 (f"port {port_out} out", summary["interfaces"][f"{port_out}-out"],
                  s["tx_frames"]),
                 (f"{name} delivered", tally.get("delivered", 0), s["tx_frames"]),
                 (f"{name} duplicated", tally.get("duplicated", 0), s.get("duplicated", 0))]
        for cause, _, _ in CAUSES.values():
            key = f"drop_{cause}"
            pairs.append((f"{name} {key}", tally.get(key, 0), s.get(key, 0)))
        out += [f"{what}: {got} in the capture, {want} counted by the box"
                for what, got, want in pairs if got != want]
    return out
