# SPDX-License-Identifier: BSD-2-Clause
"""Terminals behind port A, as register values: which frames are whose, and each terminal's
queue, loss, Bandwidth-on-Demand settings and, for a synthetic terminal, its demand.

A channel's terminal table (``TerminalTable``) holds up to ``Hardware.terminals`` terminals that
carry frames and synthetic ones besides. A frame is classified by the key its header carries
(``frame_key``): port A's frames (the return channel) by their source MAC address or 802.1Q
VLAN ID, port B's (the forward channel) by their destination's. docs/bod.md ("Terminals") has the
rules every terminal is served by; ``satemu.model.bod`` and ``satemu.model.channel`` implement
them; ``satemu.link.terminals`` turns a profile's ``[[terminal]]`` tables into these values.

Nothing here imports Amaranth or LiteX, so the host tool carries it without them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["MATCH_NONE", "MATCH_MAC", "MATCH_VLAN", "UNCLASSIFIED_DROP", "TERM_SYNTHETIC",
           "TERM_FCA", "DEMAND_NONE", "DEMAND_CONSTANT", "DEMAND_ONOFF", "DEMAND_LEVELS",
           "TERMINAL_FIELDS", "TerminalRegs", "TerminalTable", "frame_key", "LEVEL_RATE_BITS",
           "LEVEL_SUPERFRAME_BITS", "VLAN_TPID", "DEMAND_ONE", "share_bits",
           "terminal_share", "TERMINAL_BITS", "NO_TERMINAL"]

# A frame's terminal as it travels through a channel (descriptors, headers, queue entries, the
# frame log): a table's index, or NO_TERMINAL (no one's).
TERMINAL_BITS = 4
NO_TERMINAL = (1 << TERMINAL_BITS) - 1

# How frames are told apart (the table's ``match``): not at all (one terminal, the channel's own
# settings), by MAC address, or by 802.1Q VLAN ID.
MATCH_NONE, MATCH_MAC, MATCH_VLAN = 0, 1, 2
# ``unclassified``: frames of no declared terminal are dropped (``Fate.UNCLASSIFIED``) rather than
# given to a terminal of the table.
UNCLASSIFIED_DROP = 0xFF
VLAN_TPID = 0x8100
# A terminal's flags: it carries no frames (its demand is its ``demand_*`` process); free
# capacity goes to it.
TERM_SYNTHETIC = 1 << 0
TERM_FCA = 1 << 1
# A synthetic terminal's demand, bytes a superframe: none; ``demand_rate`` every superframe; that
# rate while on, nothing while off, switching at random (``demand_on``, ``demand_off``); or a
# schedule of levels from the channel's level table (``demand_first``, ``demand_count``).
DEMAND_NONE, DEMAND_CONSTANT, DEMAND_ONOFF, DEMAND_LEVELS = 0, 1, 2, 3
DEMAND_ONE = 256                # demand rates are bytes a superframe x DEMAND_ONE
# A level of the table: bytes a superframe x DEMAND_ONE (bits 31..0), for superframes (47..32).
LEVEL_RATE_BITS, LEVEL_SUPERFRAME_BITS = 32, 16

# Each terminal's registers: (name, width, what it holds).
TERMINAL_FIELDS = (
    ("key", 48, "the terminal's MAC address (a 48-bit number, first byte most significant) or "
                "VLAN ID, as the table's match says"),
    ("flags", 2, "bit 0 SYNTHETIC (no frames), bit 1 FCA (free capacity goes to it)"),
    ("queue_frames", 16, "its queue's limit in frames"),
    ("queue_bytes", 32, "its queue's limit in bytes (frame lengths)"),
    ("loss_mode", 2, "0 none, 1 Bernoulli, 2 Gilbert-Elliott"),
    ("loss_p", 32, "Bernoulli loss probability x 2^32"),
    ("ge_p", 32, "Gilbert-Elliott P(Good->Bad) per frame x 2^32"),
    ("ge_r", 32, "Gilbert-Elliott P(Bad->Good) per frame x 2^32"),
    ("ge_loss_good", 32, "Gilbert-Elliott loss probability in Good x 2^32"),
    ("ge_loss_bad", 32, "Gilbert-Elliott loss probability in Bad x 2^32"),
    ("cra", 24, "CRA, slots per superframe x 256"),
    ("rbdc_max", 24, "RBDC maximum, slots per superframe x 256 (0: no RBDC)"),
    ("rbdc_timeout", 16, "superframes an RBDC request stays valid (0: until replaced)"),
    ("vbdc_max", 16, "VBDC slots requested and not yet granted, at most (0: no VBDC)"),
    ("req_period", 16, "superframes between its capacity requests (>= 1)"),
    ("demand_kind", 2, "a synthetic terminal's demand: 0 none, 1 constant, 2 on/off, 3 levels"),
    ("demand_rate", 32, "bytes a superframe x 256: constant, or while on"),
    ("demand_on", 32, "on/off: P(off->on) per superframe x 2^32"),
    ("demand_off", 32, "on/off: P(on->off) per superframe x 2^32"),
    ("demand_first", 16, "levels: the schedule's first entry in the level table"),
    ("demand_count", 16, "levels: its entries (>= 1); the schedule repeats"),
)


@dataclass(frozen=True)
class TerminalRegs:
    """One terminal's register values (``TERMINAL_FIELDS``); the defaults are a terminal with
    frames, a queue of the hardware's depth, no loss and no BoD capacity of its own."""

    key: int = 0
    flags: int = 0
    queue_frames: int = 0xFFFF
    queue_bytes: int = 0xFFFF_FFFF
    loss_mode: int = 0              # regmap.LOSS_NONE
    loss_p: int = 0
    ge_p: int = 0
    ge_r: int = 0
    ge_loss_good: int = 0
    ge_loss_bad: int = 0
    cra: int = 0
    rbdc_max: int = 0
    rbdc_timeout: int = 0
    vbdc_max: int = 0
    req_period: int = 1
    demand_kind: int = DEMAND_NONE
    demand_rate: int = 0
    demand_on: int = 0
    demand_off: int = 0
    demand_first: int = 0
    demand_count: int = 0

    @property
    def synthetic(self) -> bool:
        return bool(self.flags & TERM_SYNTHETIC)

    @property
    def fca(self) -> bool:
        return bool(self.flags & TERM_FCA)

    def values(self) -> tuple[int, ...]:
        """The register values in ``TERMINAL_FIELDS`` order."""
        return tuple(getattr(self, name) for name, _, _ in TERMINAL_FIELDS)


