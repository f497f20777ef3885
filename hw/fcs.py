# SPDX-License-Identifier: BSD-2-Clause
"""A byte-wide FCS checker whose error flag comes from registers (``RegisteredFCSChecker``), for
the receive side of a MAC whose wire clock leaves no room for LiteEth's."""

from migen import Module, Mux, Signal, If

from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description
from liteeth.mac.crc import LiteEthMACCRC32, LiteEthMACCRCEngine

FCS_BYTES = 4


class RegisteredFCSChecker(Module):
    """Takes a frame's bytes with its FCS on ``sink`` and gives the frame without the FCS on
    ``source``, its last byte flagged with ``error`` when the FCS does not match or a byte came
    with ``error`` set, as ``liteeth.mac.crc.LiteEthMACCRC32Checker`` does on a byte-wide path.

    LiteEth's checker flags its output's last byte in the cycle the frame's last byte comes in,
    from the CRC engine's next value: incoming byte, CRC engine, 32-bit comparison and the
    flag in one cycle, which a 125 MHz clock on a speed-grade 6 ECP5 does not leave room for.
    Here every frame byte waits in a four-byte window (the FCS is the frame's last four) and
    then in an output register, so the last one leaves once the CRC register holds the whole
    frame's CRC, and its flag is that register compared with the residue: a frame comes out one
    byte time later than through LiteEth's checker, byte for byte the same.

    A frame of four bytes or fewer has no byte before its FCS and comes out as nothing, as
    through LiteEth's. ``error`` pulses for each frame that comes out flagged (bad FCS or a byte
    with ``error``)."""

    def __init__(self):
        self.sink = sink = stream.Endpoint(eth_phy_description(8))
        self.source = source = stream.Endpoint(eth_phy_description(8))
        self.error = Signal()

        # # #

        engine = LiteEthMACCRCEngine(data_width=8, width=LiteEthMACCRC32.width,
                                     polynom=LiteEthMACCRC32.polynom)
        self.submodules += engine
        crc = Signal(LiteEthMACCRC32.width, reset=LiteEthMACCRC32.init)
        fresh = Signal(reset=1)        # the next byte starts a frame (the CRC restarts)
        window = [Signal(8) for _ in range(FCS_BYTES)]        # oldest first
        window_err = [Signal() for _ in range(FCS_BYTES)]
        count = Signal(max=FCS_BYTES + 1)                     # frame bytes in the window
        frame_err = Signal()           # a byte of this frame so far came with ``error``
        out_valid, out_data, out_last, out_err = Signal(), Signal(8), Signal(), Signal()
        bad_fcs = Signal()

        advance = ~out_valid | source.ready                   # the output register is free
        take = sink.valid & advance
        self.comb += [
            sink.ready.eq(advance),
            engine.data.eq(sink.data),
            engine.crc_prev.eq(Mux(fresh, LiteEthMACCRC32.init, crc)),
            bad_fcs.eq(crc != LiteEthMACCRC32.check),
            source.valid.eq(out_valid),
            source.data.eq(out_data),
            source.last.eq(out_last),
            source.last_be.eq(out_last),
            source.error.eq(out_err | (out_last & bad_fcs)),
            self.error.eq(out_valid & source.ready & out_last & (out_err | bad_fcs)),
        ]
        self.sync += [
            If(advance, out_valid.eq(0)),
            If(take,
                crc.eq(engine.crc_next),
                fresh.eq(sink.last),
                [window[i].eq(window[i + 1]) for i in range(FCS_BYTES - 1)],
                [window_err[i].eq(window_err[i + 1]) for i in range(FCS_BYTES - 1)],
                window[-1].eq(sink.data),
                window_err[-1].eq(sink.error),
                count.eq(Mux(fresh, 1, Mux(count == FCS_BYTES, FCS_BYTES, count + 1))),
                frame_err.eq(sink.error | (frame_err & ~fresh)),
                # A full window's oldest byte is the frame's, not the FCS's: out it goes.
                If(~fresh & (count == FCS_BYTES),
                    out_valid.eq(1),
                    out_data.eq(window[0]),
                    out_last.eq(sink.last),
                    out_err.eq(window_err[0] | (sink.last & (frame_err | sink.error))),
                ),
            ),
        ]
