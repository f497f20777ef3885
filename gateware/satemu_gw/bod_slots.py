# SPDX-License-Identifier: BSD-2-Clause
"""BoD slot scheduler: serves the return queue in the terminal's granted timeslots."""

from amaranth import Module, Signal, Mux, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import BOD_ENABLE, BOD_RECORD, BOD_RECORD_WORDS

from .bod_alloc import BodAllocator
from .layouts import Config, frame_words

# A frame admitted to the BoD queue: its length. Its header word's offset follows from the
# lengths before it (the engine stores the frames one after another from offset 0 on).
BodEntry = data.StructLayout({"length": 16})
# A released frame's header, for the writer: written last, it commits the frame to the reader.
HeaderWrite = data.StructLayout({"offset": 32, "length": 16, "egress": 48})
# A released frame, for the admission engine's queue accounting.
Release = data.StructLayout({"departure": 48, "length": 16})
Record = data.StructLayout(dict(BOD_RECORD))

# Progress handshakes between the engine and the scheduler are delayed by this many cycles,
# which covers the FIFOs between them (a write is visible at the read side two cycles later).
SYNC_DELAY = 3


def port_cycles(p, length):
    """``ChannelParams.port_cycles`` in gateware: cycles a frame keeps the egress port busy."""
    padded = Mux(length > p.port_pad, length, p.port_pad) if p.port_pad else length
    return ((padded + (p.port_fcs + 7)) >> 3) + p.port_gap


