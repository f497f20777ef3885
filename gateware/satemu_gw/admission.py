# SPDX-License-Identifier: BSD-2-Clause
"""Admission engine: decides each frame's fate and schedules its departure and egress cycles."""

from amaranth import Module, Signal, Mux, Const, Cat, signed
from amaranth.lib import fifo, stream, wiring, data
from amaranth.lib.wiring import In, Out

from satemu.base.params import Fate
from satemu.base.regmap import (LOSS_BERNOULLI, LOSS_GILBERT_ELLIOTT, COMMIT_RESEED, COMMIT_LAYOUT,
    BOD_ENABLE)

from .layouts import (Config, IngressDesc, Decision, QueueEntry, frame_beats, TERMINAL_BITS,
    NO_TERMINAL)
from .bod_slots import BodEntry, Release, port_cycles
from .bod_terms import TermEntry, TermRelease, share_bits
from .termtable import FrameCfg
from .prng import Prng
from .sertime import SerTime

ENGINE_COUNTERS = ["rx_frames", "rx_bytes", "drop_runt", "drop_oversize", "drop_error",
                   "drop_loss", "drop_queue", "drop_mem", "drop_unclassified"]
ENGINE_GAUGES = ["queue_frames_now", "queue_bytes_now", "queue_frames_hwm", "queue_bytes_hwm",
                 "mem_words_now", "mem_words_hwm"]

FATE_OF = {f"drop_{f.name.lower()}": int(f) for f in Fate if f is not Fate.DELIVERED}

# A frame whose last beat is accepted at cycle a reaches the engine by cycle a + 2 (the ingress
# descriptor FIFO is buffered). While no descriptor is visible, every frame still to come has
# arrived at or after now - DESC_LATENCY, so the engine may act "as of" that cycle.
DESC_LATENCY = 3


