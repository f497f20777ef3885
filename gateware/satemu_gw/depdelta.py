# SPDX-License-Identifier: BSD-2-Clause
"""Delta-coded departure queue: a deep bottleneck queue's departure times on chip, 34 bits each."""

from amaranth import Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.queues import DELTA_BITS, LENGTH_BITS, WORD_BITS, length_bits

from .layouts import QueueEntry


# The memories' names: hw.soc_common leaves out their initial values (zeros, as a block RAM's
# are anyway), which the Verilog would otherwise spell word by word.
MEMORY_PREFIX = "delta_bit"


class DeltaQueue(wiring.Component):
    """A first-in, first-out queue of ``QueueEntry`` that holds ``params.queue_depth`` entries in
    block RAM, each as its departure's distance from the entry before it and its length
    (``satemu.model.depdelta``, whose ``DeltaQueueModel`` gives the word stored for each). Each
    bit of an entry has a memory of its own, one bit wide, so that a board's block RAMs hold
    the whole depth in their deepest mode and no multiplexer follows them.

    * ``push`` takes an entry while there is room (the engine's cap keeps it so). Into a queue
      that holds nothing, the entry's departure is taken whole, as the base of the ones after.
    * ``head`` is the oldest entry, decoded into a register.
    * ``waiting`` is high while the queue holds entries but none is at the head yet (an entry
      takes three cycles from ``push`` to ``head``): the engine waits for it before it decides.
    """

    def __init__(self, params):
        assert length_bits(params.max_frame), "frame lengths must fit an entry"
        self.params = params
        super().__init__({
            "push": In(stream.Signature(QueueEntry)),
            "head": Out(stream.Signature(QueueEntry)),
            "waiting": Out(1),
        })
        # The word being stored (a testbench compares it with the model's).
        self.w_data = Signal(WORD_BITS)

    def elaborate(self, platform):
        m = Module()
        depth = self.params.queue_depth
        mask = (1 << DELTA_BITS) - 1

        def incr(ptr):
            return ptr + 1 if depth & (depth - 1) == 0 else Mux(ptr == depth - 1, 0, ptr + 1)

        # The entries in the memories, not yet read (``stored``); the one read, at the read
        # ports (``port_valid``); the head, decoded.
        stored = Signal(range(depth + 1))
        port_valid = Signal()
        produce = Signal(range(depth))
        consume = Signal(range(depth))
        tail = Signal(DELTA_BITS)       # the last departure pushed, its low DELTA_BITS
        head_dep = Signal(48)           # kept after a pop: the base of the next entry
        head_len = Signal(16)
        head_valid = Signal()
        empty = (stored == 0) & ~port_valid & ~head_valid

        pop = self.head.valid & self.head.ready
        load = port_valid & (~head_valid | pop)
        read = (stored != 0) & (~port_valid | load)
        write = self.push.valid & (stored != depth)
        entry = self.push.payload
        delta = Signal(DELTA_BITS)
        word = Signal(WORD_BITS)
        m.d.comb += [
            delta.eq(Mux(empty, 0, (entry.departure[:DELTA_BITS] - tail) & mask)),
            self.w_data.eq(delta | (entry.length[:LENGTH_BITS] << DELTA_BITS)),
            self.push.ready.eq(stored != depth),
        ]
        for bit in range(WORD_BITS):
            mem = Memory(shape=1, depth=depth, init=[])
            m.submodules[f"{MEMORY_PREFIX}{bit}"] = mem
            wr, rd = mem.write_port(), mem.read_port(domain="sync")
            m.d.comb += [wr.addr.eq(produce), wr.data.eq(self.w_data[bit]), wr.en.eq(write),
                         rd.addr.eq(consume), rd.en.eq(read), word[bit].eq(rd.data)]

        with m.If(write):
            m.d.sync += [produce.eq(incr(produce)), tail.eq(entry.departure[:DELTA_BITS])]
            with m.If(empty):
                # Nothing can be popped while the queue is empty: the base is free to take.
                m.d.sync += head_dep.eq(entry.departure)
        with m.If(read):
            m.d.sync += consume.eq(incr(consume))
        m.d.sync += stored.eq(stored + write - read)
        with m.If(read):
            m.d.sync += port_valid.eq(1)
        with m.Elif(load):
            m.d.sync += port_valid.eq(0)

        word_len = word[DELTA_BITS:]
        m.d.comb += [
            self.head.valid.eq(head_valid),
            self.head.payload.departure.eq(head_dep),
            self.head.payload.length.eq(head_len),
            self.waiting.eq(((stored != 0) | port_valid) & ~head_valid),
        ]
        with m.If(load):
            m.d.sync += [
                head_dep.eq(head_dep + word[:DELTA_BITS]),
                head_len.eq(Mux(word_len == 0, 1 << LENGTH_BITS, word_len)),
                head_valid.eq(1),
            ]
        with m.Elif(pop):
            m.d.sync += head_valid.eq(0)
        return m
