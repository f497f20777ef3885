# SPDX-License-Identifier: BSD-2-Clause
"""BoD pool allocator: a superframe's slots shared among the terminals (CRA, background, RBDC,
VBDC, FCA), and each terminal's requests (docs/bod.md, "Terminals")."""

from amaranth import Module, Signal, Mux, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import BOD_BG_LEVELS, BOD_BG_REPEAT, BOD_FCA, BOD_LATENCY_MAX
from satemu.base.terminals import (DEMAND_CONSTANT, DEMAND_LEVELS, DEMAND_ONOFF, TERM_FCA,
    TERM_SYNTHETIC)

from .divider import Divider
from .layouts import Config
from .prng import Prng
from .termtable import Level, PoolCfg

SHARE_BITS = 16       # satemu.model.bod.SHARE_BITS

# A terminal's state across superframes (satemu.model.bod._Terminal); a synthetic terminal's
# backlog and arrivals here, a terminal with frames' in the slot scheduler.
State = data.StructLayout({
    "rbdc_active": 24, "rbdc_left": 16, "vbdc_out": 17, "vbdc_pending": 17, "cra_owed": 32,
    "rbdc_frac": 8, "req_wait": 16, "backlog": 32, "arrived": 32, "demand_frac": 8, "off": 1,
    "level": 16, "level_used": 16,
})
# A terminal's superframe: what it wants of RBDC and VBDC, and its record (regmap.BOD_RECORD
# but ``sf``, ``bg`` and, for a terminal with frames, ``used``).
Scratch = data.StructLayout({
    "want_r": 17, "want_v": 17, "g_cra": 16, "g_rbdc": 16, "g_vbdc": 16, "g_fca": 16,
    "rbdc_req": 24, "vbdc_req": 16, "used": 16, "backlog": 32,
})
# A run of granted slots: the terminal's index and how many.
Run = data.StructLayout({"terminal": 6, "count": 17})


def _min(a, b):
    return Mux(a < b, a, b)


