# SPDX-License-Identifier: BSD-2-Clause
"""BoD slot scheduler of a channel with terminals: serves each terminal's queue in its own
granted timeslots (docs/bod.md, "Terminals")."""

from amaranth import Module, Signal, Mux, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import BOD_ENABLE, BOD_RECORD, BOD_RECORD_WORDS

from .bod_pool import PoolAllocator
from .bod_slots import SYNC_DELAY, port_cycles
from .layouts import Config, frame_words
from .termtable import Level, PoolCfg

# A frame admitted to a terminal's queue: its length and its terminal.
TermEntry = data.StructLayout({"length": 16, "terminal": 6})
# A released frame's header, for the writer: its offset within the region (its terminal's
# share's base included), and the terminal's, for the reader.
TermHeader = data.StructLayout({"offset": 32, "length": 16, "egress": 48, "terminal": 6})
# A released frame, for the admission engine's queue accounting.
TermRelease = data.StructLayout({"departure": 48, "length": 16, "terminal": 6})
Record = data.StructLayout(dict(BOD_RECORD))


def share_bits(n):
    """``satemu.base.terminals.share_bits`` in gateware, for ``n`` of up to 64 terminals."""
    return Mux(n > 32, 6, Mux(n > 16, 5, Mux(n > 8, 4, Mux(n > 4, 3, Mux(n > 2, 2,
                                                                             Mux(n > 1, 1, 0))))))


