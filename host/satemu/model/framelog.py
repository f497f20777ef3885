# SPDX-License-Identifier: BSD-2-Clause
"""The frame log's records (gateware ``satemu_gw.framelog``): their layout, packed and unpacked;
a ring read back from memory, checked and joined into one entry per frame; and the entries a
channel's log must hold by the channel model.

A channel built with the log writes two kinds of record into a ring of ``2^bits`` records in
memory, each two 64-bit words at ``log_base + 2 * slot``:

* **decided**, when the channel has decided a frame's fate (the admission's fate pulse, in
  arrival order): its arrival cycle, length, fate, its index among the frames decided, and the
  index it takes among the frames sent if it is delivered;
* **sent**, when a frame starts to leave (``source.valid`` first rises for it): that cycle, its
  length, its index among the frames sent, and whether it started later than scheduled.

A terminal's delivered frames leave in order (a channel's terminals' need not: their slots
release them; docs/bod.md, "Terminals"), so a sent record belongs to the decided record of its
terminal with the same sent-index, counted apart for each terminal. The log's own counters (frames decided, frames sent) start at 0 when the channel
does and are never cleared, so that a frame decided before a CLEAR still meets its sent record
after it. Each record also carries the ring's lap when it was written (``slot`` counts records
from the last CLEAR; the lap is that count's upper bits), so that a reader tells a record of
this lap from an older one still in the slot, and the bit ``valid``, so that never-written
memory is not taken for a record.

Word 0: ``cycle`` (48 bits, mod 2^48), ``length`` (16). Word 1: ``index`` (24, mod 2^24; sent:
0), ``tx`` (24, mod 2^24), ``fate`` (3), ``kind`` (1: 0 decided, 1 sent), ``late`` (1), ``valid``
(1, always 1), ``terminal`` (4: whose frame, 15 no one's; 0 without terminals), ``lap`` (6,
mod 2^6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from satemu.base.params import Fate
from satemu.base.records import (CYCLE_MOD, DECIDED, INDEX_MOD, LAP_MOD, RECORD_WORDS, SENT, WORD1,
                                 Record, pack, unpack)

__all__ = ["RECORD_WORDS", "WORD1", "DECIDED", "SENT", "Record", "pack", "unpack", "Entry",
           "join", "expected", "read_ring", "check_records", "unwrap"]


@dataclass(frozen=True)
class Entry:
    """One frame as the log tells it."""
    index: int                  # among the frames decided (mod 2^24)
    arrival: int                # mod 2^48
    length: int
    fate: Fate
    egress: int | None = None   # its start, mod 2^48; None: dropped, or not sent yet / lost
    late: bool = False
    # whose frame (NO_TERMINAL: no one's; 0 without terminals): for a capture's comments;
    # the join checks it (a record of another terminal does not join), equality does not
    terminal: int = field(default=0, compare=False)


def check_records(first: int, pairs, bits: int) -> tuple[list[Record], int]:
    """The records of ``pairs`` ((word 0, word 1) each), which a ring of ``2^bits`` records
    held for record numbers ``first``, ``first + 1``, ...: those of the lap their number
    belongs to, and how many were not (``valid`` 0, or another lap: overwritten, or torn while
    the box read them)."""
    out, stale = [], 0
    for n, (w0, w1) in enumerate(pairs, first):
        r = unpack(w0, w1)
        if r is None or r.lap != (n >> bits) % LAP_MOD:
            stale += 1
        else:
            out.append(r)
    return out, stale


def read_ring(words: dict[int, int] | callable, base: int, bits: int, count: int
              ) -> tuple[list[Record], dict]:
    """The records a ring of ``2^bits`` records at word ``base`` holds after ``count`` records
    (``log_count``) were written, oldest first: the last ``min(count, 2^bits)``. ``words`` maps
    a word address to its value (a dict, or a function). A slot whose record is missing
    (``valid`` 0) or of another lap (overwritten while it was read, or never written since
    the CLEAR) is left out and counted in ``problems['stale']``."""
    get = words.get if isinstance(words, dict) else words
    size = 1 << bits
    first = max(0, count - size)
    pairs = [(get(base + 2 * (n % size), 0), get(base + 2 * (n % size) + 1, 0))
             for n in range(first, count)]
    out, stale = check_records(first, pairs, bits)
    return out, {"first": first, "stale": stale, "wrapped": count > size}


def join(records: Iterable[Record]) -> tuple[list[Entry], dict]:
    """One entry per decided record, in order, each delivered one with the sent record of the
    same sent-index (its egress and lateness); returns the entries and what did not join:
    ``unsent`` (delivered, no sent record: still in flight, or the record was lost) and
    ``orphans`` (sent records without their decided one: it was lost, or left the ring)."""
    decided = [r for r in records if r.kind == DECIDED]
    sent = {(r.terminal, r.tx): r for r in records if r.kind == SENT}
    entries, unsent = [], 0
    used = set()
    for r in decided:
        fate = Fate(r.fate)
        s = sent.get((r.terminal, r.tx)) if fate is Fate.DELIVERED else None
        if fate is Fate.DELIVERED and s is None:
            unsent += 1
        if s is not None:
            used.add((r.terminal, r.tx))
        entries.append(Entry(r.index, r.cycle, r.length, fate,
                             None if s is None else s.cycle, bool(s and s.late), r.terminal))
    return entries, {"unsent": unsent, "orphans": len(sent) - len(used)}


def expected(arrivals: Iterable[int], lengths: Iterable[int], frames,
             first_index: int = 0) -> list[Entry]:
    """The entries of a channel's log by the model: one per frame decided (``frames``:
    ``satemu.model.channel.FrameResult``, with each frame's arrival and length), a delivered
    one with its scheduled egress (the log shows the actual start; they are equal whenever the
    channel met its schedule). The channel numbers the frames it decides from its start, never
    from a clear: the first of ``frames`` is its frame ``first_index``."""
    out = []
    for i, (a, n, r) in enumerate(zip(arrivals, lengths, frames)):
        egress = r.egress % CYCLE_MOD if r.fate is Fate.DELIVERED and r.egress is not None \
            else None
        out.append(Entry((first_index + i) % INDEX_MOD, a % CYCLE_MOD, min(n, 0xFFFF), r.fate,
                         egress))
    return out


def unwrap(cycles: Iterable[int], near: int = 0) -> list[int]:
    """Full cycle numbers from 48-bit ones, each the nearest to the one before it (the first,
    to ``near``): the log's records come in time order within far less than 2^47 cycles."""
    out, ref = [], near
    for c in cycles:
        d = (c - ref) % CYCLE_MOD
        ref = ref + d if d < CYCLE_MOD // 2 else ref + d - CYCLE_MOD
        out.append(ref)
    return out
