# SPDX-License-Identifier: BSD-2-Clause
"""The channel's terminal table: each terminal's settings, shadowed, staged and applied with the
profile (satemu.base.terminals, docs/bod.md "Terminals")."""

from amaranth import Module, Signal, Mux, Const, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import TERM_OFFSETS, TERM_WORDS
from satemu.base.terminals import TERMINAL_FIELDS

# What the admission engine and the classifier use of a terminal with frames: held in
# flip-flops (shadow, staged, active), read at once.
FRAME_FIELDS = ("key", "flags", "queue_frames", "queue_bytes", "loss_mode", "loss_p", "ge_p",
                "ge_r", "ge_loss_good", "ge_loss_bad")
# What the BoD allocator uses of every terminal: a row of a memory, a 32-bit lane a field.
POOL_FIELDS = ("flags", "cra", "rbdc_max", "rbdc_timeout", "vbdc_max", "req_period",
               "demand_kind", "demand_rate", "demand_on", "demand_off", "demand_first",
               "demand_count")
WIDTH = {name: width for name, width, _ in TERMINAL_FIELDS}
FrameCfg = data.StructLayout({name: WIDTH[name] for name in FRAME_FIELDS})
PoolCfg = data.StructLayout({name: 32 for name in POOL_FIELDS})
Level = data.StructLayout({"rate": 32, "length": 32})
BANKS = 4                   # banks of the memories: shadow, staged, active and the next shadow


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


