# SPDX-License-Identifier: BSD-2-Clause
"""A clock-crossing FIFO for the MACs whose fast side has short paths: ``PacedAsyncFIFO``, and
``paced_crossing``, a stream around it that takes the place of LiteX's ``ClockDomainCrossing``.

LiteX's crossing (Migen's ``AsyncFIFO``) reads its memory synchronously at the *next* read
pointer, so the read side's flag, its read enable, the pointer's increment and the memory's
address are one path, long for a 125 MHz wire clock on a slow speed grade (docs/hardware.md,
"Colorlight 5A-75B").

Here one side, the *paced* one, gives up a cycle after each transfer: its flag (``readable`` or
``writable``) is a register, computed from registered pointers and cleared in the cycle after a
transfer, so its paths are a comparison into a flip-flop, and a flip-flop through the enable into
the pointers. The memory is read asynchronously (distributed RAM) at the read pointer itself, a
flip-flop, not at the next one. The MACs' wire sides move a 64-bit beat every 8 cycles (a byte a
cycle), so a transfer every other cycle leaves them 4 times what they need; the system sides
stay unpaced.

Pointers are binary counters one bit wider than the address, each with a registered Gray copy
that crosses to the other side through two flip-flops (``MultiReg``). Empty: the read side's Gray
pointer equals the write side's as seen there; full: they differ exactly in the two top bits.
The flags are conservative (a transfer on the other side is seen a few cycles later), never
wrong: a paced flag that is set was true of the cycle before, and only the paced side's own
transfer, which clears it, could have falsified it since.
"""

from __future__ import annotations

from migen import Cat, ClockDomainsRenamer, Memory, Module, Signal
from migen.genlib.cdc import MultiReg
from migen.genlib.fifo import _FIFOInterface
from litex.soc.interconnect import stream

__all__ = ["PacedAsyncFIFO", "PacedCrossing", "paced_crossing"]


def _gray(v):
    return v ^ v[1:]


class PacedAsyncFIFO(Module, _FIFOInterface):
    """First in, first out between clock domains ``write`` and ``read``, first word fall-through
    (``dout`` is the oldest word while ``readable``). ``paced``: the side ("read" or "write")
    that takes at most one word every other cycle, with a registered flag. ``depth``: a power
    of two, at least 4."""

    def __init__(self, width: int, depth: int, paced: str = "read"):
        if paced not in ("read", "write"):
            raise ValueError("paced is 'read' or 'write'")
        if depth < 4 or depth & (depth - 1):
            raise ValueError("depth must be a power of two, at least 4")
        _FIFOInterface.__init__(self, width, depth)
        bits = depth.bit_length() - 1

        wbin, wgray = Signal(bits + 1), Signal(bits + 1)       # write domain
        rbin, rgray = Signal(bits + 1), Signal(bits + 1)       # read domain
        wgray_at_r, rgray_at_w = Signal(bits + 1), Signal(bits + 1)
        self.specials += [MultiReg(wgray, wgray_at_r, "read"), MultiReg(rgray, rgray_at_w, "write")]
        # The Gray copies are what the other domain samples: plain registers, never retimed.
        wgray.attr.add("no_retiming")
        rgray.attr.add("no_retiming")

        not_empty = Signal()
        not_full = Signal()
        self.comb += [
            not_empty.eq(rgray != wgray_at_r),
            not_full.eq(wgray != Cat(rgray_at_w[:-2], ~rgray_at_w[-2:])),
        ]
        do_write, do_read = Signal(), Signal()
        if paced == "write":
            self.sync.write += self.writable.eq(not_full & ~do_write)
        else:
            self.comb += self.writable.eq(not_full)
        if paced == "read":
            self.sync.read += self.readable.eq(not_empty & ~do_read)
        else:
            self.comb += self.readable.eq(not_empty)
        self.comb += [do_write.eq(self.writable & self.we), do_read.eq(self.readable & self.re)]

        wnext, rnext = Signal(bits + 1), Signal(bits + 1)
        self.comb += [wnext.eq(wbin + do_write), rnext.eq(rbin + do_read)]
        self.sync.write += [wbin.eq(wnext), wgray.eq(_gray(wnext))]
        self.sync.read += [rbin.eq(rnext), rgray.eq(_gray(rnext))]

        storage = Memory(width, depth)
        self.specials += storage
        wport = storage.get_port(write_capable=True, clock_domain="write")
        rport = storage.get_port(async_read=True, clock_domain="read")
        self.specials += wport, rport
        self.comb += [
            wport.adr.eq(wbin[:bits]), wport.dat_w.eq(self.din), wport.we.eq(do_write),
            rport.adr.eq(rbin[:bits]), self.dout.eq(rport.dat_r),
        ]


class PacedCrossing(stream._FIFOWrapper):
    """A stream (``sink``, ``source``) through a ``PacedAsyncFIFO`` from domain ``write`` to
    domain ``read``."""

    def __init__(self, description, depth: int, paced: str):
        stream._FIFOWrapper.__init__(
            self, lambda width, d: PacedAsyncFIFO(width, d, paced), description, depth)


def paced_crossing(description, cd_from: str, cd_to: str, depth: int, paced: str):
    """A ``PacedCrossing`` from ``cd_from`` to ``cd_to``, with ``sink`` and ``source`` endpoints
    of ``description``, as LiteX's ``ClockDomainCrossing`` has."""
    return ClockDomainsRenamer({"write": cd_from, "read": cd_to})(
        PacedCrossing(description, depth, paced))