class Admission(wiring.Component):
    """Processes ingress descriptors in arrival order, at its own pace, but every decision is a
    function of the frame's arrival cycle, never of when the engine gets to it:

    * the bottleneck queue holds the frames whose departure cycle is >= the arrival cycle;
    * memory holds the words of frames whose egress has not started before the arrival cycle
      (the ingress snapshots the freed-words counter at that cycle);
    * a staged commit applies to frames that arrive after the commit cycle.

    The shaper keeps the virtual finish time V exactly as ``vi + vf/rate_den``.

    With BoD on, an admitted frame skips the shaper: it is pushed to the slot scheduler
    (``bod_push``), which later reports its departure (``released``) into the queue accounting.
    The engine admits a frame arriving at a only once the scheduler has processed every slot
    starting at or before a (``sched_done`` > a), and tells the scheduler how far arrivals are
    complete (``horizon``: every frame that arrived before it has been pushed).

    The queue's departure times are held in a FIFO on chip, or outside the engine (``q_push``,
    ``q_head``): where the queue may outgrow the chip (``params.spill_words``), in a
    ``satemu_gw.depqueue.DepartureQueue``, and where the chip holds them as distances
    (``params.delta_coded``), in a ``satemu_gw.depdelta.DeltaQueue``. Then the engine waits for
    a head still on its way (``q_waiting``) before it decides and for room before it pushes;
    with the ring, it keeps the layout while departure times are in memory
    (``q_spill_empty``, since the ring lies past the region).
    """

    def __init__(self, params):
        self.params = params
        ports = {
            "desc": In(stream.Signature(IngressDesc)),
            "decision": Out(stream.Signature(Decision)),
            "now": In(64),
            "freed": In(32),
            "cfg": In(Config),
            "staged": In(Config),
            "pending": In(1),
            "commit_at": In(64),
            "commit_flags": In(3),
            "apply": Out(1),
            "layout_ok": Out(1),
            "empty": Out(1),
            "clear": In(1),
            # One pulse per frame, in arrival order, with its fate (params.Fate), and the
            # frame's arrival cycle and length while it lasts (the frame log's).
            "fate_valid": Out(1),
            "fate": Out(3),
            "fate_arrival": Out(48),
            "fate_length": Out(16),
            # The frame's terminal (a table's index, or NO_TERMINAL), with the fate.
            "fate_terminal": Out(TERMINAL_BITS),
            # BoD (satemu_gw.bod_slots.SlotScheduler; with terminals bod_terms.TerminalScheduler).
            "bod_push": Out(stream.Signature(TermEntry if params.terminals else BodEntry,
                                             always_ready=True)),
            "released": In(stream.Signature(TermRelease if params.terminals else Release,
                                            always_ready=True)),
            "sched_done": In(64),
            "horizon": Out(64),
        }
        if params.spill_words or params.delta_coded:
            ports.update({
                "q_push": Out(stream.Signature(QueueEntry)),
                "q_head": In(stream.Signature(QueueEntry)),
                "q_waiting": In(1),
            })
        if params.spill_words:
            ports["q_spill_empty"] = In(1)
        if params.jitter:
            # Jitter (satemu_gw.jitter): a draw for each frame the shaper times, its offset two
            # cycles later, and the reseed of its stream with the loss draws'.
            ports.update({"jit_draw": Out(1), "jit_offset": In(signed(36))})
        if params.duplicate:
            # Duplication (satemu_gw.duplicate): a draw for each frame that passes the length,
            # FCS and terminal checks (a copy draws none), whether it is copied the cycle after.
            ports.update({"dup_draw": Out(1), "dup_hit": In(1)})
        if params.jitter or params.corrupt or params.duplicate:
            ports["reseed"] = Out(1)        # the loss's PRNG reloads: so do jitter's, corruption's
        if params.corrupt:
            # Corruption (satemu_gw.corrupt): a draw for each frame admitted, whether it has a
            # bit flipped and which the cycle after.
            ports.update({"cor_draw": Out(1), "cor_length": Out(12), "cor_flip": In(1),
                          "cor_bit": In(15)})
        if params.terminals:
            # The terminals with frames' settings in force (satemu_gw.termtable).
            ports["frame"] = In(data.ArrayLayout(FrameCfg, params.terminals))
        # The counters start at ``counter_init`` (0 but in the wrap test), the gauges at 0.
        ports.update({name: Out(64, init=params.counter_init) for name in ENGINE_COUNTERS})
        ports.update({name: Out(64) for name in ENGINE_GAUGES})
        ports["corrupted"] = Out(64, init=params.counter_init)   # frames with a bit flipped
        ports["duplicated"] = Out(64, init=params.counter_init)  # copies made
        ports["ce_marked"] = Out(64, init=params.counter_init)   # frames marked CE
        ports["fate_copy"] = Out(1)         # with the fate: the frame is a copy
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        cfg = self.cfg
        m.submodules.prng = prng = Prng()
        m.submodules.sertime = st = SerTime(m_bits=12)
        spill = bool(p.spill_words)
        outside = spill or p.delta_coded       # the queue is a component of its own
        if outside:
            q_rdy, head, q_ren = self.q_head.valid, self.q_head.payload, self.q_head.ready
            q_wdata, q_wen = self.q_push.payload, self.q_push.valid
        else:
            m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=QueueEntry.size,
                                                               depth=p.queue_depth)
            q_rdy, head, q_ren = queue.r_rdy, QueueEntry(queue.r_data), queue.r_en
            q_wdata, q_wen = queue.w_data, queue.w_en

        cur = Signal(IngressDesc)
        words = Signal(17)
        beats = Signal(14)
        m.d.comb += [beats.eq(frame_beats(cur.length)), words.eq(beats + 1)]

        vi = Signal(64)
        vf = Signal(32)
        egress_free = Signal(64)
        # Per terminal with frames where each has its own queue, loss and share of the region
        # (``separate``: BoD and a table), else everything in entry 0: the words it has admitted
        # (mod 2^32), where it writes next, its queue and its Gilbert-Elliott state.
        n_t = max(p.terminals, 1)
        admitted_t = [Signal(32, init=p.word_init, name=f"admitted{i}") for i in range(n_t)]
        wr_off_t = [Signal(32, name=f"wr_off{i}") for i in range(n_t)]
        q_frames_t = [Signal(range(p.queue_most + 1), name=f"q_frames{i}") for i in range(n_t)]
        q_bytes_t = [Signal(33, name=f"q_bytes{i}") for i in range(n_t)]
        ge_bad_t = [Signal(name=f"ge_bad{i}") for i in range(n_t)]
        # The channel's totals.
        admitted = Signal(32, init=p.word_init)   # words admitted to memory, mod 2^32
        q_frames = Signal(range(p.queue_most + 1))
        q_bytes = Signal(33)
        who = Signal(range(n_t))                  # the frame's entry
        tbits = max((n_t - 1).bit_length(), 1)

        def at(signals, index):
            out = Signal.like(signals[0], name=f"{signals[0].name}_at")
            with m.Switch(index):
                for i, x in enumerate(signals):
                    with m.Case(i):
                        m.d.comb += out.eq(x)
            return out

        def set_at(signals, index, value):
            for i, x in enumerate(signals):
                with m.If(index == i):
                    m.d.sync += x.eq(value)

        wr_off = at(wr_off_t, who)
        ge_bad = at(ge_bad_t, who)
        own_frames = at(q_frames_t, who)
        own_bytes = at(q_bytes_t, who)
        own_admitted = at(admitted_t, who)
        lost = Signal()
        departure = Signal(64)
        shape_i = Signal(64)        # the shaper's start: max(arrival, V), integer part
        shape_f = Signal(33)        # ... its fraction plus the frame's
        release = Signal(64)
        dec = Signal(Decision)
        if p.mem_pace:
            # The memory's pace (ChannelParams.paced): the last frame's paced release, and the
            # earliest the frame at hand may follow it, registered ahead of their compare.
            pace_free = Signal(64)
            pace_next = Signal(64)

        cor_drawn = Signal()        # the frame at hand drew its corruption (admitted, cor_p on)
        copy = Signal()             # the frame at hand is a copy (of the one decided before)
        q_seen = Signal.like(q_frames)  # ECN: the frames its queue held at the frame's arrival
        dup_drawn = Signal()        # the frame at hand drew its duplication
        m.d.comb += self.fate_copy.eq(copy)
        if p.corrupt:
            m.d.comb += self.cor_length.eq(cur.length)
        cnt = {name: getattr(self, name) for name in ENGINE_COUNTERS}
        drop = {name: Signal(name=f"inc_{name}") for name in ENGINE_COUNTERS[2:]}
        for name, inc in drop.items():
            with m.If(self.clear):
                m.d.sync += cnt[name].eq(0)
            with m.Elif(inc):
                m.d.sync += cnt[name].eq(cnt[name] + 1)
            with m.If(inc):
                m.d.sync += self.fate.eq(FATE_OF[name])

        bod = (cfg.bod_flags & BOD_ENABLE).any() if p.bod else Const(0, 1)
        # The frame's terminal and whose queue, loss and share it uses.
        if p.terminals:
            separate = bod & (cfg.term_match != 0)
            known = cur.known
            # (with no table in force every frame is the channel's one terminal's, 0, as
            # the header the BoD scheduler writes says: the frame log joins them so)
            terminal = Mux(known, cur.terminal, Mux(cfg.term_match != 0, NO_TERMINAL, 0))
            fr = self.frame[who]
            own = {name: Mux(separate, fr[name], getattr(cfg, name))
                   for name in ("queue_frames", "queue_bytes", "loss_mode", "loss_p", "ge_p",
                                "ge_r", "ge_loss_good", "ge_loss_bad")}
            n_framed = Mux(separate, cfg.term_framed, 1)
            share = Signal(32)
            base = Signal(32)
            m.d.comb += [share.eq(cfg.mem_size >> share_bits(n_framed)),
                         base.eq(who * share)]
            unclassified = separate & ~known
        else:
            separate = known = Const(0, 1)
            terminal = Const(0, TERMINAL_BITS)
            own = {name: getattr(cfg, name) for name in
                   ("queue_frames", "queue_bytes", "loss_mode", "loss_p", "ge_p", "ge_r",
                    "ge_loss_good", "ge_loss_bad")}
            n_framed = 1
            share, base = cfg.mem_size, 0
            unclassified = Const(0, 1)
        m.d.comb += self.fate_terminal.eq(terminal)
        mem_used = Signal(32)
        m.d.comb += [
            self.fate_arrival.eq(cur.arrival[:48]), self.fate_length.eq(cur.length),
            mem_used.eq(Mux(separate, own_admitted, admitted) - cur.freed),
            self.mem_words_now.eq((admitted - self.freed)[:32]),
            self.empty.eq(admitted == self.freed),
            self.queue_frames_now.eq(q_frames),
            self.queue_bytes_now.eq(q_bytes),
            self.decision.payload.eq(dec),
            prng.seed.eq(self.staged.seed),
            st.q.eq(cfg.rate_q), st.num.eq(cfg.rate_num), st.den.eq(cfg.rate_den),
        ]

        entry = Signal(QueueEntry)
        push = Signal()
        m.d.comb += [
            q_wdata.eq(Mux(bod, self.released.payload.as_value()[:QueueEntry.size]
                           if not p.terminals else
                           Cat(self.released.payload.departure,
                               self.released.payload.length[:12],
                               self.released.payload.terminal[:TERMINAL_BITS]), entry)),
            q_wen.eq(Mux(bod, self.released.valid, push)),
            self.bod_push.payload.length.eq(dec.length),
        ]
        if p.terminals:
            m.d.comb += self.bod_push.payload.terminal.eq(who)

        def pop_if_before(t):
            diff = Signal(48)
            m.d.comb += diff.eq(t[:48] - head.departure)
            due = q_rdy & (diff != 0) & ~diff[47]
            with m.If(due):
                m.d.comb += q_ren.eq(1)
                m.d.sync += [q_frames.eq(q_frames - 1), q_bytes.eq(q_bytes - head.length)]
                gone = head.terminal[:tbits] if p.terminals else 0
                for i in range(n_t):
                    with m.If(gone == i):
                        m.d.sync += [q_frames_t[i].eq(q_frames_t[i] - 1),
                                     q_bytes_t[i].eq(q_bytes_t[i] - head.length)]
            return due

        def hwm(gauge, value):
            with m.If(value > gauge):
                m.d.sync += gauge.eq(value)

        with m.If(self.clear):
            m.d.sync += [self.rx_frames.eq(0), self.rx_bytes.eq(0)]

        # "now > commit_at + DESC_LATENCY", registered a cycle ahead (short paths at the board's
        # clock). It is stale only in the first cycle of a pending commit, when it is false anyway
        # (no descriptor can be visible in the cycle after its arrival), hence ``pending_d``.
        late = Signal()
        pending_d = Signal()
        m.d.sync += [late.eq(self.now + 1 > self.commit_at + DESC_LATENCY),
                     pending_d.eq(self.pending)]
        # With BoD, a commit also waits until the scheduler has processed every slot starting at
        # or before its cycle, so that each slot sees the profile in force at its start. Also
        # registered: sched_done only grows while the commit is pending, and a stale value is
        # again covered by ``pending_d``.
        if p.bod:
            sched_ok = Signal()
            m.d.sync += sched_ok.eq(~bod | (self.sched_done > self.commit_at))

        def admit(bod):
            """The frame goes into its terminal's queue and share of the delay line (BoD: for
            the slot scheduler to release), and into the channel's totals."""
            new_qf = q_frames + 1
            new_qb = q_bytes + cur.length
            new_mem = (admitted - cur.freed_all)[:32] + words
            off_sum = Signal(33)
            m.d.comb += off_sum.eq(wr_off + words)
            m.d.sync += [
                q_frames.eq(new_qf), q_bytes.eq(new_qb), admitted.eq(admitted + words),
                dec.keep.eq(1), dec.bod.eq(bod), dec.offset.eq(base + wr_off),
                dec.terminal.eq(terminal),
                self.fate.eq(int(Fate.DELIVERED)),
            ]
            set_at(q_frames_t, who, own_frames + 1)
            set_at(q_bytes_t, who, own_bytes + cur.length)
            set_at(admitted_t, who, own_admitted + words)
            set_at(wr_off_t, who, Mux(off_sum >= share, off_sum - share, off_sum))
            hwm(self.queue_frames_hwm, new_qf)
            hwm(self.queue_bytes_hwm, new_qb)
            hwm(self.mem_words_hwm, new_mem)
            if p.corrupt:
                m.d.comb += self.cor_draw.eq(cfg.cor_p != 0)
                m.d.sync += cor_drawn.eq(cfg.cor_p != 0)

        # Every frame that arrived before `horizon` has been decided (and, with BoD, pushed).
        with m.FSM() as fsm:
            with m.State("IDLE"):
                apply = self.pending & pending_d & Mux(
                    self.desc.valid, self.desc.payload.arrival > self.commit_at, late)
                take = self.desc.valid
                if p.bod:
                    take = take & ~apply            # a frame after the commit waits for it
                    apply = apply & sched_ok
                with m.If(apply):
                    layout_ok = ((self.commit_flags & COMMIT_LAYOUT).any()
                                 & (admitted == self.freed))
                    if spill:
                        layout_ok &= self.q_spill_empty
                    m.d.comb += [self.apply.eq(1), self.layout_ok.eq(layout_ok)]
                    with m.If(self.staged.rate_den != cfg.rate_den):
                        m.d.sync += [vi.eq(vi + (vf != 0)), vf.eq(0)]
                    with m.If((self.commit_flags & COMMIT_RESEED).any()):
                        m.d.comb += prng.load.eq(1)
                        if p.jitter or p.corrupt or p.duplicate:
                            m.d.comb += self.reseed.eq(1)
                        m.d.sync += [g.eq(0) for g in ge_bad_t]
                    with m.If(layout_ok):
                        m.d.sync += [w.eq(0) for w in wr_off_t]
                with m.Elif(take):
                    m.d.comb += [self.desc.ready.eq(1), st.start.eq(1),
                                 st.m.eq(self.desc.payload.length + cfg.overhead)]
                    m.d.sync += cur.eq(self.desc.payload)
                    with m.If(~self.clear):
                        m.d.sync += [self.rx_frames.eq(self.rx_frames + 1),
                                     self.rx_bytes.eq(self.rx_bytes + self.desc.payload.length)]
                    m.next = "POP"
                with m.Else():
                    pop_if_before(self.now - DESC_LATENCY)

            with m.State("POP"):
                if p.terminals:
                    m.d.sync += who.eq(Mux(separate & cur.known, cur.terminal[:tbits], 0))
                ready = ~pop_if_before(cur.arrival) & (~bod | (self.sched_done > cur.arrival))
                if outside:
                    ready &= ~self.q_waiting
                with m.If(ready):
                    m.next = "CLASSIFY"

            with m.State("CLASSIFY"):
                m.d.sync += [dec.keep.eq(0), dec.bod.eq(0), dec.stored.eq(cur.stored),
                             dec.length.eq(cur.length), cor_drawn.eq(0), dec.mark.eq(0),
                             dec.ecn.eq(cur.ecn)]
                if p.duplicate:
                    # A frame that passes the checks below the loss draws its duplication.
                    passes = ~((cur.length < cfg.min_len) | (cur.length > cfg.max_len) | cur.err
                               | unclassified)
                    draw = passes & ~copy & (cfg.dup_p != 0)
                    m.d.comb += self.dup_draw.eq(draw)
                    m.d.sync += dup_drawn.eq(draw)
                with m.If(cur.length < cfg.min_len):
                    m.d.comb += drop["drop_runt"].eq(1)
                    m.next = "EMIT"
                with m.Elif(cur.length > cfg.max_len):
                    m.d.comb += drop["drop_oversize"].eq(1)
                    m.next = "EMIT"
                with m.Elif(cur.err):
                    m.d.comb += drop["drop_error"].eq(1)
                    m.next = "EMIT"
                with m.Elif(unclassified):
                    m.d.comb += drop["drop_unclassified"].eq(1)
                    m.next = "EMIT"
                with m.Elif(own["loss_mode"] == LOSS_BERNOULLI):
                    m.d.comb += prng.next.eq(1)
                    with m.If(prng.out < own["loss_p"]):
                        m.d.comb += drop["drop_loss"].eq(1)
                        m.next = "EMIT"
                    with m.Else():
                        m.next = "CHECK"
                with m.Elif(own["loss_mode"] == LOSS_GILBERT_ELLIOTT):
                    m.d.comb += prng.next.eq(1)
                    m.d.sync += lost.eq(prng.out < Mux(ge_bad, own["ge_loss_bad"],
                                                       own["ge_loss_good"]))
                    m.next = "GE_STEP"
                with m.Else():
                    m.next = "CHECK"

            with m.State("GE_STEP"):
                m.d.comb += prng.next.eq(1)
                with m.If(ge_bad):
                    with m.If(prng.out < own["ge_r"]):
                        set_at(ge_bad_t, who, 0)
                with m.Else():
                    with m.If(prng.out < own["ge_p"]):
                        set_at(ge_bad_t, who, 1)
                with m.If(lost):
                    m.d.comb += drop["drop_loss"].eq(1)
                    m.next = "EMIT"
                with m.Else():
                    m.next = "CHECK"

            with m.State("CHECK"):
                cap = Mux(bod, p.queue_cap(True), p.queue_cap(False))
                m.d.sync += q_seen.eq(own_frames)
                if p.terminals:
                    cap = Mux(separate, p.queue_cap(True) >> share_bits(n_framed), cap)
                with m.If((own_frames >= own["queue_frames"]) | (own_frames >= cap)
                          | (own_bytes + cur.length > own["queue_bytes"])):
                    m.d.comb += drop["drop_queue"].eq(1)
                    m.next = "EMIT"
                with m.Elif(mem_used + words > share):
                    m.d.comb += drop["drop_mem"].eq(1)
                    m.next = "EMIT"
                with m.Elif(bod):
                    m.next = "QUEUE"
                with m.Else():
                    m.next = "SHAPE"

            with m.State("QUEUE"):
                # BoD: into the queue and the delay-line region now; the slot scheduler sets the
                # departure and egress cycles later.
                admit(bod=True)
                m.next = "EMIT"

            with m.State("SHAPE"):
                # V := max(arrival, V) + (length + overhead) x (q + num/den), exactly; in two
                # steps (the start, then the sum) for short paths at the board's clock.
                with m.If(~st.busy):
                    if p.jitter:
                        # The frame's jitter, ready in DEPART (two cycles on).
                        m.d.comb += self.jit_draw.eq(cfg.jit_sigma != 0)
                    idle = (cur.arrival > vi) | ((cur.arrival == vi) & (vf == 0))
                    m.d.sync += [shape_i.eq(Mux(idle, cur.arrival, vi)),
                                 shape_f.eq(Mux(idle, 0, vf) + st.tf)]
                    m.next = "SHAPE_SUM"

            with m.State("SHAPE_SUM"):
                carry = shape_f >= cfg.rate_den
                m.d.sync += [
                    vi.eq(shape_i + st.ti + carry),
                    vf.eq(Mux(carry, shape_f - cfg.rate_den, shape_f)),
                ]
                m.next = "DEPART"

            with m.State("DEPART"):
                if p.jitter:
                    # delay + J, never below the latency floor (J may be negative).
                    latency = Signal(signed(42))
                    m.d.comb += latency.eq(cfg.delay + Mux(cfg.jit_sigma != 0, self.jit_offset,
                                                           0))
                    wait = Mux(latency > p.latency_floor, latency, p.latency_floor)[:41]
                else:
                    wait = Mux(cfg.delay > p.latency_floor, cfg.delay, p.latency_floor)
                m.d.sync += [
                    departure.eq(vi + (vf != 0)),
                    release.eq(vi + (vf != 0) + wait),
                ]
                after = "PACE" if p.mem_pace else "SCHEDULE"
                if p.mem_pace:
                    m.d.sync += pace_next.eq(pace_free + words * p.mem_pace)
                if outside:
                    # SCHEDULE pushes: wait here for room (which nothing else can take away).
                    with m.If(self.q_push.ready):
                        m.next = after
                else:
                    m.next = after

            if p.mem_pace:
                with m.State("PACE"):
                    m.d.sync += release.eq(Mux(pace_next > release, pace_next, release))
                    m.next = "SCHEDULE"

            with m.State("SCHEDULE"):
                egress = Mux(release > egress_free, release, egress_free)
                m.d.comb += [entry.departure.eq(departure[:48]), entry.length.eq(cur.length),
                             entry.terminal.eq(who), push.eq(1)]
                if p.mem_pace:
                    m.d.sync += pace_free.eq(release)
                m.d.sync += [egress_free.eq(egress + port_cycles(p, cur.length)),
                             dec.egress.eq(egress[:48])]
                admit(bod=False)
                if p.ecn:
                    # ECN marking: an ECN-capable frame whose time in the bottleneck, or the
                    # queue it found, reaches the step.
                    sojourn = Signal(64)
                    m.d.comb += sojourn.eq(departure - cur.arrival)
                    overdue = (cfg.ecn_sojourn != 0) & (sojourn >= cfg.ecn_sojourn)
                    crowded = (cfg.ecn_queue != 0) & (q_seen >= cfg.ecn_queue)
                    m.d.sync += dec.mark.eq((cur.ecn != 0) & (overdue | crowded))
                m.next = "EMIT"

            with m.State("EMIT"):
                m.d.comb += self.decision.valid.eq(1)
                flip = dec.keep & cor_drawn & (self.cor_flip if p.corrupt else 0)
                if p.corrupt:
                    m.d.comb += [self.decision.payload.flip.eq(flip),
                                 self.decision.payload.flip_bit.eq(self.cor_bit)]
                dup = dup_drawn & self.dup_hit if p.duplicate else Const(0, 1)
                if p.duplicate:
                    m.d.comb += [self.decision.payload.dup.eq(dup),
                                 self.decision.payload.copy.eq(copy)]
                with m.If(self.decision.ready):
                    m.d.comb += [self.fate_valid.eq(1), self.bod_push.valid.eq(dec.keep & dec.bod)]
                    with m.If(flip & ~self.clear):
                        m.d.sync += self.corrupted.eq(self.corrupted + 1)
                    with m.If(dec.mark & ~self.clear):
                        m.d.sync += self.ce_marked.eq(self.ce_marked + 1)
                    # A copied frame's copy follows it: the same descriptor, decided again.
                    m.d.sync += copy.eq(dup)
                    with m.If(dup):
                        with m.If(~self.clear):
                            m.d.sync += self.duplicated.eq(self.duplicated + 1)
                        m.next = "POP"
                    with m.Else():
                        m.next = "IDLE"

        idle_horizon = Mux(self.now >= DESC_LATENCY, self.now - DESC_LATENCY, 0)
        m.d.comb += self.horizon.eq(Mux(fsm.ongoing("IDLE"),
                                        Mux(self.desc.valid, self.desc.payload.arrival,
                                            idle_horizon),
                                        cur.arrival))
        with m.If(self.clear):    # after the FSM, so a clear wins over a same-cycle update
            m.d.sync += [self.queue_frames_hwm.eq(0), self.queue_bytes_hwm.eq(0),
                         self.mem_words_hwm.eq(0), self.corrupted.eq(0),
                         self.duplicated.eq(0), self.ce_marked.eq(0)]
        return m
