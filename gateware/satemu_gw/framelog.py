# SPDX-License-Identifier: BSD-2-Clause
"""Frame log: a record of every frame the channel decides and of every frame it starts to send,
written into a ring in memory through the delay line's writer."""

from amaranth import Module, ResetInserter, Signal, Cat, Const, Mux
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.records import CYCLE_BITS, LAP_BITS, LENGTH_BITS, WORD1
from satemu.base.params import Fate
from satemu.base.terminals import NO_TERMINAL, TERMINAL_BITS

# A frame decided: the admission's fate pulse, with the frame's arrival cycle and length.
# (and its terminal: satemu_gw.classify; NO_TERMINAL: no one's)
Decided = data.StructLayout({"arrival": CYCLE_BITS, "length": LENGTH_BITS, "fate": 3,
                             "terminal": TERMINAL_BITS})
# A frame starting to leave: the egress's start, with its length and lateness.
Sent = data.StructLayout({"start": CYCLE_BITS, "length": LENGTH_BITS, "late": 1,
                          "terminal": TERMINAL_BITS})
RecordWord1 = data.StructLayout(dict(WORD1))
Record = data.StructLayout({"cycle": CYCLE_BITS, "length": LENGTH_BITS, "w1": RecordWord1})


def log_write_layout(addr_width):
    """A record for the writer: its first word's address and its two words."""
    return data.StructLayout({"addr": addr_width, "data": 128})


