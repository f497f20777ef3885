# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of the delta-coded departure queue (``satemu_gw.depdelta``).

A channel without the departure-time ring can hold a deep queue on chip if each entry is small.
An entry there is the frame's departure as its distance from the departure of the entry before
it (``DELTA_BITS``), and its length (``LENGTH_BITS``, ``max_frame`` written as 0): 34 bits, each
in a block RAM of 16,384 one-bit words, so 16,384 entries take 34 block RAMs and no multiplexer
behind them, where whole departure times (64 bits) would take 64.

The departures of a queue are in order, and the distance between two that are queued together is
short. A shaped frame departs at most its serialisation plus a cycle after the one before it
while that one is still queued, so the validators keep a frame's serialisation under
``FRAME_SPAN`` cycles (``satemu.base.validate``). A frame the BoD block releases departs at the end of
a slot no later than the engine's horizon plus a slot, while the entry before it has not fallen
behind by more than the engine's pops take; the validators keep a slot under ``SLOT_SPAN``
cycles, half of what a distance holds, the other half for that. An entry pushed into an empty
queue carries no distance: the queue takes its departure whole, as the base of the entries after.

The model is the queue's contract: what the gateware stores for each entry and what it gives
back, which must be the entry pushed. ``satemu.model.channel`` holds the queue as a plain list
of departures; nothing in the channel's timing depends on how they are coded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from satemu.base.queues import DELTA_BITS, LENGTH_BITS

__all__ = ["DeltaQueueModel"]


@dataclass
class DeltaQueueModel:
    """The queue's entries, oldest first, and the departure the next entry is coded against.

    ``push(departure, length, empty)`` takes an entry: ``empty`` is whether the queue held
    nothing at all in the cycle (the gateware's registered view: no entry stored and none at
    the head). It returns the word stored. ``pop()`` gives the oldest entry back, as
    (departure, length)."""

    entries: deque = field(default_factory=deque)
    tail: int = 0             # the departure of the last entry pushed

    def push(self, departure: int, length: int, empty: bool) -> int:
        assert 1 <= length <= 1 << LENGTH_BITS, f"length {length} does not fit an entry"
        delta = 0 if empty else (departure - self.tail) % (1 << 48)   # departures mod 2^48
        assert 0 <= delta < 1 << DELTA_BITS, \
            f"departure {departure} is {delta} cycles after the one before it"
        self.tail = departure
        self.entries.append((departure, length))
        return delta | (length % (1 << LENGTH_BITS)) << DELTA_BITS

    def pop(self) -> tuple[int, int]:
        return self.entries.popleft()
