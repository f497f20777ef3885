# SPDX-License-Identifier: BSD-2-Clause
"""One direction of the link: loss, bottleneck queue, rate shaper and a delay line in memory."""

from amaranth import Module, ResetInserter
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.params import ChannelParams

from .layouts import Beat, MemPortSignature, RegBusSignature
from .ingress import Ingress
from .admission import Admission, ENGINE_COUNTERS, ENGINE_GAUGES
from .writer import Writer
from .reader import Reader
from .egress import Egress, EGRESS_COUNTERS
from .memarb import MemArbiter
from .depqueue import DepartureQueue
from .depdelta import DeltaQueue
from .regs import Regs
from .bod_slots import SlotScheduler
from .bod_terms import TerminalScheduler
from .termtable import TermTable
from .termstats import TermStats
from .skid import SkidBuffer
from .framelog import FrameLog
from .jitter import Jitter
from .corrupt import Corrupt
from .duplicate import Duplicate
from .layouts import mem_cmd_layout


def channel_ports(params: ChannelParams) -> dict:
    """The channel's ports, as ``wiring`` members (shared with simulation tops)."""
    return {
        "sink": In(stream.Signature(Beat)),
        "source": Out(stream.Signature(Beat)),
        "mem": Out(MemPortSignature(params.addr_width)),
        "bus": In(RegBusSignature),
        "now": In(64),
        # Per-frame fate trace, for benches and on-chip debug: one pulse per frame.
        "fate_valid": Out(1),
        "fate": Out(3),
        "fate_copy": Out(1),        # ... the frame is a copy (duplication)
        # Ingress events, one per frame: taken (its last beat's cycle is its arrival), or
        # discarded for want of room (only when fed by a MAC: ``mac_fed``).
        "arrived": Out(1),
        "overrun": Out(1),
    }