assert [f.name for f in fields(TerminalRegs)] == [name for name, _, _ in TERMINAL_FIELDS]


@dataclass(frozen=True)
class TerminalTable:
    """A channel's terminals: how frames are matched (``MATCH_*``), the terminals (those with
    frames first, then the synthetic ones), where frames of no terminal go (a terminal's index,
    or ``UNCLASSIFIED_DROP``) and the level table the synthetic terminals' schedules index
    (``levels``: (bytes a superframe x DEMAND_ONE, superframes) per entry).

    A table of no terminals is a channel without one: one terminal, every frame, the channel's
    own queue, loss and BoD registers (the single terminal of docs/bod.md)."""

    match: int = MATCH_NONE
    terminals: tuple[TerminalRegs, ...] = ()
    unclassified: int = UNCLASSIFIED_DROP
    levels: tuple[tuple[int, int], ...] = ()
    # The forward channel's: one shared queue, the table only saying whose each frame is (its
    # destination's); a frame of no terminal is counted as no one's, never dropped.
    shared: bool = False

    def registers(self) -> dict[str, int]:
        """The channel's ``term_*`` registers (``regmap.TERM_FIELDS``) for this table."""
        return {"term_match": self.match if self.terminals else MATCH_NONE,
                "term_framed": len(self.framed),
                "term_synthetic": len(self.terminals) - len(self.framed),
                "term_unclassified": self.unclassified}

    @property
    def framed(self) -> tuple[TerminalRegs, ...]:
        """The terminals that carry frames (indices 0 .. len - 1)."""
        return tuple(t for t in self.terminals if not t.synthetic)

    def classify(self, key: int | None) -> int | None:
        """The index of the terminal a frame of ``key`` belongs to, or None (unclassified:
        dropped, or on the forward channel counted as no terminal's)."""
        if key is not None:
            for i, t in enumerate(self.framed):
                if t.key == key:
                    return i
        if self.shared or self.unclassified == UNCLASSIFIED_DROP:
            return None
        return self.unclassified


def share_bits(framed: int) -> int:
    """The fewest halvings that split a whole into at least ``framed`` equal parts."""
    return (max(framed, 1) - 1).bit_length()


def terminal_share(words: int, framed: int) -> int:
    """Each terminal's share of a delay line of ``words`` where ``framed`` terminals have their
    own: the fewest equal parts, a power of two, that give each one (terminal i's starts at
    ``i * share``)."""
    return words >> share_bits(framed)


def frame_key(frame: bytes, match: int, source: bool) -> int | None:
    """The key a frame (from its destination MAC address on, as the channels see it) is
    classified by: its source MAC (``source``: port A's frames) or destination MAC address as
    a 48-bit number, or the VLAN ID of its 802.1Q tag; None where it has no such field (too
    short, or untagged)."""
    if match == MATCH_MAC:
        at = 6 if source else 0
        return int.from_bytes(frame[at:at + 6], "big") if len(frame) >= at + 6 else None
    if match == MATCH_VLAN:
        if len(frame) < 16 or int.from_bytes(frame[12:14], "big") != VLAN_TPID:
            return None
        return int.from_bytes(frame[14:16], "big") & 0xFFF
    return None
