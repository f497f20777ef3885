# SPDX-License-Identifier: BSD-2-Clause
"""Reference model of the departure queue (``satemu_gw.depqueue``): where each entry waits.

The bottleneck queue's departure times form one first-in, first-out queue. A channel holds
``ChannelParams.queue_onchip`` of them on chip; where its queue may be deeper
(``ChannelParams.spill_words``), the rest wait in a ring of memory words just past the
delay-line region. The model takes the same events as the gateware, in the same cycles, and
says what the gateware must do with each: which entries go on chip and which to the ring, the
ring address of each write and read, and the size of each burst of reads. The channel's
timing does not depend on any of it (``satemu.model.channel`` has no notion of where a
departure time is held); the memory traffic does, and ``delay_line_traffic`` counts it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from satemu.base.params import ChannelParams
from satemu.base.queues import BURST, STAGE

__all__ = ["DepartureQueueModel"]


@dataclass
class DepartureQueueModel:
    """The queue of one channel built with ``params`` whose ring starts at word ``base``.

    Each cycle, call in this order: ``decide()`` (the burst decided in it, from the state the
    cycle starts with), ``ready()`` (may a push be taken), then ``push`` if one is, ``pop`` for
    an entry taken from the head, ``write`` and ``written`` for the ring word the writer takes
    and the one memory takes, ``read`` and ``returned`` for a read issued and one answered.
    ``room`` and ``level`` are the chip FIFO's own (a library FIFO, whose levels lag a write by
    a cycle). The methods raise ``AssertionError`` where the gateware leaves the model."""

    params: ChannelParams
    base: int
    ring_slots: int = 0       # test only: a smaller ring than ``params.spill_words``
    chip: deque = field(default_factory=deque)       # on chip, oldest first
    staged: deque = field(default_factory=deque)     # waiting for the writer
    ring: deque = field(default_factory=deque)       # (slot, entry): sent to the writer
    spilled: int = 0          # entries off chip: staged, in the ring, or being read back
    wr_slot: int = 0          # the ring's next slot to write, read, and slots memory took
    rd_slot: int = 0
    done: int = 0
    burst_left: int = 0       # reads of the current burst still to issue
    inflight: deque = field(default_factory=deque)   # reads issued, data to come

    @property
    def slots(self) -> int:
        return self.ring_slots or self.params.spill_words

    def address(self, slot: int) -> int:
        """The memory word of ring slot ``slot``."""
        return self.base + slot % self.slots

    def ready(self, room: bool) -> bool:
        """Whether a push is taken this cycle, the chip FIFO having ``room`` or not."""
        return (self.spilled == 0 and room) or len(self.staged) < STAGE

    def push(self, entry: int, room: bool) -> str:
        """An entry pushed this cycle (``ready()`` was true): "chip" or "ring"."""
        assert self.ready(room), "push while not ready"
        if self.spilled == 0 and room:
            self.chip.append(entry)
            return "chip"
        self.staged.append(entry)
        self.spilled += 1
        return "ring"

    def pop(self) -> int:
        """The head entry, taken this cycle."""
        assert self.chip, "pop from an empty chip FIFO"
        return self.chip.popleft()

    def offers(self, level: int, readable: bool, waiting: bool) -> bool:
        """Whether the writer is offered a ring write this cycle, the staging FIFO at ``level``
        with its oldest entry ``readable`` or not, and the head in the ring path or not
        (``waiting``): a pair, an even slot then the odd one, or one to an odd slot, or the
        one the head waits for."""
        assert level == len(self.staged)
        return readable and (level >= 2 or bool(self.wr_slot % 2) or waiting)

    def write(self) -> tuple[int, int]:
        """The writer takes the oldest staged entry this cycle: its (address, entry)."""
        assert self.staged, "a ring write with nothing staged"
        entry = self.staged.popleft()
        slot, self.wr_slot = self.wr_slot, self.wr_slot + 1
        self.ring.append((slot, entry))
        return self.address(slot), entry

    def written(self):
        """Memory took the data of the oldest ring write not yet taken."""
        assert self.done < self.wr_slot, "wr_done with no write outstanding"
        self.done += 1

    def read(self) -> tuple[int, bool]:
        """A read issued this cycle: its (address, last of its burst)."""
        assert self.burst_left, "a read outside a burst"
        slot = self.rd_slot
        assert slot < self.done, "a read of a slot memory has not taken yet"
        self.rd_slot += 1
        self.burst_left -= 1
        self.inflight.append(slot)
        return self.address(slot), self.burst_left == 0

    def returned(self, data: int):
        """A read's data came back this cycle: it goes on chip."""
        slot = self.inflight.popleft()
        ring_slot, entry = self.ring.popleft()
        assert ring_slot == slot and data == entry, "read data out of order"
        self.chip.append(entry)
        self.spilled -= 1

    def decide(self, level: int) -> int:
        """The start of a cycle in which the chip FIFO's level is ``level``: the size of the
        burst decided in it (its reads start the next cycle), or 0."""
        if self.burst_left == 0 and not self.inflight and self.done > self.rd_slot \
                and level <= self.params.queue_onchip - BURST:
            self.burst_left = min(BURST, self.done - self.rd_slot)
            return self.burst_left
        return 0
