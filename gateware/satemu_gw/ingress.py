# SPDX-License-Identifier: BSD-2-Clause
"""Channel ingress: buffers each frame on chip and describes it when its last beat arrives."""

from amaranth import Module, Signal, Mux
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import Beat, IngressDesc


class Ingress(wiring.Component):
    """Stores up to ``max_beats`` beats per frame; longer frames are truncated (and later dropped
    as oversize). The frame's arrival cycle is the cycle its last beat is accepted; ``sink.ready``
    falls only while the on-chip FIFOs are full, so a frame is never cut by backpressure.
    """

    def __init__(self, params):
        self.params = params
        super().__init__({
            "sink": In(stream.Signature(Beat)),
            "beats": Out(stream.Signature(64)),
            "desc": Out(stream.Signature(IngressDesc)),
            "now": In(64),
            "freed": In(32),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.data = data = fifo.SyncFIFOBuffered(width=64, depth=p.ingress_beats)
        m.submodules.descs = descs = fifo.SyncFIFOBuffered(width=IngressDesc.size, depth=16)

        length = Signal(16)
        stored = Signal(range(p.max_beats + 1))
        beat = self.sink.payload
        fire = self.sink.valid & self.sink.ready
        store = stored < p.max_beats
        nb_ok = (beat.nbytes >= 1) & (beat.nbytes <= 8)
        tail = Mux(nb_ok, beat.nbytes, 8)
        total = Signal(17)
        m.d.comb += total.eq(length + tail)

        desc = Signal(IngressDesc)
        m.d.comb += [
            self.sink.ready.eq(data.w_rdy & descs.w_rdy),
            data.w_en.eq(fire & store),
            data.w_data.eq(beat.data),
            desc.arrival.eq(self.now),
            desc.length.eq(Mux(total[16], 0xFFFF, total[:16])),
            desc.err.eq(beat.err | ~nb_ok),
            desc.stored.eq(stored + store),
            desc.freed.eq(self.freed),
            descs.w_data.eq(desc),
            descs.w_en.eq(fire & beat.last),
        ]
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