class PoolAllocator(wiring.Component):
    """Runs once per superframe (``start``, with ``k`` and the terminals with frames'
    ``backlog`` and ``arrived`` as of the superframe's first cycle, held while ``busy``); when
    ``busy`` falls:

    * ``runs`` holds the superframe's runs of granted slots, in the turn from terminal k mod T
      (satemu.model.bod: the first ``count`` granted slots are ``terminal``'s, and so on), and
      ``granted`` their sum;
    * ``rec``, the record of terminal ``rec_addr`` (the cycle after), of all but ``sf``, ``bg``
      (``bg``, the superframe's) and, for a terminal with frames, ``used``;
    * ``took`` pulsed, a bit a terminal with frames, where a request consumed its arrivals.

    A terminal's BoD settings come from ``row`` (the terminal table's row ``row_addr``, the cycle
    after), or where the channel has no table (``term_match`` 0) from the channel's own
    ``bod_*`` registers: one terminal with frames. Every piece of state starts at zero: the
    scheduler restarts the block with a reset when the BoD settings change (as ``BodAllocator``),
    and superframe 0 zeroes the memories, which a reset leaves as they are.
    """

    def __init__(self, params):
        self.params = params
        self.framed = max(params.terminals, 1)
        self.total = max(params.terminals + params.synthetic, 1)
        self.levels = max(params.demand_levels, 1)
        super().__init__({
            "cfg": In(Config),
            "start": In(1),
            "k": In(32),
            "backlog": In(data.ArrayLayout(32, self.framed)),
            "arrived": In(data.ArrayLayout(32, self.framed)),
            "busy": Out(1),
            "took": Out(self.framed),
            "row_addr": Out(range(self.total)),
            "row": In(PoolCfg),
            "level_addr": Out(range(self.levels)),
            "level": In(Level),
            "runs": Out(stream.Signature(Run)),
            "granted": Out(17),
            "bg": Out(16),
            "rec_addr": In(range(self.total)),
            "rec": Out(Scratch),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n_t = self.total
        tbits = max((n_t - 1).bit_length(), 1)
        rows = 1 << tbits

        m.submodules.st = st_mem = Memory(shape=State, depth=rows, init=[])
        m.submodules.sc = sc_mem = Memory(shape=Scratch, depth=rows, init=[])
        m.submodules.pipe = pipe = Memory(shape=unsigned(40), depth=BOD_LATENCY_MAX * rows,
                                          init=[])
        m.submodules.pvalid = pvalid = Memory(shape=1, depth=BOD_LATENCY_MAX * rows, init=[])
        st_rd, st_wr = st_mem.read_port(), st_mem.write_port()
        sc_rd, sc_wr = sc_mem.read_port(), sc_mem.write_port()
        sc_out = sc_mem.read_port()
        pipe_rd, pipe_wr = pipe.read_port(), pipe.write_port()
        pv_rd, pv_wr = pvalid.read_port(), pvalid.write_port()
        m.submodules.div = div = Divider(40, 32)
        m.submodules.prng = prng = Prng()
        m.submodules.runq = runq = fifo.SyncFIFOBuffered(width=Run.size, depth=rows)
        m.d.comb += [sc_out.addr.eq(self.rec_addr), self.rec.eq(sc_out.data),
                     self.runs.valid.eq(runq.r_rdy), self.runs.payload.eq(runq.r_data),
                     runq.r_en.eq(self.runs.ready), prng.seed.eq(cfg.seed)]

        single = cfg.term_match == 0
        count = Signal(range(n_t + 1))            # terminals in this superframe's allocation
        m.d.comb += count.eq(Mux(single, 1, cfg.term_framed + cfg.term_synthetic))

        # A terminal's settings: its row, or the channel's own registers.
        row = Signal(PoolCfg)
        own = Signal(PoolCfg)
        m.d.comb += [
            own.flags.eq(Mux((cfg.bod_flags & BOD_FCA).any(), TERM_FCA, 0)),
            own.cra.eq(cfg.bod_cra), own.rbdc_max.eq(cfg.bod_rbdc_max),
            own.rbdc_timeout.eq(cfg.bod_rbdc_timeout), own.vbdc_max.eq(cfg.bod_vbdc_max),
            own.req_period.eq(cfg.bod_req_period),
            row.eq(Mux(single, own, self.row)),
        ]
        synthetic = row.flags[0]                  # TERM_SYNTHETIC
        fca = row.flags[1]                        # TERM_FCA
        assert TERM_SYNTHETIC == 1 and TERM_FCA == 2

        k = Signal(32)
        clr = Signal(range(BOD_LATENCY_MAX * rows + 1))      # the row CLEAR zeroes
        first = Signal(tbits)                     # this superframe's first terminal: k mod T
        j = Signal(range(n_t + 1))                # the pass's step
        t = Signal(tbits)                         # the terminal of step j (in turn or by index)
        free = Signal(17)
        total = Signal(23)                        # a category's demands, summed
        given = Signal(23)
        n_fca = Signal(range(n_t + 1))
        jf = Signal(range(n_t + 1))               # FCA terminals handed theirs so far
        each = Signal(17)
        extra = Signal(17)
        q = Signal(SHARE_BITS)
        vbdc = Signal()                           # the category being shared: VBDC, else RBDC
        st = Signal(State)
        sc = Signal(Scratch)
        sent_at = Signal(32)
        m.d.comb += sent_at.eq(k - cfg.bod_latency)
        arrives = pv_rd.data & (k >= cfg.bod_latency)

        # Every state below reads terminal t's rows the cycle after it names it.
        m.d.comb += [st_rd.addr.eq(t), sc_rd.addr.eq(t), self.row_addr.eq(t),
                     pipe_rd.addr.eq(sent_at[:6] << tbits | t),
                     pv_rd.addr.eq(sent_at[:6] << tbits | t),
                     st_wr.addr.eq(t), sc_wr.addr.eq(t), st_wr.data.eq(st), sc_wr.data.eq(sc),
                     st.eq(st_rd.data), sc.eq(sc_rd.data)]

        # The background schedule (BodAllocator's): its level, and the next superframe's.
        bg_idx = Signal(range(BOD_BG_LEVELS))
        bg_used = Signal(16)
        levels = [getattr(cfg, f"bod_bg{i}") for i in range(BOD_BG_LEVELS)]
        level = Signal(32)
        with m.Switch(bg_idx):
            for i, lv in enumerate(levels):
                with m.Case(i):
                    m.d.comb += level.eq(lv)

        def framed_index():
            return t[:max((self.framed - 1).bit_length(), 1)]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.comb += self.busy.eq(1)
                    m.d.sync += [k.eq(self.k), j.eq(0), free.eq(cfg.bod_slots), total.eq(0),
                                 given.eq(0), n_fca.eq(0), self.granted.eq(0), t.eq(0)]
                    with m.If(self.k == 0):
                        m.d.comb += prng.load.eq(1)
                        m.d.sync += clr.eq(0)
                        m.next = "CLEAR"
                    with m.Else():
                        m.next = "ARRIVE_L"

            # ---- 0. after a restart, the run before it forgotten -----------------------------
            # The block's reset leaves memories as they are: superframe 0 first zeroes every
            # terminal's state and every request in flight, a row a cycle, so that a run starts
            # as the model's does whatever ran before it (BOD_LATENCY_MAX x rows cycles).
            with m.State("CLEAR"):
                m.d.comb += [self.busy.eq(1), pv_wr.addr.eq(clr), pv_wr.data.eq(0),
                             pv_wr.en.eq(1)]
                with m.If(clr < rows):
                    m.d.comb += [st_wr.data.eq(0), st_wr.en.eq(1)]      # (st_wr.addr is t)
                    m.d.sync += t.eq(t + 1)
                m.d.sync += clr.eq(clr + 1)
                with m.If(clr == BOD_LATENCY_MAX * rows - 1):
                    m.d.sync += t.eq(0)
                    m.next = "ARRIVE_L"

            # ---- 1. requests arrive; a synthetic terminal's demand (in index order) ----------
            with m.State("ARRIVE_L"):
                m.d.comb += self.busy.eq(1)
                m.next = "ARRIVE_LV"
            with m.State("ARRIVE_LV"):
                # (the row and state of terminal t are in; its level's row the cycle after)
                m.d.comb += [self.busy.eq(1),
                             self.level_addr.eq(row.demand_first + st_rd.data.level)]
                m.next = "ARRIVE"
            with m.State("ARRIVE"):
                m.d.comb += [self.busy.eq(1), self.level_addr.eq(row.demand_first + st_rd.data.level)]
                new = Signal(State)
                out = Signal(Scratch)
                m.d.comb += [new.eq(st_rd.data), out.eq(0)]
                act0 = Mux(arrives, pipe_rd.data[:24], st_rd.data.rbdc_active)
                left0 = Mux(arrives, row.rbdc_timeout, st_rd.data.rbdc_left)
                with m.If(arrives):
                    m.d.comb += [new.vbdc_out.eq(st_rd.data.vbdc_out + pipe_rd.data[24:]),
                                 pv_wr.addr.eq(sent_at[:6] << tbits | t), pv_wr.data.eq(0),
                                 pv_wr.en.eq(1)]
                with m.If((row.rbdc_timeout != 0) & (left0 == 0)):
                    m.d.comb += [new.rbdc_active.eq(0), new.rbdc_left.eq(0)]
                with m.Elif(row.rbdc_timeout != 0):
                    m.d.comb += [new.rbdc_active.eq(act0), new.rbdc_left.eq(left0 - 1)]
                with m.Else():
                    m.d.comb += [new.rbdc_active.eq(act0), new.rbdc_left.eq(left0)]
                # The demand: bytes x 256 this superframe, then the process moves on.
                rate = Signal(32)
                with m.If(synthetic):
                    with m.Switch(row.demand_kind):
                        with m.Case(DEMAND_LEVELS):
                            m.d.comb += rate.eq(self.level.rate)
                            with m.If(st_rd.data.level_used + 1 < self.level.length):
                                m.d.comb += new.level_used.eq(st_rd.data.level_used + 1)
                            with m.Else():
                                m.d.comb += new.level_used.eq(0)
                                with m.If(st_rd.data.level + 1 >= row.demand_count):
                                    m.d.comb += new.level.eq(0)
                                with m.Else():
                                    m.d.comb += new.level.eq(st_rd.data.level + 1)
                        with m.Case(DEMAND_CONSTANT):
                            m.d.comb += rate.eq(row.demand_rate)
                        with m.Case(DEMAND_ONOFF):
                            m.d.comb += [rate.eq(Mux(st_rd.data.off, 0, row.demand_rate)),
                                         prng.next.eq(1)]
                            with m.If(st_rd.data.off):
                                m.d.comb += new.off.eq(~(prng.out < row.demand_on))
                            with m.Else():
                                m.d.comb += new.off.eq(prng.out < row.demand_off)
                c = Signal(40)
                m.d.comb += c.eq(st_rd.data.demand_frac + rate)
                got = c[8:]
                with m.If(synthetic):
                    m.d.comb += [new.demand_frac.eq(c[:8]),
                                 new.backlog.eq(st_rd.data.backlog + got),
                                 new.arrived.eq(st_rd.data.arrived + got),
                                 out.backlog.eq(st_rd.data.backlog + got)]
                with m.Else():
                    m.d.comb += out.backlog.eq(self.backlog[framed_index()])
                m.d.comb += [st_wr.data.eq(new), st_wr.en.eq(1), sc_wr.data.eq(out),
                             sc_wr.en.eq(1)]
                m.d.sync += n_fca.eq(n_fca + fca)
                with m.If(j + 1 == count):
                    m.d.sync += [j.eq(0), t.eq(first)]
                    m.next = "CRA"
                with m.Else():
                    m.d.sync += [j.eq(j + 1), t.eq(t + 1)]
                    m.next = "ARRIVE_L"

            # ---- 2. CRA, in turn, owed until granted -----------------------------------------
            with m.State("CRA"):
                m.d.comb += self.busy.eq(1)
                m.next = "CRA_E"
            with m.State("CRA_E"):
                m.d.comb += self.busy.eq(1)
                owed = Signal(33)
                g = Signal(17)
                m.d.comb += [owed.eq(st_rd.data.cra_owed + row.cra),
                             g.eq(_min(owed[8:], free))]
                new = Signal(State)
                out = Signal(Scratch)
                m.d.comb += [new.eq(st_rd.data), new.cra_owed.eq(owed - (g << 8)),
                             out.eq(sc_rd.data), out.g_cra.eq(g),
                             st_wr.data.eq(new), st_wr.en.eq(1), sc_wr.data.eq(out),
                             sc_wr.en.eq(1)]
                m.d.sync += free.eq(free - g)
                with m.If(j + 1 == count):
                    m.d.sync += [j.eq(0), t.eq(0)]
                    m.next = "BG"
                with m.Else():
                    m.d.sync += [j.eq(j + 1),
                                 t.eq(Mux(t + 1 == count, 0, t + 1))]
                    m.next = "CRA"

            # ---- 3. the background ------------------------------------------------------------
            with m.State("BG"):
                m.d.comb += self.busy.eq(1)
                bg = _min(level[:16], free)
                m.d.sync += [self.bg.eq(bg), free.eq(free - bg), vbdc.eq(0), total.eq(0)]
                with m.If(bg_used + 1 < level[16:]):
                    m.d.sync += bg_used.eq(bg_used + 1)
                with m.Elif(bg_idx + 1 < cfg.bod_bg_count):
                    m.d.sync += [bg_idx.eq(bg_idx + 1), bg_used.eq(0)]
                with m.Elif((cfg.bod_flags & BOD_BG_REPEAT).any()):
                    m.d.sync += [bg_idx.eq(0), bg_used.eq(0)]
                m.next = "WANT"

            # ---- 4. RBDC, then VBDC: demands, then shares --------------------------------------
            with m.State("WANT"):
                m.d.comb += self.busy.eq(1)
                m.next = "WANT_E"
            with m.State("WANT_E"):
                m.d.comb += self.busy.eq(1)
                new = Signal(State)
                out = Signal(Scratch)
                cr = Signal(25)
                m.d.comb += [new.eq(st_rd.data), out.eq(sc_rd.data),
                             cr.eq(st_rd.data.rbdc_frac + st_rd.data.rbdc_active)]
                with m.If(vbdc):
                    m.d.comb += out.want_v.eq(st_rd.data.vbdc_out)
                    m.d.sync += total.eq(total + st_rd.data.vbdc_out)
                with m.Else():
                    m.d.comb += [out.want_r.eq(cr[8:]), new.rbdc_frac.eq(cr[:8]),
                                 st_wr.en.eq(1)]
                    m.d.sync += total.eq(total + cr[8:])
                m.d.comb += [st_wr.data.eq(new), sc_wr.data.eq(out), sc_wr.en.eq(1)]
                with m.If(j + 1 == count):
                    m.d.sync += [j.eq(0), t.eq(0), given.eq(0)]
                    m.next = "SHARE"
                with m.Else():
                    m.d.sync += [j.eq(j + 1), t.eq(t + 1)]
                    m.next = "WANT"

            with m.State("SHARE"):
                # Every demand where they fit; else q = left x 2^16 / their sum.
                m.d.comb += self.busy.eq(1)
                with m.If(total > free):
                    m.d.comb += [div.start.eq(1), div.n.eq(free << SHARE_BITS), div.d.eq(total)]
                    m.next = "SHARE_Q"
                with m.Else():
                    m.d.sync += q.eq(0)
                    m.next = "GRANT"
            with m.State("SHARE_Q"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    m.d.sync += q.eq(div.q)
                    m.next = "GRANT"

            with m.State("GRANT"):
                m.d.comb += self.busy.eq(1)
                m.next = "GRANT_E"
            with m.State("GRANT_E"):
                m.d.comb += self.busy.eq(1)
                want = Mux(vbdc, sc_rd.data.want_v, sc_rd.data.want_r)
                prod = Signal(34)
                g = Signal(17)
                m.d.comb += [prod.eq(want * q),
                             g.eq(Mux(total > free, prod[SHARE_BITS:], want))]
                out = Signal(Scratch)
                m.d.comb += [out.eq(sc_rd.data), sc_wr.data.eq(out), sc_wr.en.eq(1)]
                with m.If(vbdc):
                    m.d.comb += out.g_vbdc.eq(g)
                with m.Else():
                    m.d.comb += out.g_rbdc.eq(g)
                m.d.sync += given.eq(given + g)
                with m.If(j + 1 == count):
                    m.d.sync += [j.eq(0), t.eq(first)]
                    m.next = "REST"
                with m.Else():
                    m.d.sync += [j.eq(j + 1), t.eq(t + 1)]
                    m.next = "GRANT"

            with m.State("REST"):
                # The slots a share leaves, one at a time to those still short, in turn.
                m.d.comb += self.busy.eq(1)
                with m.If(given == Mux(total > free, free, total)):
                    m.d.sync += [free.eq(free - given), j.eq(0), t.eq(0), total.eq(0)]
                    with m.If(vbdc):
                        m.d.sync += t.eq(first)
                        m.next = "FCA_DIV"
                    with m.Else():
                        m.d.sync += vbdc.eq(1)
                        m.next = "WANT"
                with m.Else():
                    m.next = "REST_E"
            with m.State("REST_E"):
                m.d.comb += self.busy.eq(1)
                want = Mux(vbdc, sc_rd.data.want_v, sc_rd.data.want_r)
                g = Mux(vbdc, sc_rd.data.g_vbdc, sc_rd.data.g_rbdc)
                out = Signal(Scratch)
                m.d.comb += [out.eq(sc_rd.data), sc_wr.data.eq(out)]
                with m.If(g < want):
                    m.d.comb += sc_wr.en.eq(1)
                    m.d.sync += given.eq(given + 1)
                    with m.If(vbdc):
                        m.d.comb += out.g_vbdc.eq(g + 1)
                    with m.Else():
                        m.d.comb += out.g_rbdc.eq(g + 1)
                m.d.sync += [j.eq(Mux(j + 1 == count, 0, j + 1)),
                             t.eq(Mux(t + 1 == count, 0, t + 1))]
                m.next = "REST"

            # ---- 5. FCA, equally, the remainder in turn; the runs of slots -----------------------
            with m.State("FCA_DIV"):
                m.d.comb += self.busy.eq(1)
                with m.If(n_fca != 0):
                    m.d.comb += [div.start.eq(1), div.n.eq(free), div.d.eq(n_fca)]
                m.d.sync += jf.eq(0)
                m.next = "FCA_Q"
            with m.State("FCA_Q"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    m.d.sync += [each.eq(Mux(n_fca != 0, div.q, 0)),
                                 extra.eq(Mux(n_fca != 0, div.r, 0))]
                    m.next = "FCA_E"
            with m.State("FCA_E"):
                m.d.comb += self.busy.eq(1)
                out = Signal(Scratch)
                gf = Signal(17)
                m.d.comb += [gf.eq(Mux(fca, each + (jf < extra), 0)),
                             out.eq(sc_rd.data), out.g_fca.eq(gf),
                             sc_wr.data.eq(out), sc_wr.en.eq(1)]
                run = Signal(Run)
                g_all = Signal(17)
                m.d.comb += [g_all.eq(sc_rd.data.g_cra + sc_rd.data.g_rbdc + sc_rd.data.g_vbdc
                                      + gf),
                             run.terminal.eq(t), run.count.eq(g_all),
                             runq.w_data.eq(run), runq.w_en.eq(g_all != 0)]
                m.d.sync += [jf.eq(jf + fca), self.granted.eq(self.granted + g_all)]
                m.next = "FCA_W"
            with m.State("FCA_W"):
                # (one cycle for the row of the next terminal in turn)
                m.d.comb += self.busy.eq(1)
                with m.If(j + 1 == count):
                    m.d.sync += [j.eq(0), t.eq(0)]
                    m.next = "REQ"
                with m.Else():
                    m.d.sync += [j.eq(j + 1), t.eq(Mux(t + 1 == count, 0, t + 1))]
                    m.next = "FCA_R"
            with m.State("FCA_R"):
                m.d.comb += self.busy.eq(1)
                m.next = "FCA_E"

            # ---- 6. each terminal learns its grants and requests, in index order -----------------
            period_bytes = Signal(32)
            m.d.comb += period_bytes.eq(row.req_period * cfg.bod_slot_bytes)
            st_h = Signal(State)       # terminal t's state and record while it requests
            sc_h = Signal(Scratch)
            st_h_arrived = Signal(32)  # the arrivals its request takes
            carried_r = Signal(34)
            with m.State("REQ"):
                m.d.comb += self.busy.eq(1)
                m.next = "REQ_L"
            with m.State("REQ_L"):
                m.d.comb += self.busy.eq(1)
                new = Signal(State)
                m.d.comb += new.eq(st_rd.data)
                m.d.comb += [new.vbdc_pending.eq(st_rd.data.vbdc_pending - sc_rd.data.g_vbdc),
                             new.vbdc_out.eq(st_rd.data.vbdc_out - sc_rd.data.g_vbdc)]
                m.d.sync += [st_h.eq(new), sc_h.eq(sc_rd.data), sc_h.rbdc_req.eq(0),
                             sc_h.vbdc_req.eq(0)]
                with m.If(st_rd.data.req_wait == 0):
                    m.d.sync += st_h.req_wait.eq(row.req_period - 1)
                    arrived = Mux(synthetic, st_rd.data.arrived, self.arrived[framed_index()])
                    with m.If((row.rbdc_max != 0) & (arrived != 0)):
                        m.d.comb += [div.start.eq(1), div.n.eq(arrived << 8),
                                     div.d.eq(period_bytes)]
                    with m.If(~synthetic):
                        m.d.comb += self.took.bit_select(framed_index(), 1).eq(1)
                    m.d.sync += [st_h.arrived.eq(0), st_h_arrived.eq(arrived)]
                    m.next = "RATE"
                with m.Else():
                    m.d.sync += st_h.req_wait.eq(st_rd.data.req_wait - 1)
                    m.next = "USED"
            with m.State("RATE"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    # (no division where nothing arrived: the rate is 0)
                    with m.If((row.rbdc_max != 0) & (st_h_arrived != 0)):
                        rate = div.q + (div.r != 0)
                        m.d.sync += sc_h.rbdc_req.eq(_min(rate, row.rbdc_max))
                    m.d.comb += [div.start.eq((row.vbdc_max != 0) & (sc_h.backlog != 0)),
                                 div.n.eq(sc_h.backlog), div.d.eq(cfg.bod_slot_bytes)]
                    m.next = "NEED"
            need = Signal(33)
            cover = Signal(34)
            room = Signal(18)
            with m.State("NEED"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    m.d.sync += need.eq(Mux(sc_h.backlog != 0, div.q + (div.r != 0), 0))
                    m.next = "COVER"
            with m.State("COVER"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += [cover.eq(st_h.vbdc_pending
                                      + (((row.cra + sc_h.rbdc_req) * cfg.bod_latency) >> 8)),
                             room.eq(row.vbdc_max - st_h.vbdc_pending)]
                m.next = "VOLUME"
            with m.State("VOLUME"):
                m.d.comb += self.busy.eq(1)
                want = Signal(34)
                req = Signal(16)
                # max(min(need - cover, room), 0), both as signed differences
                m.d.comb += want.eq(Mux(need > cover, need - cover, 0))
                with m.If((row.vbdc_max == 0) | room[-1] | (row.vbdc_max <= st_h.vbdc_pending)):
                    m.d.comb += req.eq(0)
                with m.Else():
                    m.d.comb += req.eq(_min(want, room))
                m.d.sync += [sc_h.vbdc_req.eq(req), st_h.vbdc_pending.eq(st_h.vbdc_pending + req)]
                m.d.comb += [pipe_wr.addr.eq(k[:6] << tbits | t),
                             pipe_wr.data.eq(sc_h.rbdc_req | (req << 24)), pipe_wr.en.eq(1),
                             pv_wr.addr.eq(k[:6] << tbits | t), pv_wr.data.eq(1),
                             pv_wr.en.eq(1)]
                m.next = "USED"
            with m.State("USED"):
                # A synthetic terminal's slots carry its backlog, a slot's bytes each.
                m.d.comb += self.busy.eq(1)
                room_b = Signal(34)
                carried = Signal(34)
                granted = sc_h.g_cra + sc_h.g_rbdc + sc_h.g_vbdc + sc_h.g_fca
                m.d.comb += [room_b.eq(granted * cfg.bod_slot_bytes),
                             carried.eq(_min(st_h.backlog, room_b))]
                with m.If(synthetic):
                    m.d.sync += [st_h.backlog.eq(st_h.backlog - carried),
                                 carried_r.eq(carried)]
                    m.d.comb += [div.start.eq(carried != 0), div.n.eq(carried),
                                 div.d.eq(cfg.bod_slot_bytes)]
                m.next = "USED_W"
            with m.State("USED_W"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    out = Signal(Scratch)
                    m.d.comb += [out.eq(sc_h),
                                 out.used.eq(Mux(synthetic & (carried_r != 0),
                                                 div.q + (div.r != 0), 0)),
                                 st_wr.data.eq(st_h), st_wr.en.eq(1), sc_wr.data.eq(out),
                                 sc_wr.en.eq(1)]
                    with m.If(j + 1 == count):
                        m.d.sync += [j.eq(0), t.eq(0),
                                     first.eq(Mux(first + 1 >= count, 0, first + 1))]
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += [j.eq(j + 1), t.eq(t + 1)]
                        m.next = "REQ"
        return m
