# SPDX-License-Identifier: BSD-2-Clause
"""Memory command arbiter: the reader's reads before the writer's writes, never mid-handshake."""

from amaranth import Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .depqueue import BURST
from .layouts import SpillRead, mem_cmd_layout


class MemArbiter(wiring.Component):
    """Reads win because egress has deadlines; a write still waits at most until the playout
    FIFO is full. Once a command is offered it stays offered until the memory takes it.

    With ``spill`` (a departure queue that spills to memory, ``satemu_gw.depqueue``), its
    reads (``sp``) come first, a burst of at most ``BURST`` in a row with nothing between, and
    the read data (``rdata``, in command order) is routed: the reader's words to ``rd_data``,
    the burst's to ``sp_data``. A burst's words follow the reader's words that were in flight
    when it began, so counting those is enough to route every word."""

    def __init__(self, addr_width, spill=False):
        self.spill = spill
        ports = {
            "rd": In(stream.Signature(addr_width)),
            "wr": In(stream.Signature(addr_width)),
            "cmd": Out(stream.Signature(mem_cmd_layout(addr_width))),
        }
        if spill:
            ports.update({
                "sp": In(stream.Signature(SpillRead(addr_width))),
                "rdata": In(stream.Signature(64)),
                "rd_data": Out(stream.Signature(64)),
                "sp_data": Out(stream.Signature(64)),
            })
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        if not self.spill:
            hold = Signal()          # a command was offered last cycle and not taken
            hold_wr = Signal()       # ... and it was the writer's
            pick_wr = Mux(hold, hold_wr, ~self.rd.valid)
            m.d.comb += [
                self.cmd.valid.eq(Mux(pick_wr, self.wr.valid, self.rd.valid)),
                self.cmd.payload.we.eq(pick_wr),
                self.cmd.payload.addr.eq(Mux(pick_wr, self.wr.payload, self.rd.payload)),
                self.wr.ready.eq(pick_wr & self.cmd.ready),
                self.rd.ready.eq(~pick_wr & self.cmd.ready),
            ]
            m.d.sync += [hold.eq(self.cmd.valid & ~self.cmd.ready), hold_wr.eq(pick_wr)]
            return m

        hold = Signal()
        hold_wr = Signal()
        hold_sp = Signal()
        pick_sp = Mux(hold, hold_sp, self.sp.valid)
        pick_wr = Mux(hold, hold_wr, ~self.sp.valid & ~self.rd.valid)
        pick_rd = ~pick_sp & ~pick_wr
        m.d.comb += [
            self.cmd.valid.eq(Mux(pick_sp, self.sp.valid,
                                  Mux(pick_wr, self.wr.valid, self.rd.valid))),
            self.cmd.payload.we.eq(pick_wr),
            self.cmd.payload.addr.eq(Mux(pick_sp, self.sp.payload.addr,
                                         Mux(pick_wr, self.wr.payload, self.rd.payload))),
            self.sp.ready.eq(pick_sp & self.cmd.ready),
            self.wr.ready.eq(pick_wr & self.cmd.ready),
            self.rd.ready.eq(pick_rd & self.cmd.ready),
        ]
        m.d.sync += [hold.eq(self.cmd.valid & ~self.cmd.ready), hold_wr.eq(pick_wr),
                     hold_sp.eq(pick_sp)]

        # ---- read data: ``skip`` reader words, then ``take`` burst words, then the reader's.
        ahead = Signal(16)           # reader words in flight
        skip = Signal(16)            # ... of which still come before the burst's words
        take = Signal(range(BURST + 1))
        to_sp = (skip == 0) & (take != 0)
        rd_ret = self.rdata.valid & ~to_sp
        sp_ret = self.rdata.valid & to_sp
        rd_acc = self.rd.valid & self.rd.ready
        sp_acc = self.sp.valid & self.sp.ready
        m.d.comb += [
            self.rdata.ready.eq(1),
            self.rd_data.valid.eq(rd_ret), self.rd_data.payload.eq(self.rdata.payload),
            self.sp_data.valid.eq(sp_ret), self.sp_data.payload.eq(self.rdata.payload),
        ]
        m.d.sync += [ahead.eq(ahead + rd_acc - rd_ret), take.eq(take + sp_acc - sp_ret)]
        with m.If(sp_acc & (take == 0)):
            m.d.sync += skip.eq(ahead - rd_ret)
        with m.Elif(rd_ret & (skip != 0)):
            m.d.sync += skip.eq(skip - 1)
        return m
