# SPDX-License-Identifier: BSD-2-Clause
"""Delay-line writer: stores admitted frames (header word, then beats) and discards the rest."""

from amaranth import Module, Signal, Mux
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import Config, Decision, Header, Span, SpillWrite, WData, frame_words
from .bod_slots import HeaderWrite
from .bod_terms import TermHeader
from .framelog import log_write_layout
from .ecnmark import EcnMark


class Writer(wiring.Component):
    """Issues one write command per word through ``cmd`` and queues the word for ``wdata``; the
    memory may take commands and data at any pace. ``written`` counts the words of the region
    that may be read back (mod 2^32): a frame's words count once they are all accepted on
    ``wdata``.

    A BoD frame (``decision.bod``) is stored without its header word, and is not yet readable:
    its header comes later on ``hdr``, when the slot scheduler releases it, and its acceptance
    makes the whole frame readable. Headers go first whenever the writer is between frames;
    a header never overtakes its own frame's beats, because the scheduler only learns of a
    frame once the writer has taken its decision.

    The frame log's records (``log``, with ``params.frame_log``) are written when there is
    neither a header nor a decision waiting, or, when the log is short of room
    (``log_urgent``), before a waiting decision: two words at the record's address, which
    count for nothing in ``written``; ``log_done`` pulses when the memory takes a record's
    second word.

    With duplication (``params.duplicate``), the beats of a frame whose copy follows
    (``decision.dup``) are kept, as they are written or discarded, in a FIFO of one longest
    frame, and the copy's decision (``decision.copy``) takes its beats from there.

    With a departure queue that spills to memory (``params.spill_words``), its entries
    (``spill``) are written between frames, before a waiting decision: one word each, which
    counts for nothing in ``written``; ``spill_done`` pulses when the memory takes its data.
    """

    def __init__(self, params):
        self.params = params
        ports = {
            "decision": In(stream.Signature(Decision)),
            "hdr": In(stream.Signature(TermHeader if params.terminals else HeaderWrite)),
            "beats": In(stream.Signature(64)),
            "cmd": Out(stream.Signature(params.addr_width)),
            "wdata": Out(stream.Signature(WData)),
            "cfg": In(Config),
            "written": Out(32, init=params.word_init),
        }
        if params.frame_log:
            ports["log"] = In(stream.Signature(log_write_layout(params.addr_width)))
            ports["log_urgent"] = In(1)
            ports["log_done"] = Out(1)
        if params.spill_words:
            ports["spill"] = In(stream.Signature(SpillWrite(params.addr_width)))
            ports["spill_done"] = Out(1)
        if params.terminals:
            # Each released frame's words, in the order their headers go (which is the order
            # ``written`` commits them): where the reader finds it, terminals' shares apart.
            ports["spans"] = Out(stream.Signature(Span))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        # Each queued word carries how many words its acceptance makes readable.
        commit_bits = (p.max_beats + 1).bit_length()
        # ... and, with the frame log, whether it is a log record's second word; with a spilling
        # departure queue, whether it is a departure time (the bits above those).
        spill = bool(p.spill_words)
        flag_log = 64 + commit_bits
        flag_spill = flag_log + p.frame_log
        m.submodules.wq = wq = fifo.SyncFIFOBuffered(width=flag_spill + spill, depth=16)

        dec = Signal(Decision)
        left = Signal(range(p.max_beats + 1))   # beats still to take from the ingress FIFO
        if p.ecn:
            m.submodules.ecnmark = ecn = EcnMark()
        # The frame's beats: the ingress FIFO's, or a copy's from the copy FIFO.
        src_valid, src_data, src_take = self.beats.valid, self.beats.payload, Signal()
        if p.duplicate:
            m.submodules.copies = copies = fifo.SyncFIFOBuffered(width=64, depth=p.max_beats)
            src_valid = Mux(dec.copy, copies.r_rdy, self.beats.valid)
            src_data = Mux(dec.copy, copies.r_data, self.beats.payload)
            m.d.comb += [self.beats.ready.eq(src_take & ~dec.copy),
                         copies.r_en.eq(src_take & dec.copy),
                         copies.w_en.eq(src_take & dec.dup), copies.w_data.eq(self.beats.payload)]
        else:
            m.d.comb += self.beats.ready.eq(src_take)
        off = Signal(32)
        header = Signal(Header)
        word = Signal(64)
        log = Signal(log_write_layout(p.addr_width)) if p.frame_log else None
        commits = Signal(commit_bits)
        log_end = Signal()
        spill_word = Signal() if spill else None
        m.d.comb += [
            header.length.eq(dec.length), header.egress.eq(dec.egress),
            header.terminal.eq(dec.terminal),
            self.cmd.payload.eq(self.cfg.mem_base + off),
        ]
        w_data = word | (commits << 64) | ((log_end << flag_log) if p.frame_log else 0)
        m.d.comb += wq.w_data.eq(w_data | (spill_word << flag_spill) if spill else w_data)
        nxt = Signal(33)
        m.d.comb += nxt.eq(off + 1)
        off_next = Mux(nxt >= self.cfg.mem_size, 0, nxt)

        with m.FSM():
            with m.State("IDLE"):
                # A record before a decision only when the log is short of room.
                log_first = (self.log.valid & self.log_urgent) if p.frame_log else 0
                # Departure times go before a decision, after an urgent record.
                spill_first = self.spill.valid if spill else 0
                free = ~self.hdr.valid & ~self.spill.valid if spill else ~self.hdr.valid
                m.d.comb += self.decision.ready.eq(free & ~log_first)
                if p.frame_log:
                    waiting = (self.decision.valid | self.spill.valid) if spill \
                        else self.decision.valid
                    m.d.comb += self.log.ready.eq(~self.hdr.valid & (~waiting | self.log_urgent))
                with m.If(self.hdr.valid):
                    m.next = "LATE_HEADER"
                if p.frame_log:
                    with m.Elif(log_first):
                        m.d.sync += log.eq(self.log.payload)
                        m.next = "LOG_LO"
                if spill:
                    with m.Elif(spill_first):
                        m.next = "SPILL"
                with m.Elif(self.decision.valid):
                    nxt_off = Signal(33)
                    d = self.decision.payload
                    m.d.comb += nxt_off.eq(d.offset + 1)
                    m.d.sync += [dec.eq(d), left.eq(d.stored), off.eq(d.offset)]
                    with m.If(d.keep & d.bod):
                        m.d.sync += off.eq(Mux(nxt_off >= self.cfg.mem_size, 0, nxt_off))
                        m.next = "DATA"
                    with m.Elif(d.keep):
                        m.next = "HEADER"
                    with m.Elif(self.decision.payload.stored != 0):
                        m.next = "DISCARD"
                if p.frame_log:
                    with m.Elif(self.log.valid):
                        m.d.sync += log.eq(self.log.payload)
                        m.next = "LOG_LO"

            with m.State("DISCARD"):
                m.d.comb += src_take.eq(src_valid)
                with m.If(src_valid):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.next = "IDLE"

            with m.State("LATE_HEADER"):
                h = self.hdr.payload
                late = Signal(Header)
                m.d.comb += [late.length.eq(h.length), late.egress.eq(h.egress),
                             word.eq(late), commits.eq(frame_words(h.length)),
                             self.cmd.payload.eq(self.cfg.mem_base + h.offset),
                             self.cmd.valid.eq(wq.w_rdy), wq.w_en.eq(self.cmd.ready)]
                if p.terminals:
                    m.d.comb += [late.terminal.eq(h.terminal),
                                 self.spans.payload.offset.eq(h.offset),
                                 self.spans.payload.words.eq(frame_words(h.length)),
                                 self.spans.payload.terminal.eq(h.terminal)]
                    # (the reader's span FIFO has room for every header in flight)
                    with m.If(~self.spans.ready):
                        m.d.comb += self.cmd.valid.eq(0)
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.comb += self.hdr.ready.eq(1)
                    if p.terminals:
                        m.d.comb += self.spans.valid.eq(1)
                    m.next = "IDLE"

            with m.State("HEADER"):
                m.d.comb += [word.eq(header), commits.eq(1), self.cmd.valid.eq(wq.w_rdy),
                             wq.w_en.eq(self.cmd.ready)]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += off.eq(off_next)
                    m.next = "DATA"

            if spill:
                with m.State("SPILL"):
                    m.d.comb += [word.eq(self.spill.payload.data), commits.eq(0),
                                 spill_word.eq(1), self.cmd.payload.eq(self.spill.payload.addr),
                                 self.cmd.valid.eq(wq.w_rdy), wq.w_en.eq(self.cmd.ready)]
                    with m.If(self.cmd.valid & self.cmd.ready):
                        m.d.comb += self.spill.ready.eq(1)
                        m.next = "IDLE"

            if p.frame_log:
                for state, half, after in (("LOG_LO", 0, "LOG_HI"), ("LOG_HI", 1, "IDLE")):
                    with m.State(state):
                        m.d.comb += [word.eq(log.data[64 * half:64 * (half + 1)]),
                                     commits.eq(0), log_end.eq(half),
                                     self.cmd.payload.eq(log.addr + half),
                                     self.cmd.valid.eq(wq.w_rdy), wq.w_en.eq(self.cmd.ready)]
                        with m.If(self.cmd.valid & self.cmd.ready):
                            m.next = after

            with m.State("DATA"):
                data = src_data
                if p.ecn:
                    # ECN marking: the frame's ECN field set to CE (and its IPv4 checksum).
                    m.d.comb += [ecn.data.eq(data), ecn.index.eq(dec.stored - left),
                                 ecn.take.eq(self.cmd.valid & self.cmd.ready),
                                 ecn.mark.eq(dec.mark), ecn.kind.eq(dec.ecn)]
                    data = ecn.out
                if p.corrupt:
                    # Corruption: bit flip_bit of the frame is bit flip_bit % 64 of its beat
                    # flip_bit // 64 (byte 0 in a beat's low bits).
                    beat = Signal(range(p.max_beats + 1))
                    m.d.comb += beat.eq(dec.stored - left)
                    hit = dec.flip & (beat == dec.flip_bit[6:])
                    data = data ^ Mux(hit, 1 << dec.flip_bit[:6], 0)
                m.d.comb += [word.eq(data), commits.eq(~dec.bod),
                             self.cmd.valid.eq(wq.w_rdy & src_valid)]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.comb += [wq.w_en.eq(1), src_take.eq(1)]
                    m.d.sync += [off.eq(off_next), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "IDLE"

        m.d.comb += [
            self.wdata.valid.eq(wq.r_rdy),
            self.wdata.payload.data.eq(wq.r_data[:64]),
            self.wdata.payload.we.eq(0xFF),
            wq.r_en.eq(self.wdata.ready),
        ]
        with m.If(self.wdata.valid & self.wdata.ready):
            m.d.sync += self.written.eq(self.written + wq.r_data[64:64 + commit_bits])
        if p.frame_log:
            m.d.comb += self.log_done.eq(self.wdata.valid & self.wdata.ready
                                         & wq.r_data[flag_log])
        if spill:
            m.d.comb += self.spill_done.eq(self.wdata.valid & self.wdata.ready
                                           & wq.r_data[flag_spill])
        return m
