# SPDX-License-Identifier: BSD-2-Clause
"""Port widener: a channel's 64-bit memory port onto a 128-bit DRAM port, pairs of words merged."""

from amaranth import Array, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import fifo, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .layouts import MemPortSignature, WideMemPortSignature, mem_cmd_layout
from .skid import SkidBuffer


class MemWiden(wiring.Component):
    """Takes a channel's 64-bit word commands on ``narrow`` and issues 128-bit commands on
    ``wide`` (word address ``a`` is half ``a % 2`` of wide word ``a // 2``, the even word in
    the low 64 bits), with up to ``depth`` reads in flight.

    * **Pairs.** Two commands in a row of the same kind, to an even word and then the odd word
      after it, become one wide command (the delay line is written and read in address
      order). An even read waits ``wait_rd`` cycles for its partner, an even write
      ``wait_wr``, and neither once another command is queued behind it.
    * **Write batch.** Writes wait in a batch of up to ``batch`` wide words, where a later
      write to a wide word already there joins it (its bytes over the older ones). The batch
      leaves all together when it is full, when its oldest entry has waited ``hold`` cycles,
      or when a read wants a word it holds that it cannot answer; reads go first otherwise.
      The channel writes a frame a word at a time while reading older frames back, and every
      turn of the DRAM's data bus between writing and reading idles it for several cycles.
    * **Reads answered from the batch.** A read of a word that exactly one entry holds whole
      is answered from it without a DRAM read. That is the common case just after a delay
      line starts, when the reader follows the writer word by word.

    Reads keep their order and writes theirs; a read never passes a write to its word, so
    every read returns the last value the narrow commands wrote before it. A write leaves
    with its data (queued for the controller's request), a read only while its answer has
    room (the controller's read data cannot wait). Wide commands leave through a skid buffer,
    so nothing in the controller's command arbitration depends combinationally on this side.
    """

    def __init__(self, addr_width, *, depth=16, wait_wr=16, wait_rd=1, batch=8, hold=256):
        self.addr_width = addr_width
        self.depth, self.wait_wr, self.wait_rd = depth, wait_wr, wait_rd
        self.batch, self.hold = batch, hold
        super().__init__({
            "narrow": In(MemPortSignature(addr_width)),
            "wide": Out(WideMemPortSignature(addr_width - 1)),
            "merged": Out(1),            # high for a cycle when a pair leaves as one command
        })

    def elaborate(self, platform):
        m = Module()
        aw = self.addr_width
        # Narrow commands and write data, each in arrival order.
        m.submodules.cq = cq = fifo.SyncFIFOBuffered(width=1 + aw, depth=4)
        m.submodules.dq = dq = fifo.SyncFIFOBuffered(width=72, depth=4)
        # Wide write data for the issued writes; read answers and which halves each one wants.
        m.submodules.wq = wq = fifo.SyncFIFO(width=144, depth=4)   # readable the next cycle
        m.submodules.rq = rq = fifo.SyncFIFOBuffered(width=128, depth=self.depth)
        m.submodules.sq = sq = fifo.SyncFIFOBuffered(width=3, depth=self.depth)
        # Answers taken from the write batch instead of the DRAM.
        m.submodules.fq = fq = fifo.SyncFIFOBuffered(width=128, depth=self.depth)
        m.d.comb += [
            cq.w_en.eq(self.narrow.cmd.valid), cq.w_data.eq(self.narrow.cmd.payload),
            self.narrow.cmd.ready.eq(cq.w_rdy),
            dq.w_en.eq(self.narrow.wdata.valid), dq.w_data.eq(self.narrow.wdata.payload),
            self.narrow.wdata.ready.eq(dq.w_rdy),
        ]
        head_we = cq.r_data[0]
        head_addr = cq.r_data[1:]

        # The command being assembled: kind, wide address, halves wanted (bit 0 = low word),
        # how many of its write words have their data, and the wide data so far.
        cur = Signal()
        cur_we = Signal()
        cur_addr = Signal(aw - 1)
        cur_sel = Signal(2)
        cur_n = Signal(2)            # commands in it (1 or 2)
        cur_got = Signal(2)          # write data words in it
        cur_data = Signal(128)
        cur_mask = Signal(16)
        age = Signal(range(max(self.wait_wr, self.wait_rd) + 2))

        # A write's data words arrive in command order: the next one belongs to ``cur``.
        first_hi = cur_sel == 0b10               # a lone odd word
        slot_hi = Mux(cur_got == 0, first_hi, 1)  # the half the next data word fills
        take_data = cur & cur_we & (cur_got < cur_n) & dq.r_rdy
        with m.If(take_data):
            m.d.sync += cur_got.eq(cur_got + 1)
            with m.If(slot_hi):
                m.d.sync += [cur_data[64:].eq(dq.r_data[:64]), cur_mask[8:].eq(dq.r_data[64:])]
            with m.Else():
                m.d.sync += [cur_data[:64].eq(dq.r_data[:64]), cur_mask[:8].eq(dq.r_data[64:])]
        m.d.comb += dq.r_en.eq(take_data)

        # The head may join ``cur``: same kind, the odd word of ``cur``'s even word.
        joins = (cur & (cur_sel == 0b01) & cq.r_rdy & (head_we == cur_we)
                 & (head_addr[1:] == cur_addr) & head_addr[0])
        waited = age >= Mux(cur_we, self.wait_wr, self.wait_rd)
        complete = (cur_sel != 0b01) | ((cq.r_rdy | waited) & ~joins)
        cur_ready = cur & complete & (~cur_we | (cur_got == cur_n))

        # Complete writes wait in a batch (``batch`` wide words: their addresses and byte masks
        # in registers, their data in distributed RAM) and leave together: when the batch is
        # full, when its oldest has waited ``hold`` cycles, or when a read wants a word one of
        # them writes. Reads go first otherwise, so a run of reads is not cut by a write every
        # few words (each switch between writing and reading idles the DRAM's data bus for
        # several cycles).
        B = self.batch
        b_addr = [Signal(aw - 1, name=f"b_addr{i}") for i in range(B)]
        # The batch's data in distributed RAM, written a byte lane at a time; two read ports,
        # one for the entry leaving, one for a read answered from the batch.
        m.submodules.b_data = b_data = Memory(shape=unsigned(128), depth=B, init=[])
        b_wr = b_data.write_port(granularity=8)
        b_rd_head = b_data.read_port(domain="comb")
        b_rd_fwd = b_data.read_port(domain="comb")
        b_mask = [Signal(16, name=f"b_mask{i}") for i in range(B)]
        b_valid = Signal(B)
        b_head = Signal(range(B))
        b_tail = Signal(range(B))
        b_age = Signal(range(self.hold + 1))
        draining = Signal()
        hit = Signal(B)              # entries that write ``cur``'s wide word
        m.d.comb += hit.eq(Cat(*[b_valid[i] & (b_addr[i] == cur_addr) for i in range(B)]))
        # A read of a word the batch writes is answered from the batch when exactly one entry
        # has it and that entry holds every word the read wants; any other read of a batched
        # word waits until the batch has gone.
        wants = Cat(Mux(cur_sel[0], 0xFF, 0), Mux(cur_sel[1], 0xFF, 0))
        cover = Cat(*[hit[i] & ((b_mask[i] & wants) == wants) for i in range(B)])
        one_hit = (hit != 0) & ((hit & (hit - 1)) == 0)
        forward = cur_ready & ~cur_we & one_hit & (cover != 0)
        alias = cur & ~cur_we & (hit != 0) & ~(one_hit & (cover != 0))
        fwd_data = b_rd_fwd.data
        for i in range(B):
            with m.If(cover[i]):
                m.d.comb += b_rd_fwd.addr.eq(i)
        full = b_valid == (1 << B) - 1
        # A write to a wide word already in the batch joins its entry (its bytes over the
        # older ones), unless that entry leaves this cycle; otherwise it takes a new entry.
        into = Signal(B)
        push_ok = cur_ready & cur_we
        # Room for what the wide command brings: its data, or its answer.
        inflight = Signal(range(self.depth + 1))
        read_ok = (cur_ready & ~cur_we & (hit == 0) & ~draining & (inflight < self.depth)
                   & sq.w_rdy)
        write_ok = draining & (b_valid != 0) & wq.w_rdy
        # Wide commands leave through a skid buffer: the controller's arbiters see a registered
        # valid, and this side a registered ready.
        m.submodules.skid = skid = SkidBuffer(mem_cmd_layout(aw - 1))
        wiring.connect(m, skid.source, wiring.flipped(self.wide.cmd))
        m.d.comb += [
            skid.sink.valid.eq(read_ok | write_ok),
            skid.sink.payload.we.eq(~read_ok),
            skid.sink.payload.addr.eq(Mux(read_ok, cur_addr,
                                          Array(b_addr)[b_head])),
        ]
        go = skid.sink.valid & skid.sink.ready
        read_sent = go & read_ok
        write_sent = go & ~read_ok
        leaving = Mux(write_sent, 1 << b_head, 0)
        joinable = hit & ~leaving
        new_entry = push_ok & (joinable == 0) & ~full
        m.d.comb += into.eq(Mux(joinable != 0, joinable, Mux(new_entry, 1 << b_tail, 0)))
        push = push_ok & ((joinable != 0) | new_entry)
        m.d.comb += [b_wr.data.eq(cur_data), b_wr.en.eq(Mux(push, cur_mask, 0))]
        for i in range(B):
            with m.If(into[i]):
                m.d.comb += b_wr.addr.eq(i)
            with m.If(push & into[i]):
                with m.If(new_entry):
                    m.d.sync += b_mask[i].eq(cur_mask)
                with m.Else():
                    m.d.sync += b_mask[i].eq(b_mask[i] | cur_mask)
        fwd_sent = forward & sq.w_rdy & fq.w_rdy & ~read_ok
        # ``cur`` moves on once its read has gone (or been answered) or its write has joined
        # the batch.
        issued = read_sent | fwd_sent | push
        m.d.comb += [
            fq.w_en.eq(fwd_sent),
            fq.w_data.eq(fwd_data),
            wq.w_en.eq(write_sent),
            b_rd_head.addr.eq(b_head),
            wq.w_data.eq(Cat(b_rd_head.data, Array(b_mask)[b_head])),
            sq.w_en.eq(read_sent | fwd_sent),
            sq.w_data.eq(Cat(cur_sel, fwd_sent)),
            self.merged.eq(issued & (cur_sel == 0b11)),
        ]
        with m.If(new_entry):
            m.d.sync += [Array(b_addr)[b_tail].eq(cur_addr),
                         b_tail.eq(Mux(b_tail == B - 1, 0, b_tail + 1))]
        with m.If(write_sent):
            m.d.sync += b_head.eq(Mux(b_head == B - 1, 0, b_head + 1))
        m.d.sync += b_valid.eq((b_valid | Mux(new_entry, 1 << b_tail, 0)) & ~leaving)
        empty_after = (b_valid & ~leaving) == 0
        with m.If(b_valid == 0):
            m.d.sync += b_age.eq(0)
        with m.Elif(b_age < self.hold):
            m.d.sync += b_age.eq(b_age + 1)
        with m.If(draining):
            with m.If(write_sent & empty_after & ~push):
                m.d.sync += draining.eq(0)
        with m.Elif((b_valid != 0) & (full | (b_age >= self.hold) | alias
                                      | (push_ok & ~push))):
            m.d.sync += draining.eq(1)

        # Load the head into a free (or just freed) ``cur``, or join it.
        load = cq.r_rdy & (~cur | issued)
        m.d.comb += cq.r_en.eq(load | joins)
        with m.If(joins & ~issued):
            m.d.sync += [cur_sel.eq(0b11), cur_n.eq(2)]
        with m.Elif(load):
            m.d.sync += [cur.eq(1), cur_we.eq(head_we), cur_addr.eq(head_addr[1:]),
                         cur_sel.eq(Mux(head_addr[0], 0b10, 0b01)), cur_n.eq(1),
                         cur_got.eq(0), cur_mask.eq(0), age.eq(0)]
        with m.Elif(issued):
            m.d.sync += cur.eq(0)
        with m.Elif(cur & ~waited):
            m.d.sync += age.eq(age + 1)

        # Write data to the controller when it asks; read answers back as 64-bit words.
        m.d.comb += [
            self.wide.wdata.valid.eq(wq.r_rdy),
            self.wide.wdata.payload.eq(wq.r_data),
            wq.r_en.eq(self.wide.wdata.ready),
            rq.w_en.eq(self.wide.rdata.valid),
            rq.w_data.eq(self.wide.rdata.payload),
            self.wide.rdata.ready.eq(1),
        ]
        hi = Signal()                # the low half of a two-word answer has gone
        sel = sq.r_data[:2]
        from_batch = sq.r_data[2]
        word = Mux(from_batch, fq.r_data, rq.r_data)
        out_hi = (sel == 0b10) | hi
        last = (sel != 0b11) | hi
        m.d.comb += [
            self.narrow.rdata.valid.eq(sq.r_rdy & Mux(from_batch, fq.r_rdy, rq.r_rdy)),
            self.narrow.rdata.payload.eq(Mux(out_hi, word[64:], word[:64])),
        ]
        sent = self.narrow.rdata.valid & self.narrow.rdata.ready
        done = sent & last
        m.d.comb += [rq.r_en.eq(done & ~from_batch), fq.r_en.eq(done & from_batch),
                     sq.r_en.eq(done)]
        with m.If(sent):
            m.d.sync += hi.eq(~last)
        m.d.sync += inflight.eq(inflight + read_sent - (done & ~from_batch))
        return m