class TerminalScheduler(wiring.Component):
    """``SlotScheduler`` with terminals: the same handshakes with the admission engine
    (``horizon``, ``done_upto``, ``hold``), the same slots, spread the same way, but the
    superframe's allocation (``satemu_gw.bod_pool.PoolAllocator``) shares them among the
    terminals, and each granted slot carries its terminal's own queue: the first granted slots
    go to the first run's terminal, and so on.

    Each terminal with frames has its queue of lengths, its part of one memory
    (``params.bod_depth`` split as ``ChannelParams.terminal_cap`` says), and its share of the
    delay-line region (``satemu.base.terminals.terminal_share``): the engine stores a
    terminal's frames one after another in its share from offset 0 after a layout commit, and
    the scheduler follows each one's header offset. A released frame's header (``hdr``) and its
    departure (``release``) name its terminal. At a superframe's end its records, one a terminal
    (``Record``'s ``terminal``), go into the ring, superframe by superframe (``ring_sel``: the
    record's index since the block started, mod the ring)."""

    def __init__(self, params):
        self.params = params
        self.framed = params.terminals
        super().__init__({
            "cfg": In(Config),
            "push": In(stream.Signature(TermEntry, always_ready=True)),
            "horizon": In(64),
            "hold": In(1),
            "hold_at": In(64),
            "start_at": In(64),
            "done_upto": Out(64),
            "hdr": Out(stream.Signature(TermHeader)),
            "release": Out(stream.Signature(TermRelease, always_ready=True)),
            "ring_sel": In(32),
            "ring_data": Out(32 * BOD_RECORD_WORDS),
            "count": Out(32),
            "row_addr": Out(range(max(params.terminals + params.synthetic, 1))),
            "row": In(PoolCfg),
            "level_addr": Out(range(max(params.demand_levels, 1))),
            "level": In(Level),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        cfg = self.cfg
        n_f = self.framed
        fbits = max((n_f - 1).bit_length(), 1)
        on = (cfg.bod_flags & BOD_ENABLE).any()
        m.submodules.alloc = alloc = PoolAllocator(p)
        m.d.comb += [self.row_addr.eq(alloc.row_addr), alloc.row.eq(self.row),
                     self.level_addr.eq(alloc.level_addr), alloc.level.eq(self.level),
                     alloc.cfg.eq(cfg)]
        depth = p.bod_depth
        m.submodules.queue = queue = Memory(shape=unsigned(p.max_frame.bit_length()),
                                            depth=depth, init=[])
        q_wr = queue.write_port()
        q_rd = queue.read_port(transparent_for=(q_wr,))
        m.submodules.ring = ring = Memory(shape=unsigned(Record.size), depth=p.bod_ring, init=[])
        ring_rd, ring_wr = ring.read_port(), ring.write_port()
        ring_bits = (p.bod_ring - 1).bit_length()
        m.d.comb += [ring_rd.addr.eq(self.ring_sel[:ring_bits]), self.ring_data.eq(ring_rd.data)]

        # The terminals with frames: how many, each one's part of the queue and of the region.
        single = cfg.term_match == 0
        n = Signal(range(n_f + 2))
        m.d.comb += n.eq(Mux(single, 1, cfg.term_framed))
        sb = Signal(3)
        m.d.comb += sb.eq(share_bits(n))
        cap = Signal(range(depth + 1))
        share = Signal(32)
        m.d.comb += [cap.eq(depth >> sb), share.eq(cfg.mem_size >> sb)]
        total = Signal(range(p.terminals + p.synthetic + 2))
        m.d.comb += total.eq(Mux(single, 1, cfg.term_framed + cfg.term_synthetic))

        head = [Signal(range(depth), name=f"head{i}") for i in range(n_f)]
        tail = [Signal(range(depth), name=f"tail{i}") for i in range(n_f)]
        held = [Signal(range(depth + 1), name=f"held{i}") for i in range(n_f)]
        sent = [Signal(16, name=f"sent{i}") for i in range(n_f)]
        backlog = [Signal(32, name=f"backlog{i}") for i in range(n_f)]
        arrived = [Signal(32, name=f"arrived{i}") for i in range(n_f)]
        offset = [Signal(32, name=f"offset{i}") for i in range(n_f)]
        used = [Signal(16, name=f"used{i}") for i in range(n_f)]
        for i in range(n_f):
            m.d.comb += [alloc.backlog[i].eq(backlog[i]), alloc.arrived[i].eq(arrived[i])]

        def pick(signals, index):
            """``signals[index]``, a terminal with frames' register."""
            out = Signal.like(signals[0], name=f"{signals[0].name}_sel")
            with m.Switch(index):
                for i, s in enumerate(signals):
                    with m.Case(i):
                        m.d.comb += out.eq(s)
            return out

        def base_of(index, size):
            """``index * size``: terminal ``index``'s part of a whole split in ``size`` parts."""
            out = Signal(33)
            m.d.comb += out.eq(index * size)
            return out

        # Pushes: the frame's length at its terminal's tail, its bytes into its backlog.
        size = Signal(17)
        pushed = self.push.payload
        pt = pushed.terminal[:fbits]
        m.d.comb += [size.eq(pushed.length + cfg.overhead),
                     q_wr.addr.eq(base_of(pt, cap) + pick(tail, pt)),
                     q_wr.data.eq(pushed.length), q_wr.en.eq(self.push.valid)]
        owner = Signal(6)                 # the terminal of the slot being served
        ow = owner[:fbits]
        carried = Signal(17)
        popped = Signal()
        for i in range(n_f):
            pushing = self.push.valid & (pt == i)
            serving = ow == i
            dec = Mux(serving, carried, 0)
            m.d.sync += backlog[i].eq(backlog[i] + Mux(pushing, size, 0) - dec)
            with m.If(alloc.took[i]):
                m.d.sync += arrived[i].eq(Mux(pushing, size, 0))
            with m.Elif(pushing):
                m.d.sync += arrived[i].eq(arrived[i] + size)
            with m.If(pushing):
                m.d.sync += tail[i].eq(Mux(tail[i] + 1 >= cap, 0, tail[i] + 1))
            m.d.sync += held[i].eq(held[i] + pushing - (popped & serving))
            with m.If(popped & serving):
                m.d.sync += head[i].eq(Mux(head[i] + 1 >= cap, 0, head[i] + 1))

        primed = Signal()
        t = Signal(64)            # start of the slot being (or next to be) processed
        k = Signal(32)
        i_slot = Signal(16)
        acc = Signal(17)
        granted = Signal(17)
        room = Signal(16)         # bytes the slot still carries
        slot_used = Signal()
        egress_free = Signal(64)
        run_left = Signal(17)
        rec_at = Signal(32)       # records written since the block started
        r = Signal(range(64 + 1))  # the record being written at a superframe's end
        n_slots = Signal(len(cfg.bod_slots))
        slot_cycles = Signal(len(cfg.bod_slot_cycles))
        slot_bytes = Signal(len(cfg.bod_slot_bytes))
        bg = Signal(16)

        stage = [Signal(64, name=f"done_d{x}") for x in range(SYNC_DELAY)]
        m.d.sync += stage[0].eq(Mux(primed, t, 0))
        m.d.sync += [stage[x + 1].eq(stage[x]) for x in range(SYNC_DELAY - 1)]
        m.d.comb += self.done_upto.eq(stage[-1])
        horizon = self.horizon
        for x in range(SYNC_DELAY):
            delayed = Signal(64, name=f"horizon_d{x}")
            m.d.sync += delayed.eq(horizon)
            horizon = delayed

        slot_end = t + slot_cycles
        hold_ok = ~self.hold | (t <= self.hold_at)
        latency = Signal(64)
        m.d.sync += latency.eq(Mux(cfg.delay > p.latency_floor, cfg.delay, p.latency_floor))
        due = Signal(64)
        egress = Mux(due > egress_free, due, egress_free)
        if p.mem_pace:
            pace_free = Signal(64)
            pace_next = Signal(64)
        head_length = Signal(16)
        rem = Signal(17)
        next_offset = Signal(32)
        m.d.comb += [q_rd.addr.eq(base_of(ow, cap) + pick(head, ow))]

        m.d.comb += [
            self.hdr.payload.offset.eq(base_of(ow, share) + pick(offset, ow)),
            self.hdr.payload.length.eq(head_length),
            self.hdr.payload.egress.eq(egress[:48]),
            self.hdr.payload.terminal.eq(owner),
            self.release.payload.departure.eq(slot_end[:48]),
            self.release.payload.length.eq(head_length),
            self.release.payload.terminal.eq(owner),
        ]

        with m.FSM():
            with m.State("WAIT"):
                with m.If(~primed):
                    with m.If(on):
                        m.d.sync += [primed.eq(1), t.eq(self.start_at)]
                with m.Elif(on & (horizon >= t) & hold_ok):
                    with m.If(i_slot == 0):
                        m.d.comb += alloc.start.eq(1)
                        m.d.sync += [n_slots.eq(cfg.bod_slots),
                                     slot_cycles.eq(cfg.bod_slot_cycles),
                                     slot_bytes.eq(cfg.bod_slot_bytes), run_left.eq(0)]
                        m.d.sync += [u.eq(0) for u in used]
                        m.next = "ALLOC"
                    with m.Else():
                        m.next = "SLOT"
                m.d.comb += alloc.k.eq(k)

            with m.State("ALLOC"):
                m.d.comb += alloc.k.eq(k)
                with m.If(~alloc.busy):
                    m.d.sync += [granted.eq(alloc.granted), acc.eq(0), bg.eq(alloc.bg)]
                    m.next = "SLOT"

            with m.State("SLOT"):
                # Slot i is granted when floor((i+1) G / N) > floor(i G / N); the granted ones
                # go to the runs' terminals in turn.
                a = acc + granted
                with m.If(a >= n_slots):
                    m.d.sync += [acc.eq(a - n_slots), room.eq(slot_bytes), slot_used.eq(0)]
                    with m.If(run_left == 0):
                        m.d.comb += alloc.runs.ready.eq(1)
                        m.d.sync += [owner.eq(alloc.runs.payload.terminal),
                                     run_left.eq(alloc.runs.payload.count - 1)]
                        with m.If(alloc.runs.payload.terminal < n):
                            m.next = "FETCH"
                        with m.Else():
                            m.next = "NEXT"          # a synthetic terminal's slot
                    with m.Else():
                        m.d.sync += run_left.eq(run_left - 1)
                        with m.If(owner < n):
                            m.next = "FETCH"
                        with m.Else():
                            m.next = "NEXT"
                with m.Else():
                    m.d.sync += acc.eq(a)
                    m.next = "NEXT"

            with m.State("FETCH"):
                # (the owner's head length, the cycle after)
                m.next = "SERVE"

            with m.State("SERVE"):
                with m.If((room != 0) & (pick(held, ow) != 0)):
                    words = frame_words(q_rd.data)
                    end = Signal(33)
                    off = pick(offset, ow)
                    m.d.comb += end.eq(off + words)
                    m.d.sync += [head_length.eq(q_rd.data),
                                 rem.eq(q_rd.data + cfg.overhead - pick(sent, ow)),
                                 due.eq(slot_end + latency),
                                 next_offset.eq(Mux(end >= share, end - share, end))]
                    if p.mem_pace:
                        m.d.sync += pace_next.eq(pace_free + words * p.mem_pace)
                        m.next = "PACE"
                    else:
                        m.next = "CARRY"
                with m.Else():
                    for x in range(n_f):
                        with m.If(ow == x):
                            m.d.sync += used[x].eq(used[x] + slot_used)
                    m.next = "NEXT"

            if p.mem_pace:
                with m.State("PACE"):
                    m.d.sync += due.eq(Mux(pace_next > due, pace_next, due))
                    m.next = "CARRY"

            with m.State("CARRY"):
                with m.If(rem <= room):
                    m.d.comb += self.hdr.valid.eq(1)
                    with m.If(self.hdr.ready):
                        m.d.comb += [popped.eq(1), self.release.valid.eq(1), carried.eq(rem)]
                        m.d.sync += [room.eq(room - rem), slot_used.eq(1),
                                     egress_free.eq(egress + port_cycles(p, head_length))]
                        for x in range(n_f):
                            with m.If(ow == x):
                                m.d.sync += [sent[x].eq(0), offset[x].eq(next_offset)]
                        if p.mem_pace:
                            m.d.sync += pace_free.eq(due)
                        m.next = "FETCH"
                with m.Else():
                    m.d.comb += carried.eq(room)
                    m.d.sync += [room.eq(0), slot_used.eq(1)]
                    for x in range(n_f):
                        with m.If(ow == x):
                            m.d.sync += sent[x].eq(sent[x] + room)
                    m.next = "SERVE"

            with m.State("NEXT"):
                m.d.sync += [t.eq(slot_end), i_slot.eq(i_slot + 1)]
                with m.If(i_slot + 1 == n_slots):
                    m.d.sync += [i_slot.eq(0), r.eq(0)]
                    m.next = "RECORD"
                with m.Else():
                    m.next = "WAIT"

            with m.State("RECORD"):
                # The superframe's records, a terminal each: the allocator's, with the slots
                # each terminal with frames used.
                m.d.comb += alloc.rec_addr.eq(r)
                m.next = "RECORD_W"
            with m.State("RECORD_W"):
                m.d.comb += alloc.rec_addr.eq(r)
                rec = Signal(Record)
                got = alloc.rec
                m.d.comb += [
                    rec.sf.eq(k), rec.rbdc_req.eq(got.rbdc_req), rec.vbdc_req.eq(got.vbdc_req),
                    rec.bg.eq(bg), rec.g_cra.eq(got.g_cra), rec.g_rbdc.eq(got.g_rbdc),
                    rec.g_vbdc.eq(got.g_vbdc), rec.g_fca.eq(got.g_fca),
                    rec.used.eq(Mux(r < n, pick(used, r[:fbits]), got.used)),
                    rec.terminal.eq(r), rec.backlog.eq(got.backlog),
                    ring_wr.addr.eq(rec_at[:ring_bits]), ring_wr.data.eq(rec), ring_wr.en.eq(1),
                ]
                m.d.sync += [rec_at.eq(rec_at + 1), r.eq(r + 1)]
                with m.If(r + 1 == total):
                    m.d.sync += [k.eq(k + 1), self.count.eq(k + 1)]
                    m.next = "WAIT"
                with m.Else():
                    m.next = "RECORD"
        return m