class Channel(wiring.Component):
    """Frames enter on ``sink`` and leave on ``source`` (64-bit beats); ``mem`` is a
    LiteDRAM-native-shaped port to the delay-line region; ``bus`` holds the registers of
    ``satemu.base.regmap``; ``now`` is the shared timebase. The timing contract is the one of
    ``satemu.model.channel.simulate`` and docs/architecture.md.
    """

    def __init__(self, params: ChannelParams = ChannelParams(), mac_fed: bool = False):
        self.params = params
        self.mac_fed = mac_fed      # fed by a MAC, which cannot wait (see Ingress)
        super().__init__(channel_ports(params))

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.regs = regs = Regs(p)
        m.submodules.ingress = ingress = Ingress(p, mac_fed=self.mac_fed)
        m.submodules.admission = adm = Admission(p)
        m.submodules.writer = writer = Writer(p)
        m.submodules.reader = reader = Reader(p)
        m.submodules.egress = egress = Egress(p)
        spill = bool(p.spill_words)
        m.submodules.arbiter = arb = MemArbiter(p.addr_width, spill=spill)
        # Commands reach the memory through a skid buffer: the DRAM controller's ready (which
        # may depend on its valid) never runs combinationally into the channel's logic.
        m.submodules.cmd_buffer = cmd_buffer = SkidBuffer(mem_cmd_layout(p.addr_width))
        if p.terminals:
            # The terminals (docs/bod.md, "Terminals"): their table, shadowed and applied with
            # the profile, and their counters.
            m.submodules.termtable = tt = TermTable(p)
            m.submodules.termstats = ts = TermStats(p)
            m.d.comb += [
                tt.w_en.eq(regs.t_w_en), tt.w_word.eq(regs.t_w_word), tt.w_sel.eq(regs.t_w_sel),
                tt.w_data.eq(regs.t_w_data), tt.l_en.eq(regs.l_en), tt.l_word.eq(regs.l_word),
                tt.l_sel.eq(regs.l_sel), tt.l_data.eq(regs.l_data), tt.commit.eq(regs.t_commit),
                tt.apply.eq(adm.apply), regs.copying.eq(tt.copying),
                ingress.cfg.eq(regs.active), adm.frame.eq(tt.frame),
                *[ingress.keys[i].eq(tt.frame[i].key) for i in range(p.terminals)],
                ingress.freed_t.eq(egress.freed_t),
                ts.fate_valid.eq(adm.fate_valid), ts.fate.eq(adm.fate),
                ts.fate_terminal.eq(adm.fate_terminal), ts.fate_length.eq(adm.fate_length),
                ts.started.eq(egress.started), ts.start_terminal.eq(egress.start_terminal),
                ts.start_length.eq(egress.start_length), ts.start_late.eq(egress.start_late),
                ts.clear.eq(regs.clear), ts.sel.eq(regs.tstat_sel), regs.tstat.eq(ts.value),
            ]
            wiring.connect(m, writer.spans, reader.spans)
        if p.bod:
            sched = TerminalScheduler(p) if p.terminals else SlotScheduler(p)
            m.submodules.bod = ResetInserter(regs.bod_restart)(sched)
            if p.terminals:
                m.d.comb += [tt.row_addr.eq(sched.row_addr), sched.row.eq(tt.row),
                             tt.level_addr.eq(sched.level_addr), sched.level.eq(tt.level)]
            wiring.connect(m, adm.bod_push, sched.push)
            wiring.connect(m, sched.release, adm.released)
            wiring.connect(m, sched.hdr, writer.hdr)
            m.d.comb += [
                sched.cfg.eq(regs.active), sched.horizon.eq(adm.horizon),
                sched.hold.eq(regs.pending), sched.hold_at.eq(regs.commit_at),
                sched.start_at.eq(regs.bod_start), adm.sched_done.eq(sched.done_upto),
                sched.ring_sel.eq(regs.bod_sel), regs.bod_rec.eq(sched.ring_data),
                regs.bod_count.eq(sched.count),
            ]

        if p.jitter:
            m.submodules.jitter = jit = Jitter()
            m.d.comb += [
                jit.sigma.eq(regs.active.jit_sigma), jit.corr.eq(regs.active.jit_corr),
                jit.bank.eq(regs.active.jit_bank), jit.seed.eq(regs.staged.seed),
                jit.load.eq(adm.reseed), jit.draw.eq(adm.jit_draw),
                adm.jit_offset.eq(jit.offset),
                jit.w_en.eq(regs.j_w_en), jit.w_addr.eq(regs.j_w_addr),
                jit.w_data.eq(regs.j_w_data),
            ]

        if p.corrupt:
            m.submodules.corrupt = cor = Corrupt()
            m.d.comb += [
                cor.p.eq(regs.active.cor_p), cor.corr.eq(regs.active.cor_corr),
                cor.seed.eq(regs.staged.seed), cor.load.eq(adm.reseed),
                cor.draw.eq(adm.cor_draw), cor.length.eq(adm.cor_length),
                adm.cor_flip.eq(cor.flip), adm.cor_bit.eq(cor.bit),
            ]

        if p.duplicate:
            m.submodules.duplicate = dup = Duplicate()
            m.d.comb += [
                dup.p.eq(regs.active.dup_p), dup.corr.eq(regs.active.dup_corr),
                dup.seed.eq(regs.staged.seed), dup.load.eq(adm.reseed),
                dup.draw.eq(adm.dup_draw), adm.dup_hit.eq(dup.hit),
            ]

        if p.frame_log:
            m.submodules.framelog = log = FrameLog(p)
            wiring.connect(m, log.write, writer.log)
            m.d.comb += [
                log.decided.valid.eq(adm.fate_valid),
                log.decided.payload.arrival.eq(adm.fate_arrival),
                log.decided.payload.length.eq(adm.fate_length),
                log.decided.payload.fate.eq(adm.fate),
                log.decided.payload.terminal.eq(adm.fate_terminal),
                log.sent.valid.eq(egress.started),
                log.sent.payload.start.eq(self.now[:48]),
                log.sent.payload.length.eq(egress.start_length),
                log.sent.payload.late.eq(egress.start_late),
                *([log.sent.payload.terminal.eq(egress.start_terminal)] if p.terminals else []),
                log.done.eq(writer.log_done), writer.log_urgent.eq(log.urgent),
                log.base.eq(regs.log_base), log.bits.eq(regs.log_bits),
                log.clear.eq(regs.log_clear),
                regs.log_count.eq(log.count), regs.log_lost.eq(log.lost),
            ]

        if p.delta_coded or spill:
            # The departure times outside the engine: a deep queue's on chip, as distances, or
            # those past the chip's depth in a ring just past the region.
            m.submodules.depqueue = dq = DeltaQueue(p) if p.delta_coded else DepartureQueue(p)
            wiring.connect(m, adm.q_push, dq.push)
            wiring.connect(m, dq.head, adm.q_head)
            m.d.comb += adm.q_waiting.eq(dq.waiting)

        if spill:
            wiring.connect(m, dq.wr, writer.spill)
            wiring.connect(m, dq.rd, arb.sp)
            wiring.connect(m, arb.sp_data, dq.rdata)
            wiring.connect(m, arb.rd_data, reader.rdata)
            m.d.comb += [
                adm.q_spill_empty.eq(dq.spill_empty),
                dq.wr_done.eq(writer.spill_done),
                dq.base.eq(regs.active.mem_base + regs.active.mem_size),
                arb.rdata.valid.eq(self.mem.rdata.valid),
                arb.rdata.payload.eq(self.mem.rdata.payload),
                self.mem.rdata.ready.eq(arb.rdata.ready),
            ]

        wiring.connect(m, wiring.flipped(self.bus), regs.bus)
        wiring.connect(m, wiring.flipped(self.sink), ingress.sink)
        wiring.connect(m, ingress.desc, adm.desc)
        wiring.connect(m, adm.decision, writer.decision)
        wiring.connect(m, ingress.beats, writer.beats)
        wiring.connect(m, writer.cmd, arb.wr)
        wiring.connect(m, reader.cmd, arb.rd)
        wiring.connect(m, arb.cmd, cmd_buffer.sink)
        wiring.connect(m, reader.data, egress.data)
        wiring.connect(m, reader.desc, egress.desc)
        wiring.connect(m, egress.source, wiring.flipped(self.source))
        m.d.comb += [
            self.mem.cmd.valid.eq(cmd_buffer.source.valid),
            self.mem.cmd.payload.eq(cmd_buffer.source.payload),
            cmd_buffer.source.ready.eq(self.mem.cmd.ready),
            self.mem.wdata.valid.eq(writer.wdata.valid),
            self.mem.wdata.payload.eq(writer.wdata.payload),
            writer.wdata.ready.eq(self.mem.wdata.ready),
            *([] if spill else [
                reader.rdata.valid.eq(self.mem.rdata.valid),
                reader.rdata.payload.eq(self.mem.rdata.payload),
                self.mem.rdata.ready.eq(reader.rdata.ready),
            ]),

            ingress.now.eq(self.now), adm.now.eq(self.now), egress.now.eq(self.now),
            regs.now.eq(self.now),
            ingress.freed.eq(egress.freed), adm.freed.eq(egress.freed),
            reader.written.eq(writer.written),
            adm.cfg.eq(regs.active), writer.cfg.eq(regs.active), reader.cfg.eq(regs.active),
            adm.staged.eq(regs.staged), adm.pending.eq(regs.pending),
            adm.commit_at.eq(regs.commit_at), adm.commit_flags.eq(regs.commit_flags),
            regs.apply.eq(adm.apply), regs.layout_ok.eq(adm.layout_ok), regs.empty.eq(adm.empty),
            reader.layout_reset.eq(adm.apply & adm.layout_ok),
            adm.clear.eq(regs.clear), egress.clear.eq(regs.clear), ingress.clear.eq(regs.clear),
            self.fate_valid.eq(adm.fate_valid), self.fate.eq(adm.fate),
            self.fate_copy.eq(adm.fate_copy),
            regs.duplicated.eq(adm.duplicated[:self.params.counter_bits]),
            regs.ce_marked.eq(adm.ce_marked[:self.params.counter_bits]),
            self.arrived.eq(ingress.arrived), self.overrun.eq(ingress.overrun),
            regs.drop_overrun.eq(ingress.drop_overrun[:self.params.counter_bits]),
            regs.corrupted.eq(adm.corrupted[:self.params.counter_bits]),
        ]
        # The statistics counters reach the registers at ``counter_bits`` (narrower ones count
        # modulo 2**bits; synthesis drops the unused upper bits of their adders), the gauges whole.
        bits = self.params.counter_bits
        for name in ENGINE_COUNTERS:
            m.d.comb += getattr(regs, name).eq(getattr(adm, name)[:bits])
        for name in ENGINE_GAUGES:
            m.d.comb += getattr(regs, name).eq(getattr(adm, name))
        for name in EGRESS_COUNTERS:
            m.d.comb += getattr(regs, name).eq(getattr(egress, name)[:bits])
        return m
