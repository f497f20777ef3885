# SPDX-License-Identifier: BSD-2-Clause
"""Delay-line writer: stores admitted frames (header word, then beats) and discards the rest."""

from amaranth import Module, Signal, Mux
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import Config, Decision, Header, WData


class Writer(wiring.Component):
    """Issues one write command per word through ``cmd`` and queues the word for ``wdata``; the
    memory may take commands and data at any pace. ``written`` counts the words accepted on
    ``wdata`` (mod 2^32): only those may be read back.
    """

    def __init__(self, params):
        self.params = params
        super().__init__({
            "decision": In(stream.Signature(Decision)),
            "beats": In(stream.Signature(64)),
            "cmd": Out(stream.Signature(params.addr_width)),
            "wdata": Out(stream.Signature(WData)),
            "cfg": In(Config),
            "written": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.wq = wq = fifo.SyncFIFOBuffered(width=64, depth=16)

        dec = Signal(Decision)
        left = Signal(range(p.max_beats + 1))   # beats still to take from the ingress FIFO
        off = Signal(32)
        header = Signal(Header)
        word = Signal(64)
        m.d.comb += [
            header.length.eq(dec.length), header.egress.eq(dec.egress),
            self.cmd.payload.eq(self.cfg.mem_base + off),
            wq.w_data.eq(word),
        ]
        nxt = Signal(33)
        m.d.comb += nxt.eq(off + 1)
        off_next = Mux(nxt >= self.cfg.mem_size, 0, nxt)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.decision.ready.eq(1)
                with m.If(self.decision.valid):
                    m.d.sync += [dec.eq(self.decision.payload), left.eq(self.decision.payload.stored),
                                 off.eq(self.decision.payload.offset)]
                    with m.If(self.decision.payload.keep):
                        m.next = "HEADER"
                    with m.Elif(self.decision.payload.stored != 0):
                        m.next = "DISCARD"

            with m.State("DISCARD"):
                m.d.comb += self.beats.ready.eq(1)
                with m.If(self.beats.valid):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.next = "IDLE"

            with m.State("HEADER"):
                m.d.comb += [word.eq(header), self.cmd.valid.eq(wq.w_rdy), wq.w_en.eq(self.cmd.ready)]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += off.eq(off_next)
                    m.next = "DATA"

            with m.State("DATA"):
                m.d.comb += [word.eq(self.beats.payload), self.cmd.valid.eq(wq.w_rdy & self.beats.valid)]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.comb += [wq.w_en.eq(1), self.beats.ready.eq(1)]
                    m.d.sync += [off.eq(off_next), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "IDLE"

        m.d.comb += [
            self.wdata.valid.eq(wq.r_rdy),
            self.wdata.payload.data.eq(wq.r_data),
            self.wdata.payload.we.eq(0xFF),
            wq.r_en.eq(self.wdata.ready),
        ]
        with m.If(self.wdata.valid & self.wdata.ready):
            m.d.sync += self.written.eq(self.written + 1)
        return m
