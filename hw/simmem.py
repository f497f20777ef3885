# SPDX-License-Identifier: BSD-2-Clause
"""A behavioural memory behind LiteDRAM native ports: the simulated board's delay-line memory.

The simulated board's channels need a memory that keeps up with them, not a DRAM: their timing
is the schedule's as long as the memory drains their ingress FIFOs within the latency floor
(docs/architecture.md, "Where exactness ends"), which LiteDRAM's SDRAM model did and this does
at least as well. In Verilator, LiteDRAM's controller, crossbar and SDRAM model were about a
fifth of the simulation's time while the channels were idle; this is a few registers and one
array. Real boards' variants of the simulated board keep LiteDRAM and their DRAM chip's model.
"""

from __future__ import annotations

from migen import Cat, If, Memory, Mux, Replicate, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect.stream import SyncFIFO

from litedram.common import LiteDRAMNativePort

WRITES_PENDING = 16             # write commands a port may have taken ahead of their data


class SimNativeMemory(LiteXModule):
    """``words`` 64-bit words, from word ``base`` (a multiple of ``words``, which is a power of
    two) of an ``address_width``-bit word address space, behind ``nports`` native ports
    (``ports``, each a ``LiteDRAMNativePort`` like a LiteDRAM crossbar's). An address outside
    the window wraps into it.

    Each port takes a command in every cycle in which it has room for a write's address: a read
    returns its word on ``rdata`` in the next cycle, in command order; a write waits for its
    data on ``wdata``, which the port takes in command order from the cycle after the command
    (as LiteDRAM asks for a write's data once it has the command), honouring the byte enables.
    A read that follows a write to the same word sees the write once its data has been taken.
    A port whose ``rdata`` is not taken holds it and takes no command until it is (the channels
    always take it).

    With ``cpu_bus``, ``bus`` is a 32-bit Wishbone slave through which the CPU reads and writes
    the memory: word ``w`` (of the window) at byte ``8 w``, its low half first, each access
    answered in the cycle after it is asked, a write honouring the byte selects (the firmware
    reads the frame logs there, and keeps its timeline store)."""

    def __init__(self, words: int, base: int, address_width: int, nports: int,
                 cpu_bus: bool = False):
        assert words & (words - 1) == 0 and base % words == 0
        index_bits = words.bit_length() - 1
        self.ports = []
        self.specials.mem = mem = Memory(64, words, name="delay_lines")
        for _ in range(nports):
            port = LiteDRAMNativePort("both", address_width, 64)
            self.ports.append(port)
            cmd, wdata, rdata = port.cmd, port.wdata, port.rdata
            wr = mem.get_port(write_capable=True, we_granularity=8)
            rd = mem.get_port()
            self.specials += wr, rd
            pending = SyncFIFO([("index", index_bits)], WRITES_PENDING, buffered=False)
            self.submodules += pending

            stall = Signal()
            held = Signal(index_bits)
            index = cmd.addr[:index_bits]
            take = cmd.valid & cmd.ready
            read = take & ~cmd.we
            self.comb += [
                stall.eq(rdata.valid & ~rdata.ready),
                cmd.ready.eq(pending.sink.ready & ~stall),
                pending.sink.valid.eq(take & cmd.we),
                pending.sink.index.eq(index),
                wdata.ready.eq(pending.source.valid),
                pending.source.ready.eq(wdata.valid),
                wr.adr.eq(pending.source.index),
                wr.dat_w.eq(wdata.data),
                wr.we.eq(Replicate(wdata.valid & pending.source.valid, 8) & wdata.we),
                rd.adr.eq(Mux(stall, held, index)),
                rdata.data.eq(rd.dat_r),
            ]
            self.sync += [
                If(~stall, rdata.valid.eq(read)),
                If(read, held.eq(index)),
            ]
        if cpu_bus:
            from litex.soc.interconnect import wishbone
            self.bus = bus = wishbone.Interface(data_width=32)
            rd = mem.get_port(write_capable=True, we_granularity=8)
            self.specials += rd
            high = Signal()
            write = Signal()
            self.comb += [rd.adr.eq(bus.adr[1:1 + index_bits]),
                          bus.dat_r.eq(Mux(high, rd.dat_r[32:], rd.dat_r[:32])),
                          write.eq(bus.cyc & bus.stb & bus.we & ~bus.ack),
                          rd.dat_w.eq(Cat(bus.dat_w, bus.dat_w)),
                          rd.we.eq(Mux(bus.adr[0], Cat(Replicate(0, 4), bus.sel),
                                       Cat(bus.sel, Replicate(0, 4)))
                                   & Replicate(write, 8))]
            self.sync += [bus.ack.eq(bus.cyc & bus.stb & ~bus.ack), high.eq(bus.adr[0])]
