# SPDX-License-Identifier: BSD-2-Clause
"""Delay-line reader: prefetches stored frames, in order, into the on-chip playout FIFOs."""

from amaranth import Module, Signal, Mux
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import Config, Header, PlayoutDesc


class Reader(wiring.Component):
    """Reads every frame the writer has finished, as early as the playout FIFO has room.

    Per frame it first reads ``spec_words`` words (the header and the first data words, which
    covers a minimum-size frame in one burst); once the header shows the length it reads the rest.
    Words past the frame's end are discarded. Read data may arrive after any latency; the reader
    only issues reads whose data the playout FIFO can take, so ``rdata`` is never stalled.
    """

    def __init__(self, params):
        self.params = params
        super().__init__({
            "cmd": Out(stream.Signature(params.addr_width)),
            "rdata": In(stream.Signature(64)),
            "written": In(32),
            "cfg": In(Config),
            "layout_reset": In(1),
            "data": Out(stream.Signature(64)),
            "desc": Out(stream.Signature(PlayoutDesc)),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        spec = p.spec_words
        desc_depth = p.playout_beats // 8 + 4
        m.submodules.pdata = pdata = fifo.SyncFIFOBuffered(width=64, depth=p.playout_beats)
        m.submodules.pdesc = pdesc = fifo.SyncFIFOBuffered(width=PlayoutDesc.size, depth=desc_depth)
        wiring.connect(m, wiring.flipped(self.data), pdata.r_stream)
        wiring.connect(m, wiring.flipped(self.desc), pdesc.r_stream)

        # ---- issue side -------------------------------------------------------------------
        frames_read = Signal(32)     # frames whose reads have all been issued
        off = Signal(32)             # next word to read, within the region
        todo = Signal(range(p.max_beats + spec + 1))   # reads left in the current group
        outstanding = Signal(range(p.playout_beats + spec + 1))  # data reads without data yet
        open_frames = Signal(range(desc_depth + 1))    # frames issued, descriptor not yet pushed
        hdr_seen = Signal()          # receive side: header of the frame being issued has arrived
        hdr_len = Signal(16)

        nxt = Signal(33)
        m.d.comb += [nxt.eq(off + 1), self.cmd.payload.eq(self.cfg.mem_base + off)]
        off_next = Mux(nxt >= self.cfg.mem_size, 0, nxt)

        issue_data = Signal()        # this cycle issues a data-word read
        push_or_drop = Signal()      # this cycle retires one data-word response
        frame_open = Signal()
        frame_close = Signal()

        def room(n):
            return pdata.level + outstanding + n <= p.playout_beats

        beats = (hdr_len + 7) >> 3
        start = Signal(32)
        end = Signal(33)
        m.d.comb += end.eq(start + beats + 1)
        tail = Signal(range(p.max_beats + 1))
        m.d.comb += tail.eq(Mux(beats > spec - 1, beats - (spec - 1), 0))

        with m.FSM():
            with m.State("IDLE"):
                with m.If((self.written != frames_read) & room(spec - 1)
                          & (pdesc.level + open_frames < desc_depth) & ~self.layout_reset):
                    m.d.sync += [todo.eq(spec), start.eq(off)]
                    m.d.comb += frame_open.eq(1)
                    m.next = "BURST"
            with m.State("BURST"):
                m.d.comb += self.cmd.valid.eq(1)
                with m.If(self.cmd.ready):
                    m.d.sync += [off.eq(off_next), todo.eq(todo - 1)]
                    m.d.comb += issue_data.eq(todo != spec)
                    with m.If(todo == 1):
                        m.next = "WAIT_HEADER"
            with m.State("WAIT_HEADER"):
                with m.If(hdr_seen):
                    with m.If(tail == 0):
                        # The burst over-read a short frame: the next one starts right after it.
                        m.d.sync += [frames_read.eq(frames_read + 1),
                                     off.eq(Mux(end >= self.cfg.mem_size, end - self.cfg.mem_size, end))]
                        m.next = "IDLE"
                    with m.Elif(room(tail)):
                        m.d.sync += todo.eq(tail)
                        m.next = "TAIL"
            with m.State("TAIL"):
                m.d.comb += [self.cmd.valid.eq(1), issue_data.eq(self.cmd.ready)]
                with m.If(self.cmd.ready):
                    m.d.sync += [off.eq(off_next), todo.eq(todo - 1)]
                    with m.If(todo == 1):
                        m.d.sync += frames_read.eq(frames_read + 1)
                        m.next = "IDLE"
        with m.If(self.layout_reset):
            m.d.sync += off.eq(0)

        # ---- receive side -------------------------------------------------------------------
        m.d.comb += self.rdata.ready.eq(1)
        got = Signal(range(p.max_beats + spec + 1))   # responses of the current frame so far
        hdr = Signal(Header)
        total = Signal(range(p.max_beats + spec + 1))
        r_beats = (hdr.length + 7) >> 3
        m.d.comb += total.eq(Mux(r_beats + 1 > spec, r_beats + 1, spec))
        with m.If(self.rdata.valid):
            with m.If(got == 0):
                m.d.sync += [hdr.eq(self.rdata.payload), hdr_seen.eq(1),
                             hdr_len.eq(Header(self.rdata.payload).length)]
            with m.Else():
                m.d.comb += [push_or_drop.eq(1),
                             pdata.w_data.eq(self.rdata.payload),
                             pdata.w_en.eq(got <= r_beats)]
            with m.If((got != 0) & (got + 1 == total)):
                m.d.sync += got.eq(0)
                m.d.comb += [frame_close.eq(1), pdesc.w_en.eq(1)]
            with m.Else():
                m.d.sync += got.eq(got + 1)
        m.d.comb += [pdesc.w_data.eq(hdr)]
        with m.If(frame_open):
            m.d.sync += hdr_seen.eq(0)

        m.d.sync += [
            outstanding.eq(outstanding + issue_data - push_or_drop),
            open_frames.eq(open_frames + frame_open - frame_close),
        ]
        return m
