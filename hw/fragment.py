# SPDX-License-Identifier: BSD-2-Clause
"""``FragmentPad``: on a 64-bit receive path, a frame of one beat goes on to LiteEth's FCS checker
as two, the second flagged, so that the checker passes it on as a flagged runt;
``pad_fragments`` puts one into a LiteEth MAC."""

from migen import If, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description


class FragmentPad(LiteXModule):
    """Goes straight before ``liteeth.mac.crc.LiteEthMACCRC32Checker`` on a ``dw``-bit path
    (``dw`` > 32, so a beat can hold a whole FCS).

    That checker takes a frame's first beat and only then looks for its end, so a frame that is
    one beat long (eight bytes or fewer after the SFD: a fragment) leaves it mid-frame, and its
    beat comes out at the front of the next frame, which then fails its FCS. Here such a beat
    goes on without ``last``, and in the next cycle a pad beat follows it: one byte
    (``last_be`` 1), ``last``, every ``error`` bit set. The checker then sees a frame of
    ``dw // 8 + 1`` bytes and gives out all but its last four, flagged: the channel counts a
    runt of ``dw // 8 - 3`` bytes, five on a 64-bit path. Every other beat goes through
    unchanged in the same cycle.

    ``sink.ready`` is low while the pad goes out. On the wire a frame's last beat is followed by
    at least the preamble's beat, which the preamble checker before this stage takes without
    passing on, so the pad never makes the wire wait. The checker's own reset after the pad takes
    one more cycle; the simulated board's wire keeps two idle beats between frames as well."""

    def __init__(self, dw: int = 64):
        assert dw > 32
        self.sink = sink = stream.Endpoint(eth_phy_description(dw))
        self.source = source = stream.Endpoint(eth_phy_description(dw))

        # # #

        first = Signal(reset=1)      # the next beat starts a frame
        pad = Signal()               # the pad beat is due
        self.comb += If(pad,
            source.valid.eq(1),
            source.last.eq(1),
            source.last_be.eq(1),
            source.error.eq(2**len(source.error) - 1),
        ).Else(
            sink.connect(source),
            If(first, source.last.eq(0), source.last_be.eq(0)),
        )
        self.sync += [
            If(sink.valid & sink.ready,
                first.eq(sink.last),
                If(first & sink.last, pad.eq(1)),
            ),
            If(pad & source.ready, pad.eq(0)),
        ]


def pad_fragments(mac, dw: int = 64) -> FragmentPad:
    """A ``FragmentPad`` straight before the FCS checker of ``mac`` (a ``LiteEthMACCore`` whose
    receive side is ``dw`` bits wide in the system clock), before its pipeline is connected."""
    from liteeth.mac.crc import LiteEthMACCRC32Checker
    pipeline = mac.rx_datapath.pipeline
    index = next(i for i, stage in enumerate(pipeline)
                 if isinstance(stage, LiteEthMACCRC32Checker))
    pad = FragmentPad(dw)
    mac.rx_datapath.submodules += pad
    pipeline.insert(index, pad)
    return pad