class TermTable(wiring.Component):
    """Bus writes (``w_*``, the terminal window's word ``w_word`` of terminal ``w_sel``; ``l_*``,
    the level table's entry ``l_sel``) land in the shadow table. ``commit`` (the COMMIT the
    registers accept) copies the whole shadow into the staged table at once and ``apply`` (when
    the channel applies the staged profile) the staged table into the active one, as the
    registers do with the profile.

    The terminals with frames (``params.terminals``) keep what the engine and the classifier use
    in flip-flops (``frame``: the active table). Every terminal's BoD settings, and the level
    table, are rows of memories in banks (``row``/``level``: the active bank's row
    ``row_addr``/``level_addr``, the cycle after): a commit makes the shadow bank the staged one
    and a free bank the shadow, and copies the staged rows into it, a row a cycle;
    ``copying`` is high meanwhile, and writes of the window are lost then (the firmware waits
    for STATUS_COPYING to fall before it writes a terminal field or commits)."""

    def __init__(self, params):
        self.params = params
        self.framed = params.terminals
        self.total = params.terminals + params.synthetic
        self.levels = max(params.demand_levels, 1)
        super().__init__({
            "w_en": In(1), "w_word": In(range(TERM_WORDS)), "w_sel": In(8), "w_data": In(32),
            "l_en": In(1), "l_word": In(1), "l_sel": In(16), "l_data": In(32),
            "commit": In(1),
            "apply": In(1),
            "copying": Out(1),
            "frame": Out(data.ArrayLayout(FrameCfg, self.framed)),
            "row_addr": In(range(self.total)),
            "row": Out(PoolCfg),
            "level_addr": In(range(self.levels)),
            "level": Out(Level),
        })

    def elaborate(self, platform):
        m = Module()
        n_f, n_t, n_l = self.framed, self.total, self.levels
        rows, lvls = _pow2(n_t), _pow2(n_l)

        # ---- terminals with frames: flip-flops --------------------------------------------
        shadow = Signal(data.ArrayLayout(FrameCfg, n_f))
        staged = Signal(data.ArrayLayout(FrameCfg, n_f))
        for i in range(n_f):
            with m.If(self.w_en & (self.w_sel == i)):
                for name in FRAME_FIELDS:
                    field = shadow[i][name]
                    base = TERM_OFFSETS[name]
                    for k in range((WIDTH[name] + 31) // 32):
                        with m.If(self.w_word == base + k):
                            hi = min(32 * (k + 1), WIDTH[name])
                            m.d.sync += Value.cast(field)[32 * k:hi].eq(
                                self.w_data[:hi - 32 * k])
        with m.If(self.commit):
            m.d.sync += staged.eq(shadow)
        with m.If(self.apply):
            m.d.sync += self.frame.eq(staged)

        # ---- every terminal's BoD settings, and the levels: banked memories -------------------
        m.submodules.pool = pool = Memory(shape=unsigned(PoolCfg.size), depth=BANKS * rows,
                                          init=[])
        m.submodules.lvl = lvl = Memory(shape=unsigned(Level.size), depth=BANKS * lvls, init=[])
        p_rd, p_cp = pool.read_port(), pool.read_port()
        p_wr = pool.write_port(granularity=32)
        l_rd, l_cp = lvl.read_port(), lvl.read_port()
        l_wr = lvl.write_port(granularity=32)
        bank_bits = (BANKS - 1).bit_length()
        active_b = Signal(bank_bits, init=0)
        staged_b = Signal(bank_bits, init=0)
        shadow_b = Signal(bank_bits, init=1)
        m.d.comb += [
            p_rd.addr.eq(active_b * rows + self.row_addr), self.row.eq(p_rd.data),
            l_rd.addr.eq(active_b * lvls + self.level_addr), self.level.eq(l_rd.data),
        ]
        with m.If(self.apply):
            m.d.sync += active_b.eq(staged_b)

        # The copy into a fresh shadow bank: a row a cycle, read then written.
        step = Signal(range(max(rows, lvls) + 1))
        src = Signal(bank_bits)
        copy_w = Signal()           # the row read last cycle goes to the new shadow now
        copy_at = Signal(range(max(rows, lvls)))
        m.d.comb += [p_cp.addr.eq(src * rows + step[:len(Const(rows - 1))]),
                     l_cp.addr.eq(src * lvls + step[:len(Const(lvls - 1))])]
        with m.If(self.commit & ~self.copying):
            # The free bank: neither the one in force nor the one just staged.
            free = Signal(bank_bits)
            for b in reversed(range(BANKS)):
                with m.If((active_b != b) & (shadow_b != b)):
                    m.d.comb += free.eq(b)
            m.d.sync += [staged_b.eq(shadow_b), shadow_b.eq(free), src.eq(shadow_b),
                         step.eq(0), self.copying.eq(1)]
        with m.Elif(self.copying):
            m.d.sync += [copy_w.eq(1), copy_at.eq(step), step.eq(step + 1)]
            with m.If(step == max(rows, lvls)):
                m.d.sync += [self.copying.eq(0), copy_w.eq(0)]
        with m.Else():
            m.d.sync += copy_w.eq(0)

        with m.If(copy_w):
            m.d.comb += [p_wr.addr.eq(shadow_b * rows + copy_at[:len(Const(rows - 1))]),
                         p_wr.data.eq(p_cp.data),
                         p_wr.en.eq(Mux(copy_at < rows, (1 << len(POOL_FIELDS)) - 1, 0)),
                         l_wr.addr.eq(shadow_b * lvls + copy_at[:len(Const(lvls - 1))]),
                         l_wr.data.eq(l_cp.data),
                         l_wr.en.eq(Mux(copy_at < lvls, 0b11, 0))]
        with m.Elif(~self.copying):
            m.d.comb += [p_wr.addr.eq(shadow_b * rows + self.w_sel),
                         p_wr.data.eq(self.w_data.replicate(len(POOL_FIELDS))),
                         l_wr.addr.eq(shadow_b * lvls + self.l_sel),
                         l_wr.data.eq(self.l_data.replicate(2))]
            for lane, name in enumerate(POOL_FIELDS):
                with m.If(self.w_en & (self.w_word == TERM_OFFSETS[name]) & (self.w_sel < n_t)):
                    m.d.comb += p_wr.en[lane].eq(1)
            with m.If(self.l_en & (self.l_sel < n_l)):
                m.d.comb += l_wr.en.eq(Mux(self.l_word, 0b10, 0b01))
        return m
