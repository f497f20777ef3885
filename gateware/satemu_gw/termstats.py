# SPDX-License-Identifier: BSD-2-Clause
"""Each terminal's counters (satemu.base.params.TERMINAL_COUNTERS), counted from the channel's
fates and egress starts (docs/bod.md, "Terminals")."""

from amaranth import Module, Signal, Mux, Array
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from satemu.base.params import FATE_COUNTER, TERMINAL_COUNTERS, Fate

from .layouts import NO_TERMINAL, TERMINAL_BITS


class TermStats(wiring.Component):
    """A set of counters per terminal with frames (``params.terminals``) and one for frames of no
    terminal (``NO_TERMINAL``'s), each ``params.counter_bits`` wide (read modulo 2^bits as the
    channel's are): at a frame's fate (``fate_valid``) its terminal's ``rx_frames``,
    ``rx_bytes`` and the fate's drop counter; at its egress start (``started``) its
    ``tx_frames``, ``tx_bytes`` and, late, ``late``. ``clear`` zeroes them (STATS.CLEAR).
    ``sel`` (terminal x 16 + the counter's index in TERMINAL_COUNTERS; the terminal
    ``NO_TERMINAL`` for no one's) names the counter ``value`` holds, the cycle after."""

    def __init__(self, params):
        self.params = params
        super().__init__({
            "fate_valid": In(1), "fate": In(3), "fate_terminal": In(TERMINAL_BITS),
            "fate_length": In(16),
            "started": In(1), "start_terminal": In(TERMINAL_BITS), "start_length": In(16),
            "start_late": In(1),
            "clear": In(1),
            "sel": In(16),
            "value": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        bits = p.counter_bits
        sets = p.terminals + 1          # the terminals', then no one's
        cnt = [{name: Signal(bits, name=f"t{i}_{name}") for name in TERMINAL_COUNTERS}
               for i in range(sets)]

        def index(terminal):
            return Mux(terminal == NO_TERMINAL, p.terminals, terminal)

        fi, si = index(self.fate_terminal), index(self.start_terminal)
        drop_of = {int(f): name for f, name in FATE_COUNTER.items()}
        for i, c in enumerate(cnt):
            fate_here = self.fate_valid & (fi == i)
            start_here = self.started & (si == i)
            with m.If(self.clear):
                m.d.sync += [v.eq(0) for v in c.values()]
            with m.Else():
                with m.If(fate_here):
                    m.d.sync += [c["rx_frames"].eq(c["rx_frames"] + 1),
                                 c["rx_bytes"].eq(c["rx_bytes"] + self.fate_length)]
                    for fate, name in drop_of.items():
                        with m.If(self.fate == fate):
                            m.d.sync += c[name].eq(c[name] + 1)
                with m.If(start_here):
                    m.d.sync += [c["tx_frames"].eq(c["tx_frames"] + 1),
                                 c["tx_bytes"].eq(c["tx_bytes"] + self.start_length)]
                    with m.If(self.start_late):
                        m.d.sync += c["late"].eq(c["late"] + 1)
        flat = Array(c[name] for c in cnt for name in TERMINAL_COUNTERS)
        width = len(TERMINAL_COUNTERS)
        who = index(self.sel[4:4 + TERMINAL_BITS])
        what = self.sel[:4]
        valid = (who < sets) & (what < width)
        m.d.sync += self.value.eq(Mux(valid, flat[who * width + what], 0))
        assert int(Fate.DELIVERED) not in drop_of
        return m
