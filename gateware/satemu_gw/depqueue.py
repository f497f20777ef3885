# SPDX-License-Identifier: BSD-2-Clause
"""Departure queue: a queue's departure times, on chip up to a depth, then in memory."""

from amaranth import Module, Signal, Mux
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.queues import BURST, STAGE

from .layouts import QueueEntry, SpillRead, SpillWrite


class DepartureQueue(wiring.Component):
    """A first-in, first-out queue of ``QueueEntry`` (a frame's departure cycle and length) that
    holds ``params.queue_onchip`` entries on chip and the rest in a ring of
    ``params.spill_words`` words at word ``base`` (the first word past the delay-line region).
    Its model is a plain FIFO: ``satemu.model.depqueue`` gives where each entry goes.

    * ``push`` takes an entry. While no entry waits in memory and the chip has room, it goes
      straight on chip; otherwise it joins the ring: it waits (at most ``STAGE`` of them) for
      the writer (``wr``), which counts it written when memory takes its data (``wr_done``).
      ``push.ready`` is low only while that wait is full. Entries go to the writer in pairs,
      an even slot then the odd one (a board's DRAM takes the pair as one burst); one goes
      alone only to an odd slot, or when the head waits for it.
    * ``head`` is the oldest entry, once it is on chip. ``waiting`` is high while the oldest
      entry is still in memory: the queue is not empty, but its head is not known yet.
    * Written entries come back in bursts of up to ``BURST`` reads (``rd``, issued back to
      back: the arbiter keeps a burst together while ``rd.valid`` holds), one burst at a time
      and only when the chip has room for all of it; their data (``rdata``) is never
      stalled. An entry is read only after memory has taken its data, so every read returns
      what was written.
    * ``spill_empty``: no entry is in memory or on its way there or back; the ring may move.
    """

    def __init__(self, params, ring_bits=None):
        self.params = params
        # Test only: a smaller ring, so that a short run wraps it.
        self.ring_bits = ring_bits or params.spill_words.bit_length() - 1
        aw = params.addr_width
        # The on-chip part, and the entries waiting for the writer (a testbench reads their
        # levels).
        self.chip = fifo.SyncFIFOBuffered(width=QueueEntry.size, depth=params.queue_onchip)
        self.stage = fifo.SyncFIFOBuffered(width=QueueEntry.size, depth=STAGE)
        super().__init__({
            "push": In(stream.Signature(QueueEntry)),
            "head": Out(stream.Signature(QueueEntry)),
            "waiting": Out(1),
            "spill_empty": Out(1),
            "base": In(32),
            "wr": Out(stream.Signature(SpillWrite(aw))),
            "wr_done": In(1),
            "rd": Out(stream.Signature(SpillRead(aw))),
            "rdata": In(stream.Signature(64)),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        onchip = p.queue_onchip
        ring_bits = self.ring_bits
        m.submodules.chip = chip = self.chip
        m.submodules.stage = stage = self.stage
        wiring.connect(m, wiring.flipped(self.head), chip.r_stream)

        # Entries taken into the ring path and not yet back on chip (staged, in memory, or
        # being read); the ring's next slot to write, to read, and the slots memory has taken.
        spilled = Signal(range(p.queue_depth + 2))
        wr_ptr = Signal(ring_bits)
        rd_ptr = Signal(ring_bits)
        done = Signal(ring_bits)
        burst = Signal(range(BURST + 1))       # reads of this burst still to issue
        inflight = Signal(range(BURST + 1))    # reads issued whose data has not come

        direct = (spilled == 0) & chip.w_rdy
        to_ring = self.push.valid & ~direct & stage.w_rdy
        m.d.comb += [
            self.push.ready.eq(direct | stage.w_rdy),
            stage.w_data.eq(self.push.payload),
            stage.w_en.eq(to_ring),
            # On chip: straight from push, or from memory (never both: a read means spilled > 0).
            chip.w_en.eq((self.push.valid & direct) | self.rdata.valid),
            chip.w_data.eq(Mux(self.rdata.valid, self.rdata.payload, self.push.payload)),
            self.rdata.ready.eq(1),
            self.waiting.eq(~chip.r_rdy & (spilled != 0)),
            self.spill_empty.eq(spilled == 0),
        ]
        m.d.sync += spilled.eq(spilled + to_ring - self.rdata.valid)

        # ---- out to memory, in order, one word an entry.
        paired = (stage.level >= 2) | wr_ptr[0] | (self.waiting & stage.r_rdy)
        m.d.comb += [
            self.wr.valid.eq(stage.r_rdy & paired),
            self.wr.payload.addr.eq(self.base + wr_ptr),
            self.wr.payload.data.eq(stage.r_data),
            stage.r_en.eq(self.wr.valid & self.wr.ready),
        ]
        with m.If(self.wr.valid & self.wr.ready):
            m.d.sync += wr_ptr.eq(wr_ptr + 1)
        with m.If(self.wr_done):
            m.d.sync += done.eq(done + 1)

        # ---- back from memory: a burst of the oldest written entries when the chip has room.
        avail = Signal(ring_bits)
        m.d.comb += avail.eq(done - rd_ptr)
        issue = self.rd.valid & self.rd.ready
        m.d.comb += [
            self.rd.valid.eq(burst != 0),
            self.rd.payload.addr.eq(self.base + rd_ptr),
        ]
        with m.If(issue):
            m.d.sync += [rd_ptr.eq(rd_ptr + 1), burst.eq(burst - 1)]
        with m.Elif((burst == 0) & (inflight == 0) & (avail != 0)
                    & (chip.level <= onchip - BURST)):
            m.d.sync += burst.eq(Mux(avail >= BURST, BURST, avail))
        m.d.sync += inflight.eq(inflight + issue - self.rdata.valid)
        return m