class SlotScheduler(wiring.Component):
    """Processes the slots of the BoD timeline in order, each "as of" its start cycle: the slot
    starting at t is processed only once every frame that arrived before t is in the queue,
    and the engine admits a frame arriving at a only once every slot starting at or before a
    is processed (``done_upto``). So both sides act on exactly
    the state the model (``satemu.model.bod.Bod``) sees, whatever their processing speed.

    * ``horizon``: from the engine, every frame that arrived before it has been pushed;
    * ``done_upto``: every slot starting before it has been processed;
    * ``hold``/``hold_at``: a commit is pending at that cycle; slots after it wait for it;
    * ``start_at``: the cycle of superframe 0, read after a restart (a reset of this block).

    The queue holds ``params.bod_depth`` frames, each by its length alone (enough bits for
    ``max_frame``), so that a deep queue costs few block RAMs: the scheduler follows where each
    frame's header word goes, as the engine placed it, one after another in the region from
    offset 0 after the restart that every layout commit brings.

    A granted slot carries up to ``bod_slot_bytes`` bytes from the queue head; each frame whose
    last byte it carries is released at the slot's end: its header (with the egress cycle)
    goes to the writer, and its departure to the engine. One record per superframe goes into
    the statistics ring, read through ``ring_sel``/``ring_data``.

    ``cfg`` is the profile in force: the engine applies a commit only once every slot starting
    at or before its cycle is processed, so each slot sees the profile in force at its start.
    A superframe keeps the shape in force at its first slot (slots, their length and bytes);
    the allocator reads the other BoD fields then too.
    """

    def __init__(self, params):
        self.params = params
        super().__init__({
            "cfg": In(Config),
            "push": In(stream.Signature(BodEntry, always_ready=True)),
            "horizon": In(64),
            "hold": In(1),
            "hold_at": In(64),
            "start_at": In(64),
            "done_upto": Out(64),
            "hdr": Out(stream.Signature(HeaderWrite)),
            "release": Out(stream.Signature(Release, always_ready=True)),
            "ring_sel": In(32),
            "ring_data": Out(32 * BOD_RECORD_WORDS),
            "count": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        cfg = self.cfg
        on = (cfg.bod_flags & BOD_ENABLE).any()
        m.submodules.alloc = alloc = BodAllocator()
        len_bits = p.max_frame.bit_length()
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=len_bits, depth=p.bod_depth)
        m.submodules.ring = ring = Memory(shape=unsigned(Record.size), depth=p.bod_ring, init=[])
        ring_rd = ring.read_port()
        ring_wr = ring.write_port()
        ring_bits = (p.bod_ring - 1).bit_length()
        m.d.comb += [ring_rd.addr.eq(self.ring_sel[:ring_bits]), self.ring_data.eq(ring_rd.data),
                     alloc.cfg.eq(cfg)]

        head_length = queue.r_data          # the head frame's length
        m.d.comb += [queue.w_data.eq(self.push.payload.length), queue.w_en.eq(self.push.valid)]
        # The head frame's header word, and the next frame's (registered in SERVE).
        offset = Signal(32)
        next_offset = Signal(32)

        primed = Signal()
        t = Signal(64)            # start of the slot being (or next to be) processed
        k = Signal(32)
        i = Signal(16)
        acc = Signal(17)
        granted = Signal(17)
        cap = Signal(16)
        sent = Signal(16)          # bytes of the head frame already carried
        used = Signal()
        rec = Signal(Record)
        backlog = Signal(32)
        arrived = Signal(32)
        egress_free = Signal(64)
        # The superframe's shape, taken at its first slot.
        n_slots = Signal(len(cfg.bod_slots))
        slot_cycles = Signal(len(cfg.bod_slot_cycles))
        slot_bytes = Signal(len(cfg.bod_slot_bytes))

        # Pushes add to the backlog and the arrival count; the slots below subtract.
        size = Signal(17)
        m.d.comb += size.eq(self.push.payload.length + cfg.overhead)
        carried = Signal(17)
        m.d.sync += backlog.eq(backlog + Mux(self.push.valid, size, 0) - carried)
        with m.If(alloc.took_arrived):
            m.d.sync += arrived.eq(Mux(self.push.valid, size, 0))
        with m.Elif(self.push.valid):
            m.d.sync += arrived.eq(arrived + size)

        # done_upto, delayed: the engine's view of the slots processed.
        stage = [Signal(64, name=f"done_d{n}") for n in range(SYNC_DELAY)]
        m.d.sync += stage[0].eq(Mux(primed, t, 0))
        m.d.sync += [stage[n + 1].eq(stage[n]) for n in range(SYNC_DELAY - 1)]
        m.d.comb += self.done_upto.eq(stage[-1])
        horizon = self.horizon
        for n in range(SYNC_DELAY):
            delayed = Signal(64, name=f"horizon_d{n}")
            m.d.sync += delayed.eq(horizon)
            horizon = delayed

        slot_end = t + slot_cycles
        hold_ok = ~self.hold | (t <= self.hold_at)
        # Registered one step ahead of their use, for short paths at the board's clock: the
        # latency (``cfg`` holds still while a slot is processed, and a slot after a commit
        # waits at least two cycles for it), and a frame's bytes left and release cycle (SERVE),
        # used by CARRY.
        latency = Signal(64)
        m.d.sync += latency.eq(Mux(cfg.delay > p.latency_floor, cfg.delay, p.latency_floor))
        due = Signal(64)
        egress = Mux(due > egress_free, due, egress_free)
        if p.mem_pace:
            # The memory's pace (ChannelParams.paced): the last frame's paced release, and the
            # earliest the head frame may follow it, registered ahead of their compare (PACE).
            pace_free = Signal(64)
            pace_next = Signal(64)
        rem_now = Signal(17)
        m.d.comb += rem_now.eq(head_length + cfg.overhead - sent)
        rem = Signal(17)

        m.d.comb += [
            self.hdr.payload.offset.eq(offset),
            self.hdr.payload.length.eq(head_length),
            self.hdr.payload.egress.eq(egress[:48]),
            self.release.payload.departure.eq(slot_end[:48]),
            self.release.payload.length.eq(head_length),
            ring_wr.addr.eq(k[:ring_bits]),
            ring_wr.data.eq(rec),
        ]

        with m.FSM():
            with m.State("WAIT"):
                with m.If(~primed):
                    with m.If(on):
                        m.d.sync += [primed.eq(1), t.eq(self.start_at)]
                with m.Elif(on & (horizon >= t) & hold_ok):
                    with m.If(i == 0):
                        m.d.comb += alloc.start.eq(1)
                        m.d.sync += [rec.sf.eq(k), rec.backlog.eq(backlog),
                                     n_slots.eq(cfg.bod_slots),
                                     slot_cycles.eq(cfg.bod_slot_cycles),
                                     slot_bytes.eq(cfg.bod_slot_bytes)]
                        m.next = "ALLOC"
                    with m.Else():
                        m.next = "SLOT"
                m.d.comb += [alloc.k.eq(k), alloc.backlog.eq(backlog), alloc.arrived.eq(arrived)]

            with m.State("ALLOC"):
                m.d.comb += [alloc.k.eq(k), alloc.backlog.eq(backlog), alloc.arrived.eq(arrived)]
                with m.If(~alloc.busy):
                    m.d.sync += [
                        rec.rbdc_req.eq(alloc.rbdc_req), rec.vbdc_req.eq(alloc.vbdc_req),
                        rec.bg.eq(alloc.bg), rec.g_cra.eq(alloc.g_cra),
                        rec.g_rbdc.eq(alloc.g_rbdc),
                        rec.g_vbdc.eq(alloc.g_vbdc), rec.g_fca.eq(alloc.g_fca), rec.used.eq(0),
                        rec.terminal.eq(0), granted.eq(alloc.granted), acc.eq(0),
                    ]
                    m.next = "SLOT"

            with m.State("SLOT"):
                # Slot i is the terminal's when floor((i+1) g / N) > floor(i g / N).
                a = acc + granted
                with m.If(a >= n_slots):
                    m.d.sync += [acc.eq(a - n_slots), cap.eq(slot_bytes), used.eq(0)]
                    m.next = "SERVE"
                with m.Else():
                    m.d.sync += acc.eq(a)
                    m.next = "NEXT"

            with m.State("SERVE"):
                with m.If((cap != 0) & queue.r_rdy):
                    words = frame_words(head_length)
                    end = Signal(33)
                    m.d.comb += end.eq(offset + words)
                    m.d.sync += [rem.eq(rem_now), due.eq(slot_end + latency),
                                 next_offset.eq(Mux(end >= cfg.mem_size, end - cfg.mem_size, end))]
                    if p.mem_pace:
                        m.d.sync += pace_next.eq(pace_free + words * p.mem_pace)
                        m.next = "PACE"
                    else:
                        m.next = "CARRY"
                with m.Else():
                    m.d.sync += rec.used.eq(rec.used + used)
                    m.next = "NEXT"

            if p.mem_pace:
                with m.State("PACE"):
                    m.d.sync += due.eq(Mux(pace_next > due, pace_next, due))
                    m.next = "CARRY"

            with m.State("CARRY"):
                with m.If(rem <= cap):
                    m.d.comb += self.hdr.valid.eq(1)
                    with m.If(self.hdr.ready):
                        m.d.comb += [queue.r_en.eq(1), self.release.valid.eq(1), carried.eq(rem)]
                        m.d.sync += [cap.eq(cap - rem), sent.eq(0), used.eq(1),
                                     offset.eq(next_offset),
                                     egress_free.eq(egress + port_cycles(p, head_length))]
                        if p.mem_pace:
                            m.d.sync += pace_free.eq(due)
                        m.next = "SERVE"
                with m.Else():
                    m.d.comb += carried.eq(cap)
                    m.d.sync += [sent.eq(sent + cap), cap.eq(0), used.eq(1)]
                    m.next = "SERVE"

            with m.State("NEXT"):
                m.d.sync += [t.eq(slot_end), i.eq(i + 1)]
                with m.If(i + 1 == n_slots):
                    m.d.comb += ring_wr.en.eq(1)
                    m.d.sync += [i.eq(0), k.eq(k + 1), self.count.eq(k + 1)]
                m.next = "WAIT"
        return m
