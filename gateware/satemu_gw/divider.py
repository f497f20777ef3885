# SPDX-License-Identifier: BSD-2-Clause
"""Sequential unsigned division: one quotient bit per cycle."""

from amaranth import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class Divider(wiring.Component):
    """``start`` takes ``n`` and ``d``; ``busy`` then stays high for ``width`` cycles, after
    which ``q`` = n // d and ``r`` = n % d (restoring division). ``d`` must not be 0.
    """

    def __init__(self, width: int, d_width: int):
        self.width = width
        super().__init__({
            "start": In(1), "n": In(width), "d": In(d_width),
            "busy": Out(1), "q": Out(width), "r": Out(d_width),
        })

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self.width + 1))
        d = Signal.like(self.d)
        trial = Signal(len(self.r) + 1)
        m.d.comb += [
            self.busy.eq(count != 0),
            trial.eq((self.r << 1) | self.q[-1]),
        ]
        with m.If(self.start):
            m.d.sync += [count.eq(self.width), self.q.eq(self.n), self.r.eq(0), d.eq(self.d)]
        with m.Elif(self.busy):
            # q shifts the dividend out at the top and the quotient bits in at the bottom.
            fits = trial >= d
            m.d.sync += [
                count.eq(count - 1),
                self.r.eq(Mux(fits, trial - d, trial)),
                self.q.eq((self.q << 1) | fits),
            ]
        return m
