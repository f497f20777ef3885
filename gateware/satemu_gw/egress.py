# SPDX-License-Identifier: BSD-2-Clause
"""Channel egress: starts each frame at exactly its scheduled cycle and frees its memory."""

from amaranth import Module, Signal, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import Beat, PlayoutDesc, TERMINAL_BITS, frame_beats

EGRESS_COUNTERS = ["tx_frames", "tx_bytes", "late"]


class Egress(wiring.Component):
    """A frame starts (``source.valid`` first rises) in the first cycle with ``now >= egress``
    and the port idle. A frame that starts later than its scheduled cycle, because memory or the
    sink was too slow, is counted in ``late``. At its start the frame's memory words are freed.
    """

    def __init__(self, params):
        self.params = params
        extra = {}
        if params.terminals:
            # Words freed of each terminal's share (mod 2^32; a frame's header names its
            # terminal), and the terminal of the frame that starts.
            extra = {"freed_t": Out(data.ArrayLayout(32, params.terminals),
                                    init=[params.word_init] * params.terminals),
                     "start_terminal": Out(TERMINAL_BITS)}
        super().__init__({
            **extra,
            "desc": In(stream.Signature(PlayoutDesc)),
            "data": In(stream.Signature(64)),
            "source": Out(stream.Signature(Beat)),
            "now": In(64),
            "freed": Out(32, init=params.word_init),     # words freed, mod 2^32
            "clear": In(1),
            # A frame starts (one pulse), with its length and whether it is late: the frame log's.
            "started": Out(1),
            "start_length": Out(16),
            "start_late": Out(1),
            **{name: Out(64, init=params.counter_init) for name in EGRESS_COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        d = self.desc.payload
        sending = Signal()
        idx = Signal(14)
        beats = frame_beats(d.length)
        diff = Signal(48)
        m.d.comb += diff.eq(self.now[:48] - d.egress)
        due = ~diff[47]
        start = ~sending & self.desc.valid & due
        active = sending | start
        last = idx + 1 == beats
        beat = self.source.payload
        m.d.comb += [
            self.source.valid.eq(active & self.data.valid),
            self.data.ready.eq(active & self.source.ready),
            beat.data.eq(self.data.payload),
            beat.last.eq(last),
            beat.nbytes.eq(Mux(last, d.length - ((beats - 1) << 3), 8)),
            beat.err.eq(0),
        ]
        m.d.comb += [self.started.eq(start), self.start_length.eq(d.length),
                     self.start_late.eq(diff != 0)]
        if self.params.terminals:
            m.d.comb += self.start_terminal.eq(d.terminal)
            for i in range(self.params.terminals):
                with m.If(start & (d.terminal == i)):
                    m.d.sync += self.freed_t[i].eq(self.freed_t[i] + beats + 1)
        with m.If(start):
            m.d.sync += [sending.eq(1), self.freed.eq(self.freed + beats + 1),
                         self.tx_frames.eq(self.tx_frames + 1),
                         self.tx_bytes.eq(self.tx_bytes + d.length)]
            with m.If(diff != 0):
                m.d.sync += self.late.eq(self.late + 1)
        with m.If(self.source.valid & self.source.ready):
            m.d.sync += idx.eq(idx + 1)
            with m.If(last):
                m.d.comb += self.desc.ready.eq(1)
                m.d.sync += [idx.eq(0), sending.eq(0)]
        with m.If(self.clear):
            m.d.sync += [self.tx_frames.eq(0), self.tx_bytes.eq(0), self.late.eq(0)]
        return m
