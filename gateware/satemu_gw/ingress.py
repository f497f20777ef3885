# SPDX-License-Identifier: BSD-2-Clause
"""Channel ingress: buffers each frame on chip and describes it when its last beat arrives."""

from amaranth import Module, Signal, Mux
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from satemu.base.regmap import BOD_ENABLE

from .classify import Classifier
from .ecnparse import EcnParse
from .layouts import Beat, Config, IngressDesc


class Ingress(wiring.Component):
    """Stores up to ``max_beats`` beats per frame; longer frames are truncated (and later dropped
    as oversize). The frame's arrival cycle is the cycle its last beat is accepted.

    A frame is taken only if, at its first beat, the on-chip FIFOs have room for a longest frame
    and its descriptor, so a taken frame is never cut. Otherwise:

    * ``mac_fed=False`` (a source that can wait): ``sink.ready`` stays low until there is room;
    * ``mac_fed=True`` (a MAC, which cannot wait): ``sink.ready`` is always high and the whole
      frame is discarded and counted in ``drop_overrun``.

    ``arrived`` pulses in the cycle a taken frame's last beat is accepted, ``overrun`` in the
    cycle a discarded frame's last beat goes by.

    A channel with terminals (``params.terminals``) classifies each taken frame
    (``satemu_gw.classify``: by its source on the BoD channel, port A's, else its destination)
    with the table in force (``cfg``'s ``term_*``, ``keys``), and where the terminals have their
    own shares of the delay line (BoD on and a table) the descriptor's ``freed`` is the frame's
    terminal's (``freed_t``).
    """

    def __init__(self, params, mac_fed: bool = False):
        self.params = params
        self.mac_fed = mac_fed
        ports = {
            "sink": In(stream.Signature(Beat)),
            "beats": Out(stream.Signature(64)),
            "desc": Out(stream.Signature(IngressDesc)),
            "now": In(64),
            "freed": In(32),
            "arrived": Out(1),
            "overrun": Out(1),
            "drop_overrun": Out(64, init=params.counter_init),
            "clear": In(1),
        }
        if params.terminals:
            ports.update({"cfg": In(Config),
                          "keys": In(data.ArrayLayout(48, params.terminals)),
                          "freed_t": In(data.ArrayLayout(32, params.terminals))})
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.data = data = fifo.SyncFIFOBuffered(width=64, depth=p.ingress_beats)
        m.submodules.descs = descs = fifo.SyncFIFOBuffered(width=IngressDesc.size, depth=16)

        length = Signal(16)
        stored = Signal(range(p.max_beats + 1))
        beat = self.sink.payload
        # Room for a longest frame and its descriptor. Only this frame writes until its last
        # beat, so room at the first beat means no beat of it will find the FIFOs full.
        room = Signal()
        m.d.comb += room.eq((data.level + p.max_beats < p.ingress_beats) & (descs.level < 15))
        in_frame = Signal()        # a beat of this frame has gone by
        dropping = Signal()        # this frame is being discarded (fed by a MAC)
        go_by = self.sink.valid & self.sink.ready
        discard = Signal()
        m.d.comb += discard.eq(Mux(in_frame, dropping, ~room))
        fire = go_by & ~discard
        with m.If(go_by):
            m.d.sync += in_frame.eq(~beat.last)
            with m.If(~in_frame):
                m.d.sync += dropping.eq(~room)
        m.d.comb += [self.arrived.eq(fire & beat.last),
                     self.overrun.eq(go_by & discard & beat.last)]
        with m.If(self.overrun):
            m.d.sync += self.drop_overrun.eq(self.drop_overrun + 1)
        with m.If(self.clear):
            m.d.sync += self.drop_overrun.eq(0)
        store = stored < p.max_beats
        nb_ok = (beat.nbytes >= 1) & (beat.nbytes <= 8)
        tail = Mux(nb_ok, beat.nbytes, 8)
        total = Signal(17)
        m.d.comb += total.eq(length + tail)

        desc = Signal(IngressDesc)
        m.d.comb += [
            self.sink.ready.eq(1 if self.mac_fed else (in_frame | room)),
            data.w_en.eq(fire & store),
            data.w_data.eq(beat.data),
            desc.arrival.eq(self.now),
            desc.length.eq(Mux(total[16], 0xFFFF, total[:16])),
            desc.err.eq(beat.err | ~nb_ok),
            desc.stored.eq(stored + store),
            desc.freed.eq(self.freed), desc.freed_all.eq(self.freed),
            descs.w_data.eq(desc),
            descs.w_en.eq(fire & beat.last),
        ]
        if p.ecn:
            m.submodules.ecnparse = ep = EcnParse()
            m.d.comb += [ep.beat.eq(beat), ep.take.eq(fire), ep.length.eq(total),
                         desc.ecn.eq(ep.kind)]
        if p.terminals:
            cfg = self.cfg
            m.submodules.classify = cl = Classifier(p.terminals, source=p.bod)
            m.d.comb += [cl.beat.eq(beat), cl.take.eq(fire), cl.length.eq(total),
                         cl.match.eq(cfg.term_match), cl.n.eq(cfg.term_framed),
                         cl.unclassified.eq(cfg.term_unclassified), cl.keys.eq(self.keys),
                         desc.terminal.eq(cl.terminal), desc.known.eq(cl.known)]
            # The frame's terminal's share of the delay line, where each has its own.
            own = (cfg.bod_flags & BOD_ENABLE).any() & (cfg.term_match != 0) & cl.known
            with m.If(own):
                m.d.comb += desc.freed.eq(self.freed_t[cl.terminal[:max(
                    (p.terminals - 1).bit_length(), 1)]])
        with m.If(fire):
            with m.If(beat.last):
                m.d.sync += [length.eq(0), stored.eq(0)]
            with m.Else():
                m.d.sync += [
                    length.eq(Mux(length > 0xFFFF - 8, 0xFFFF, length + 8)),
                    stored.eq(stored + store),
                ]

        wiring.connect(m, wiring.flipped(self.beats), data.r_stream)
        m.d.comb += [
            self.desc.valid.eq(descs.r_rdy),
            self.desc.payload.eq(descs.r_data),
            descs.r_en.eq(self.desc.ready),
        ]
        return m
