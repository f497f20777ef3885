# SPDX-License-Identifier: BSD-2-Clause
"""Delay-line reader: streams the memory ring, in order, into the on-chip playout FIFOs."""

from amaranth import Module, Signal, Mux
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import BOD_ENABLE

from .bod_terms import share_bits
from .layouts import Config, Header, PlayoutDesc, Span, frame_beats


class Reader(wiring.Component):
    """Frames lie back to back in the region (header word, then beats), so the reader needs no
    frame boundaries to issue reads: it reads every word the writer has committed, one word per
    cycle, as far as the playout FIFOs have room, and parses frames from the returned words. A
    frame's descriptor is pushed with its last beat, so egress only ever sees whole frames.

    Read data may arrive after any latency; a read is issued only when its word is sure to find
    room, so ``rdata`` is never stalled and no round trip sits in the per-frame loop.

    On a BoD channel with terminals (``params.terminals``) frames leave in the order their slots
    release them, each from its terminal's share of the region: the reader reads the words of
    each ``spans`` entry in turn (as far as ``written``, which commits them in that order),
    wrapping within the entry's terminal's share.
    """

    def __init__(self, params):
        self.params = params
        ports = {
            "cmd": Out(stream.Signature(params.addr_width)),
            "rdata": In(stream.Signature(64)),
            "written": In(32),          # words the writer has committed, mod 2^32
            "cfg": In(Config),
            "layout_reset": In(1),
            "data": Out(stream.Signature(64)),
            "desc": Out(stream.Signature(PlayoutDesc)),
        }
        if params.terminals:
            ports["spans"] = In(stream.Signature(Span))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        desc_depth = max(16, p.playout_beats // 4)
        m.submodules.pdata = pdata = fifo.SyncFIFOBuffered(width=64, depth=p.playout_beats)
        m.submodules.pdesc = pdesc = fifo.SyncFIFOBuffered(width=PlayoutDesc.size,
                                                           depth=desc_depth)
        wiring.connect(m, wiring.flipped(self.data), pdata.r_stream)
        wiring.connect(m, wiring.flipped(self.desc), pdesc.r_stream)

        # ---- issue: one word per cycle while memory holds unread words and the FIFOs have room.
        issued = Signal(32, init=p.word_init)    # words read so far, mod 2^32
        off = Signal(32)             # next word's offset within the region
        outstanding = Signal(range(max(p.playout_beats, desc_depth) + 1))
        nxt = Signal(33)
        m.d.comb += [
            nxt.eq(off + 1),
            self.cmd.payload.eq(self.cfg.mem_base + off),
            # Every outstanding word may turn out to be a beat, or to complete a frame.
            # A layout reset comes only with the line empty, when nothing is left to issue.
            self.cmd.valid.eq((issued != self.written)
                              & (pdata.level + outstanding < p.playout_beats)
                              & (pdesc.level + outstanding < desc_depth)),
        ]
        issue = self.cmd.valid & self.cmd.ready
        if p.terminals:
            # Spans: the current one's words left, and its share's first word and end.
            m.submodules.spanq = spanq = fifo.SyncFIFOBuffered(width=Span.size, depth=32)
            wiring.connect(m, wiring.flipped(self.spans), spanq.w_stream)
            cfg = self.cfg
            by_span = (cfg.bod_flags & BOD_ENABLE).any()
            left_w = Signal(9)
            s_base = Signal(32)
            s_end = Signal(33)
            share = Signal(32)
            n = Mux(cfg.term_match != 0, cfg.term_framed, 1)
            m.d.comb += share.eq(cfg.mem_size >> share_bits(n))
            span = Span(spanq.r_data)
            take = Signal()
            with m.If(by_span):
                # A word of the current span, or the first of the next one.
                have = (left_w != 0) | spanq.r_rdy
                m.d.comb += self.cmd.valid.eq((issued != self.written) & have
                                              & (pdata.level + outstanding < p.playout_beats)
                                              & (pdesc.level + outstanding < desc_depth))
                start = span.terminal * share
                with m.If(left_w == 0):
                    m.d.comb += [take.eq(issue), self.cmd.payload.eq(self.cfg.mem_base
                                                                     + span.offset)]
            m.d.comb += spanq.r_en.eq(take)
            with m.If(issue & by_span):
                first = Signal(33)
                here = Mux(left_w == 0, span.offset, off)
                m.d.comb += first.eq(here + 1)
                end = Mux(left_w == 0, start + share, s_end)
                beg = Mux(left_w == 0, start, s_base)
                m.d.sync += [issued.eq(issued + 1), off.eq(Mux(first >= end, beg, first)),
                             left_w.eq(Mux(left_w == 0, span.words, left_w) - 1)]
                with m.If(left_w == 0):
                    m.d.sync += [s_base.eq(start), s_end.eq(start + share)]
            with m.Elif(issue):
                m.d.sync += [issued.eq(issued + 1),
                             off.eq(Mux(nxt >= self.cfg.mem_size, 0, nxt))]
        else:
            with m.If(issue):
                m.d.sync += [issued.eq(issued + 1),
                             off.eq(Mux(nxt >= self.cfg.mem_size, 0, nxt))]
        with m.If(self.layout_reset):
            m.d.sync += off.eq(0)

        # ---- receive: header word, then its beats; the descriptor goes out with the last beat.
        m.d.comb += self.rdata.ready.eq(1)
        hdr = Signal(Header)
        left = Signal(14)            # beats of the current frame still to come; 0: expect a header
        word = self.rdata.payload
        with m.If(self.rdata.valid):
            with m.If(left == 0):
                m.d.sync += [hdr.eq(word), left.eq(frame_beats(Header(word).length))]
            with m.Else():
                m.d.comb += [pdata.w_en.eq(1), pdata.w_data.eq(word)]
                m.d.sync += left.eq(left - 1)
                with m.If(left == 1):
                    m.d.comb += pdesc.w_en.eq(1)
        m.d.comb += pdesc.w_data.eq(hdr)
        m.d.sync += outstanding.eq(outstanding + issue - self.rdata.valid)
        return m
