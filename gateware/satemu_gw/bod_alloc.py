# SPDX-License-Identifier: BSD-2-Clause
"""BoD allocator: a superframe's grants (CRA, RBDC, VBDC, FCA) and the terminal's requests."""

from amaranth import Module, Signal, Mux, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import BOD_FCA, BOD_BG_REPEAT, BOD_BG_LEVELS, BOD_LATENCY_MAX

from .divider import Divider
from .layouts import Config


def _min(a, b):
    return Mux(a < b, a, b)


class BodAllocator(wiring.Component):
    """Run once per superframe (``start``, with ``k``, ``backlog`` and ``arrived`` as of the
    superframe's first cycle); ``busy`` falls when the grants and requests are ready. It holds
    both sides of the exchange, as ``satemu.model.bod.Bod._superframe`` does:

    * the network side: requests wait ``bod_latency`` superframes in a 64-entry pipeline, then
      update the RBDC rate in force (with its timeout) and the VBDC volume outstanding; grants
      go CRA, background, RBDC, VBDC, FCA, each limited by the slots left;
    * the terminal side: every ``bod_req_period`` superframes, RBDC from the bytes that arrived
      and VBDC for the backlog not covered (``took_arrived`` pulses when the arrival count is
      consumed).

    Every piece of state starts at zero: the scheduler that holds it restarts the pair with a
    reset (``ResetInserter``) when the BoD settings change.
    """

    def __init__(self):
        super().__init__({
            "cfg": In(Config),
            "start": In(1),
            "k": In(32),
            "backlog": In(32),
            "arrived": In(32),
            "busy": Out(1),
            "took_arrived": Out(1),
            "rbdc_req": Out(24), "vbdc_req": Out(16), "bg": Out(16),
            "g_cra": Out(16), "g_rbdc": Out(16), "g_vbdc": Out(16), "g_fca": Out(16),
            "granted": Out(17),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        depth = BOD_LATENCY_MAX
        m.submodules.pipe = pipe = Memory(shape=unsigned(40), depth=depth, init=[])
        rd = pipe.read_port(domain="comb")
        wr = pipe.write_port()
        valid = Signal(depth)
        m.submodules.div = div = Divider(40, 32)

        rbdc_active = Signal(24)
        rbdc_left = Signal(16)
        vbdc_out = Signal(32)
        vbdc_pending = Signal(16)
        cra_frac = Signal(8)
        rbdc_frac = Signal(8)
        req_wait = Signal(16)
        bg_idx = Signal(range(BOD_BG_LEVELS))
        bg_used = Signal(16)       # superframes of the current level already gone
        free = Signal(17)
        need = Signal(32)
        prod = Signal(33)
        cover = Signal(33)
        room = Signal(17)
        want = Signal(33)

        levels = [getattr(cfg, f"bod_bg{i}") for i in range(BOD_BG_LEVELS)]
        level = Signal(32)
        with m.Switch(bg_idx):
            for i, lv in enumerate(levels):
                with m.Case(i):
                    m.d.comb += level.eq(lv)

        sent_at = Signal(32)
        m.d.comb += [sent_at.eq(self.k - cfg.bod_latency), rd.addr.eq(sent_at[:6])]
        arrives = valid.bit_select(sent_at[:6], 1) & (self.k >= cfg.bod_latency)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.comb += self.busy.eq(1)
                    # Requests sent latency superframes ago arrive; then the RBDC timeout.
                    act0 = Mux(arrives, rd.data[:24], rbdc_active)
                    left0 = Mux(arrives, cfg.bod_rbdc_timeout, rbdc_left)
                    with m.If(arrives):
                        m.d.sync += [vbdc_out.eq(vbdc_out + rd.data[24:]),
                                     valid.bit_select(sent_at[:6], 1).eq(0)]
                    with m.If((cfg.bod_rbdc_timeout != 0) & (left0 == 0)):
                        m.d.sync += [rbdc_active.eq(0), rbdc_left.eq(0)]
                    with m.Elif(cfg.bod_rbdc_timeout != 0):
                        m.d.sync += [rbdc_active.eq(act0), rbdc_left.eq(left0 - 1)]
                    with m.Else():
                        m.d.sync += [rbdc_active.eq(act0), rbdc_left.eq(left0)]
                    # CRA is served before anyone else; then the other terminals.
                    c = Signal(25)
                    m.d.comb += c.eq(cra_frac + cfg.bod_cra)
                    m.d.sync += [self.g_cra.eq(c[8:]), cra_frac.eq(c[:8]),
                                 free.eq(cfg.bod_slots - c[8:])]
                    m.next = "BG"

            with m.State("BG"):
                m.d.comb += self.busy.eq(1)
                bg = _min(level[:16], free)
                m.d.sync += [self.bg.eq(bg), free.eq(free - bg)]
                m.next = "RBDC"

            with m.State("RBDC"):
                m.d.comb += self.busy.eq(1)
                c = Signal(25)
                m.d.comb += c.eq(rbdc_frac + rbdc_active)
                g = _min(c[8:], free)
                m.d.sync += [self.g_rbdc.eq(g), rbdc_frac.eq(c[:8]), free.eq(free - g)]
                m.next = "VBDC"

            with m.State("VBDC"):
                m.d.comb += self.busy.eq(1)
                g = _min(vbdc_out, free)
                m.d.sync += [self.g_vbdc.eq(g), vbdc_out.eq(vbdc_out - g),
                             vbdc_pending.eq(vbdc_pending - g),
                             self.g_fca.eq(Mux((cfg.bod_flags & BOD_FCA).any(), free - g, 0))]
                # The background level of the next superframe.
                with m.If(bg_used + 1 < level[16:]):
                    m.d.sync += bg_used.eq(bg_used + 1)
                with m.Elif(bg_idx + 1 < cfg.bod_bg_count):
                    m.d.sync += [bg_idx.eq(bg_idx + 1), bg_used.eq(0)]
                with m.Elif((cfg.bod_flags & BOD_BG_REPEAT).any()):
                    m.d.sync += [bg_idx.eq(0), bg_used.eq(0)]
                with m.If(req_wait == 0):
                    m.d.sync += req_wait.eq(cfg.bod_req_period - 1)
                    m.d.comb += [div.start.eq(1), div.n.eq(self.arrived << 8),
                                 div.d.eq(cfg.bod_req_period * cfg.bod_slot_bytes),
                                 self.took_arrived.eq(1)]
                    m.next = "RATE"
                with m.Else():
                    m.d.sync += [req_wait.eq(req_wait - 1), self.rbdc_req.eq(0),
                                 self.vbdc_req.eq(0)]
                    m.next = "SUM"

            with m.State("RATE"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    rate = div.q + (div.r != 0)
                    m.d.sync += self.rbdc_req.eq(_min(rate, cfg.bod_rbdc_max))
                    m.d.comb += [div.start.eq(1), div.n.eq(self.backlog),
                                 div.d.eq(cfg.bod_slot_bytes)]
                    m.next = "NEED"

            with m.State("NEED"):
                m.d.comb += self.busy.eq(1)
                with m.If(~div.busy):
                    m.d.sync += need.eq(div.q + (div.r != 0))
                    m.next = "PRODUCT"

            # The VBDC request, one step per state (short paths for the board's clock).
            with m.State("PRODUCT"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += prod.eq((cfg.bod_cra + self.rbdc_req) * cfg.bod_latency)
                m.next = "COVER"

            with m.State("COVER"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += [cover.eq(vbdc_pending + (prod >> 8)),
                             room.eq(cfg.bod_vbdc_max - vbdc_pending)]
                m.next = "WANT"

            with m.State("WANT"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += want.eq(Mux(need > cover, need - cover, 0))
                m.next = "VOLUME"

            with m.State("VOLUME"):
                m.d.comb += self.busy.eq(1)
                req = Signal(16)
                # None where a commit lowered the maximum below the VBDC still pending.
                m.d.comb += req.eq(Mux(cfg.bod_vbdc_max > vbdc_pending, _min(want, room), 0))
                m.d.sync += [self.vbdc_req.eq(req), vbdc_pending.eq(vbdc_pending + req),
                             valid.bit_select(self.k[:6], 1).eq(1)]
                m.d.comb += [wr.addr.eq(self.k[:6]), wr.data.eq(self.rbdc_req | (req << 24)),
                             wr.en.eq(1)]
                m.next = "SUM"

            with m.State("SUM"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += self.granted.eq(self.g_cra + self.g_rbdc + self.g_vbdc + self.g_fca)
                m.next = "IDLE"
        return m
