# SPDX-License-Identifier: BSD-2-Clause
"""Memory command arbiter: the reader's reads before the writer's writes, never mid-handshake."""

from amaranth import Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import mem_cmd_layout


class MemArbiter(wiring.Component):
    """Reads win because egress has deadlines; a write still waits at most until the playout
    FIFO is full. Once a command is offered it stays offered until the memory takes it."""

    def __init__(self, addr_width):
        super().__init__({
            "rd": In(stream.Signature(addr_width)),
            "wr": In(stream.Signature(addr_width)),
            "cmd": Out(stream.Signature(mem_cmd_layout(addr_width))),
        })

    def elaborate(self, platform):
        m = Module()
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