class FrameLog(wiring.Component):
    """Records (``satemu.model.framelog``, which gives their layout) go into a FIFO of
    ``params.log_fifo`` records and from there, one at a time, to the writer (``write``: the
    address of the record's first word and its two words), which writes them when it has no
    frame to store, or before the next frame once the FIFO is half full (``urgent``), and says
    when the memory took a record's second word (``done``).

    ``bits`` (0: no log) makes the ring 2^bits records from word ``base``; the record written
    n-th since the last ``clear`` goes to slot n mod 2^bits, with lap n div 2^bits. ``count``
    counts the records the memory took and ``lost`` those that found no room (an event whose
    holding register was still full, or a full FIFO behind it); ``clear`` zeroes both and
    starts the ring at slot 0, dropping the records not yet given to the writer (those it has
    are written, to their old slots, and not counted). The frames' own counters
    (decided, delivered, sent) are never cleared, so a frame decided before a clear still meets
    its sent record after it."""

    def __init__(self, params):
        self.params = params
        super().__init__({
            "decided": In(stream.Signature(Decided, always_ready=True)),
            "sent": In(stream.Signature(Sent, always_ready=True)),
            "base": In(32),
            "bits": In(5),
            "clear": In(1),
            "write": Out(stream.Signature(log_write_layout(params.addr_width))),
            "done": In(1),
            "count": Out(64),
            "lost": Out(32),
            # The FIFO is half full or more: the writer takes a record before the next frame.
            "urgent": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        on = self.bits != 0
        q = fifo.SyncFIFOBuffered(width=Record.size - LAP_BITS, depth=p.log_fifo)
        m.submodules.fifo = ResetInserter(self.clear)(q)

        # Frames decided (mod 2^24); a terminal's delivered ones, its next one's sent-index; a
        # terminal's frames started to leave (its frames leave in order; a channel's terminals'
        # need not: docs/bod.md, "Terminals"). A set a terminal with frames, and no one's.
        n_decided = Signal(24)
        sets = p.terminals + 1
        n_delivered = [Signal(24, name=f"n_delivered{i}") for i in range(sets)]
        n_sent = [Signal(24, name=f"n_sent{i}") for i in range(sets)]

        def bucket(terminal):
            return Mux(terminal == NO_TERMINAL, p.terminals, terminal) if p.terminals else 0

        def pick(signals, index):
            out = Signal(24, name=f"{signals[0].name}_sel")
            with m.Switch(index):
                for i, x in enumerate(signals):
                    with m.Case(i):
                        m.d.comb += out.eq(x)
            return out
        hold = [Signal(Record.size - LAP_BITS, name=f"hold_{k}") for k in ("decided", "sent")]
        held = [Signal(name=f"held_{k}") for k in ("decided", "sent")]

        d, s = self.decided.payload, self.sent.payload
        rec_d, rec_s = Signal(Record), Signal(Record)
        m.d.comb += [
            rec_d.cycle.eq(d.arrival), rec_d.length.eq(d.length),
            rec_d.w1.index.eq(n_decided), rec_d.w1.tx.eq(pick(n_delivered, bucket(d.terminal))),
            rec_d.w1.fate.eq(d.fate), rec_d.w1.kind.eq(0), rec_d.w1.valid.eq(1),
            rec_d.w1.terminal.eq(d.terminal),
            rec_s.cycle.eq(s.start), rec_s.length.eq(s.length),
            rec_s.w1.tx.eq(pick(n_sent, bucket(s.terminal))), rec_s.w1.kind.eq(1),
            rec_s.w1.late.eq(s.late), rec_s.w1.valid.eq(1), rec_s.w1.terminal.eq(s.terminal),
        ]
        with m.If(self.decided.valid):
            m.d.sync += n_decided.eq(n_decided + 1)
        for i in range(sets):
            with m.If(self.decided.valid & (bucket(d.terminal) == i)
                      & (d.fate == int(Fate.DELIVERED))):
                m.d.sync += n_delivered[i].eq(n_delivered[i] + 1)
            with m.If(self.sent.valid & (bucket(s.terminal) == i)):
                m.d.sync += n_sent[i].eq(n_sent[i] + 1)

        # One holding register per event kind, into the FIFO one a cycle (a decided record
        # first): events of one kind come many cycles apart, so a register is free again long
        # before the next, unless the FIFO behind it is full; then the event is lost, counted.
        take = [Signal(name=f"take_{k}") for k in ("decided", "sent")]
        m.d.comb += [take[0].eq(held[0] & q.w_rdy), take[1].eq(held[1] & ~held[0] & q.w_rdy),
                     q.w_en.eq(take[0] | take[1]),
                     q.w_data.eq(Mux(held[0], hold[0], hold[1]))]
        lost_now = Signal(2)
        for k, (event, rec) in enumerate(((self.decided, rec_d), (self.sent, rec_s))):
            free = ~held[k] | take[k]
            with m.If(take[k]):
                m.d.sync += held[k].eq(0)
            with m.If(event.valid & on):
                with m.If(free):
                    m.d.sync += [hold[k].eq(rec.as_value()[:Record.size - LAP_BITS]), held[k].eq(1)]
                with m.Else():
                    m.d.comb += lost_now[k].eq(1)

        # The ring: slot and lap of the next record, the mask 2^bits - 1.
        mask = Signal(32)
        m.d.comb += mask.eq(Cat(*(Const(k, 5) < self.bits for k in range(32))))
        slot = Signal(32)
        lap = Signal(LAP_BITS)
        inflight = Signal(5)            # records given to the writer, not yet done
        skip = Signal(5)                # done pulses of records given out before a clear
        out = Signal(Record)
        m.d.comb += [
            out.as_value()[:Record.size - LAP_BITS].eq(q.r_data), out.w1.lap.eq(lap),
            self.write.valid.eq(q.r_rdy & on),
            self.write.payload.addr.eq(self.base + (slot << 1)),
            self.write.payload.data.eq(out),
            q.r_en.eq(self.write.ready & on),
        ]
        m.d.comb += self.urgent.eq(q.r_level >= p.log_fifo // 2)
        issued = self.write.valid & self.write.ready
        with m.If(issued):
            wrap = (slot & mask) == mask
            m.d.sync += [slot.eq(Mux(wrap, 0, slot + 1)), lap.eq(lap + wrap)]
        m.d.sync += inflight.eq(inflight + issued - self.done)
        counted = self.done & (skip == 0)
        with m.If(self.done & (skip != 0)):
            m.d.sync += skip.eq(skip - 1)
        with m.If(counted):
            m.d.sync += self.count.eq(self.count + 1)
        with m.If(lost_now.any()):
            m.d.sync += self.lost.eq(self.lost + lost_now[0] + lost_now[1])
        with m.If(self.clear):
            # The records given to the writer and not yet done are skipped when they are.
            m.d.sync += [self.count.eq(0), self.lost.eq(0), slot.eq(0), lap.eq(0),
                         held[0].eq(0), held[1].eq(0),
                         skip.eq(inflight + issued - self.done)]
        return m
