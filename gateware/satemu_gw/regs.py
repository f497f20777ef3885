# SPDX-License-Identifier: BSD-2-Clause
"""Channel register file: shadow, staged and active profiles, controls and a stats snapshot."""

from dataclasses import asdict

from amaranth import Module, Signal, Value, Cat, Mux, Const
from amaranth.hdl import Array
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.params import ChannelRegs
from satemu.base.regmap import (TERM_WINDOW, TERM_WORDS, CFG_FIELDS, COUNTERS, GAUGES, REGMAP, COMMIT_APPLY, COMMIT_LAYOUT,
    COMMIT_AT, STATS_SNAPSHOT, STATS_CLEAR, BOD_RECORD_WORDS, LAYOUT_FIELDS, LOG_CLEAR)

from .layouts import Config, RegBusSignature

STAT_INPUTS = COUNTERS + [g for g in GAUGES if g != "snapshot_cycle"]


class Regs(wiring.Component):
    """Bus writes land in the shadow profile. A COMMIT with APPLY copies the whole shadow into the
    staged copy at once (refused while one is still pending); the channel then copies staged to
    active at a well-defined point (``apply``). Reads of counters come from the last snapshot.

    The commit's cycle (``commit_at``) is the write's, or with AT the cycle in ``commit_cycle``
    if that is later (a commit named ahead: a timeline step); an AT cycle already past takes the
    write's and sets STATUS's late bit.

    The memory region and the BoD fields change only with an accepted layout commit; the cycle
    after one, ``bod_restart`` restarts the BoD block with superframe 0 at ``bod_start`` (the
    cycle after the commit strobe).

    With the frame log (``params.frame_log``), ``log_base`` and ``log_ctl``'s ring bits are held
    as written and ``log_clear`` strobes with LOG_CLEAR; ``log_count`` and ``log_lost`` read as
    they are. Without it they read 0.
    """

    def __init__(self, params):
        self.params = params
        self.reset = asdict(ChannelRegs(queue_frames=params.queue_depth))
        super().__init__({
            "bus": In(RegBusSignature),
            "now": In(64),
            "active": Out(Config, init=self.reset),
            "staged": Out(Config, init=self.reset),
            "pending": Out(1),
            "commit_at": Out(64),
            "commit_flags": Out(3),
            "apply": In(1),
            "layout_ok": In(1),
            "empty": In(1),
            "clear": Out(1),
            "bod_restart": Out(1),
            "bod_start": Out(64),
            "bod_sel": Out(32),
            "bod_count": In(32),
            "bod_rec": In(32 * BOD_RECORD_WORDS),
            **{name: In(64) for name in STAT_INPUTS},
            **({"log_base": Out(32), "log_bits": Out(5), "log_clear": Out(1),
                "log_count": In(64), "log_lost": In(32)} if params.frame_log else {}),
            # The terminal table's window (satemu_gw.termtable) and the terminal counters'
            # (satemu_gw.termstats), with terminals.
            **({"t_w_en": Out(1), "t_w_word": Out(range(TERM_WORDS)), "t_w_sel": Out(8),
                "t_w_data": Out(32), "l_en": Out(1), "l_word": Out(1), "l_sel": Out(16),
                "l_data": Out(32), "t_commit": Out(1), "copying": In(1), "tstat_sel": Out(16),
                "tstat": In(64)} if params.terminals else {}),
            # The jitter table's writes (satemu_gw.jitter), with jitter.
            **({"j_w_en": Out(1), "j_w_addr": Out(REGMAP["jit_sel"].width),
                "j_w_data": Out(16)} if params.jitter else {}),
        })

    def elaborate(self, platform):
        m = Module()
        shadow = Signal(Config, init=self.reset)
        bus = self.bus
        layout_rejected = Signal()
        refused = Signal()
        late = Signal()
        commit_cycle = Signal(64)
        # The snapshot has no reset (a reset leaves the last one readable until the next
        # SNAPSHOT): with a synchronous reset over the capture enable, yosys spent about 800
        # LUTs a channel on its 1,216 flip-flops.
        snap = {name: Signal(64, name=f"snap_{name}", reset_less=True)
                for name in STAT_INPUTS + ["snapshot_cycle"]}

        # Writes.
        for f in CFG_FIELDS:
            field = Value.cast(getattr(shadow, f.name))
            for k in range(f.words):
                with m.If(bus.w_en & (bus.addr == f.offset + k)):
                    hi = min(32 * (k + 1), f.width)
                    m.d.sync += field[32 * k:hi].eq(bus.w_data[:hi - 32 * k])
        cycle_reg = REGMAP["commit_cycle"].offset
        for k in range(2):
            with m.If(bus.w_en & (bus.addr == cycle_reg + k)):
                m.d.sync += commit_cycle[32 * k:32 * (k + 1)].eq(bus.w_data)
        commit_reg = REGMAP["commit"].offset
        copying = self.copying if self.params.terminals else Const(0, 1)
        with m.If(bus.w_en & (bus.addr == commit_reg) & (bus.w_data & COMMIT_APPLY).any()):
            with m.If(self.pending | copying):
                m.d.sync += refused.eq(1)
            with m.Else():
                if self.params.terminals:
                    m.d.comb += self.t_commit.eq(1)
                at = (bus.w_data & COMMIT_AT).any()
                ahead = at & (commit_cycle > self.now)
                m.d.sync += [self.staged.eq(shadow), self.pending.eq(1), refused.eq(0),
                             self.commit_at.eq(Mux(ahead, commit_cycle, self.now)),
                             late.eq(at & (commit_cycle < self.now)),
                             self.commit_flags.eq(bus.w_data[:3])]
        stats_w = bus.w_en & (bus.addr == REGMAP["stats"].offset)
        with m.If(stats_w & (bus.w_data & STATS_SNAPSHOT).any()):
            m.d.sync += [snap[n].eq(getattr(self, n)) for n in STAT_INPUTS]
            m.d.sync += snap["snapshot_cycle"].eq(self.now)
        m.d.comb += self.clear.eq(stats_w & (bus.w_data & STATS_CLEAR).any())
        # bod_sel reaches the ring's (registered) read port in the cycle it is written, so a read
        # of bod_rec in the very next cycle already sees the selected record.
        sel = Signal(32)
        sel_w = bus.w_en & (bus.addr == REGMAP["bod_sel"].offset)
        with m.If(sel_w):
            m.d.sync += sel.eq(bus.w_data)
        m.d.comb += self.bod_sel.eq(Mux(sel_w, bus.w_data, sel))
        m.d.comb += self.bod_start.eq(self.commit_at + 1)
        m.d.sync += self.bod_restart.eq(self.apply & self.layout_ok)

        # The channel applies the staged profile.
        with m.If(self.apply):
            m.d.sync += [self.pending.eq(0),
                         layout_rejected.eq((self.commit_flags & COMMIT_LAYOUT).any()
                                            & ~self.layout_ok)]
            for f in CFG_FIELDS:
                if f.name in LAYOUT_FIELDS:
                    with m.If(self.layout_ok):
                        m.d.sync += getattr(self.active, f.name).eq(getattr(self.staged, f.name))
                else:
                    m.d.sync += getattr(self.active, f.name).eq(getattr(self.staged, f.name))

        # Reads, one cycle after the address.
        # The profile's words come from a copy of the shadow in a small memory, written with it
        # (each word masked to its field's width) and refilled with the reset values after a
        # reset; the snapshot's 64-bit counters (consecutive in the map) through one multiplexer
        # indexed by counter, then the half; a case per word for the rest. One case per word for
        # every register took twice the LUTs (about 9,000 cells a channel).
        cfg_words = sum(f.words for f in CFG_FIELDS)
        init, mask = [], []
        for f in CFG_FIELDS:
            assert f.offset == len(init)
            value = self.reset[f.name]
            for k in range(f.words):
                mask.append((1 << min(32, f.width - 32 * k)) - 1)
                init.append((value >> (32 * k)) & mask[-1])
        m.submodules.readback = readback = Memory(shape=32, depth=cfg_words, init=init)
        rb_wr = readback.write_port()
        rb_rd = readback.read_port(transparent_for=())
        refill = Signal(range(cfg_words + 1))             # next word to refill
        unwritten = Signal(cfg_words, init=(1 << cfg_words) - 1)   # not written since reset
        word_mask = Signal(32)
        word_init = Signal(32)
        bus_cfg_w = bus.w_en & (bus.addr < cfg_words)
        with m.Switch(Mux(bus_cfg_w, bus.addr, refill)):
            for a in range(cfg_words):
                with m.Case(a):
                    m.d.comb += [word_mask.eq(mask[a]), word_init.eq(init[a])]
        with m.If(bus_cfg_w):          # a bus write wins; the refill skips that word
            m.d.comb += [rb_wr.addr.eq(bus.addr), rb_wr.data.eq(bus.w_data & word_mask),
                         rb_wr.en.eq(1)]
            m.d.sync += unwritten.bit_select(bus.addr[:len(refill)], 1).eq(0)
        with m.Elif(refill != cfg_words):
            m.d.comb += [rb_wr.addr.eq(refill), rb_wr.data.eq(word_init),
                         rb_wr.en.eq(unwritten.bit_select(refill, 1))]
            m.d.sync += refill.eq(refill + 1)
        from_memory = Signal()
        other = Signal(32)
        m.d.sync += from_memory.eq(bus.addr < cfg_words)
        m.d.comb += [rb_rd.addr.eq(bus.addr), bus.r_data.eq(Mux(from_memory, rb_rd.data, other))]

        words = {}
        words[REGMAP["status"].offset] = Cat(self.pending, layout_rejected, self.empty, refused,
                                             late, copying)
        if self.params.terminals:
            # The terminal window and the level table: written through, into the shadow table.
            sels = {}
            for name in ("term_sel", "level_sel", "tstat_sel"):
                sels[name] = Signal(REGMAP[name].width, name=name)
                with m.If(bus.w_en & (bus.addr == REGMAP[name].offset)):
                    m.d.sync += sels[name].eq(bus.w_data)
                words[REGMAP[name].offset] = sels[name]
            window = bus.w_en & (bus.addr >= TERM_WINDOW) & (bus.addr < TERM_WINDOW + TERM_WORDS)
            m.d.comb += [self.t_w_en.eq(window), self.t_w_word.eq(bus.addr - TERM_WINDOW),
                         self.t_w_sel.eq(sels["term_sel"]), self.t_w_data.eq(bus.w_data),
                         self.l_sel.eq(sels["level_sel"]), self.l_data.eq(bus.w_data),
                         self.tstat_sel.eq(sels["tstat_sel"])]
            for word, name in enumerate(("level_rate", "level_length")):
                with m.If(bus.w_en & (bus.addr == REGMAP[name].offset)):
                    m.d.comb += [self.l_en.eq(1), self.l_word.eq(word)]
            words[REGMAP["tstat"].offset] = self.tstat[:32]
            words[REGMAP["tstat"].offset + 1] = self.tstat[32:]
        if self.params.jitter:
            # jit_val writes the entry jit_sel names, and advances jit_sel.
            jit_sel = Signal(REGMAP["jit_sel"].width)
            jit_val_w = bus.w_en & (bus.addr == REGMAP["jit_val"].offset)
            with m.If(bus.w_en & (bus.addr == REGMAP["jit_sel"].offset)):
                m.d.sync += jit_sel.eq(bus.w_data)
            with m.Elif(jit_val_w):
                m.d.sync += jit_sel.eq(jit_sel + 1)
            m.d.comb += [self.j_w_en.eq(jit_val_w), self.j_w_addr.eq(jit_sel),
                         self.j_w_data.eq(bus.w_data[:16])]
            words[REGMAP["jit_sel"].offset] = jit_sel
        words[REGMAP["bod_count"].offset] = self.bod_count
        bod_start = Signal(64)
        with m.If(self.bod_restart):
            m.d.sync += bod_start.eq(self.bod_start)
        words[REGMAP["bod_start"].offset] = bod_start[:32]
        words[REGMAP["bod_start"].offset + 1] = bod_start[32:]
        for k in range(BOD_RECORD_WORDS):
            words[REGMAP["bod_rec"].offset + k] = self.bod_rec[32 * k:32 * (k + 1)]
        if self.params.frame_log:
            with m.If(bus.w_en & (bus.addr == REGMAP["log_base"].offset)):
                m.d.sync += self.log_base.eq(bus.w_data)
            log_ctl_w = bus.w_en & (bus.addr == REGMAP["log_ctl"].offset)
            with m.If(log_ctl_w):
                m.d.sync += self.log_bits.eq(bus.w_data[:5])
            m.d.comb += self.log_clear.eq(log_ctl_w & (bus.w_data & LOG_CLEAR).any())
            words[REGMAP["log_base"].offset] = self.log_base
            words[REGMAP["log_ctl"].offset] = self.log_bits
            words[REGMAP["log_count"].offset] = self.log_count[:32]
            words[REGMAP["log_count"].offset + 1] = self.log_count[32:]
            words[REGMAP["log_lost"].offset] = self.log_lost
        names = sorted(snap, key=lambda n: REGMAP[n].offset)
        base = REGMAP[names[0]].offset
        assert [REGMAP[n].offset for n in names] == list(range(base, base + 2 * len(names), 2))
        index = Signal(8)
        snap_word = Signal(64)
        m.d.comb += [index.eq(bus.addr - base),
                     snap_word.eq(Array(snap[n] for n in names)[index[1:]])]
        with m.If((bus.addr >= base) & (bus.addr < base + 2 * len(names))):
            m.d.sync += other.eq(Mux(index[0], snap_word[32:], snap_word[:32]))
        with m.Else():
            with m.Switch(bus.addr):
                for addr, value in words.items():
                    with m.Case(addr):
                        m.d.sync += other.eq(value)
                with m.Default():
                    m.d.sync += other.eq(0)
        return m
