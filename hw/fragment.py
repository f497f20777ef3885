# SPDX-License-Identifier: BSD-2-Clause
"""``FragmentPad``: a frame too short for an FCS checker to give anything out (a fragment) goes on
to the checker padded with flagged bytes, so that the checker passes it on as a flagged runt;
``pad_fragments`` puts one into a LiteEth MAC's receive path."""

from migen import If, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description

FCS_BITS = 32


class FragmentPad(LiteXModule):
    """Goes straight before an FCS checker on a ``dw``-bit path (8 or 64 bits): LiteEth's
    ``liteeth.mac.crc.LiteEthMACCRC32Checker`` or ``hw.fcs.RegisteredFCSChecker``.

    Both checkers hold back the last ``ratio = ceil(32 / dw)`` beats of a frame (its FCS) and
    give a beat out only when one more comes in, so a frame of ``ratio`` beats or fewer (on a
    byte-wide path four bytes or fewer after the SFD, on a 64-bit path eight or fewer) gives out
    nothing: a fragment. Worse, LiteEth's checker takes a frame's first beat before it looks for
    the frame's end, so a one-beat frame leaves it mid-frame and is joined to the next frame,
    which then fails its FCS.

    Here a fragment's last beat goes on without ``last``, and pad beats follow it, one a cycle,
    until the frame is ``ratio + 1`` beats long: each carries zero data and every ``error`` bit,
    the last of them ``last`` with one byte (``last_be`` 1). The checker then gives out the
    frame's first beat, flagged: the channel counts a runt of one byte on a byte-wide path, or of
    ``dw // 8 - 3`` bytes (five) on a 64-bit path, where the pad beat's one byte makes a nine-byte
    frame. Every other beat goes through unchanged in the same cycle.

    ``sink.ready`` is low while the pads go out (at most ``ratio`` cycles). On the wire a frame
    is followed by at least its preamble and SFD (eight bytes; a 64-bit wire's one beat), which
    the preamble checker before this stage takes without passing on, so the pads never make the
    wire wait."""

    def __init__(self, dw: int = 64):
        assert dw in (8, 64)
        ratio = -(-FCS_BITS // dw)
        self.sink = sink = stream.Endpoint(eth_phy_description(dw))
        self.source = source = stream.Endpoint(eth_phy_description(dw))

        # # #

        count = Signal(max=ratio + 1)    # the frame's beats so far (saturating at ratio)
        pads = Signal(max=ratio + 1)     # pad beats still to go out
        self.comb += If(pads != 0,
            source.valid.eq(1),
            source.last.eq(pads == 1),
            source.last_be.eq(pads == 1),
            source.error.eq(2**len(source.error) - 1),
        ).Else(
            sink.connect(source),
            If(count != ratio, source.last.eq(0), source.last_be.eq(0)),
        )
        self.sync += [
            If(sink.valid & sink.ready,
                If(sink.last,
                    count.eq(0),
                    If(count != ratio, pads.eq(ratio - count)),
                ).Elif(count != ratio,
                    count.eq(count + 1),
                ),
            ),
            If((pads != 0) & source.ready, pads.eq(pads - 1)),
        ]


def pad_fragments(mac, dw: int = 64, before=None) -> FragmentPad:
    """A ``FragmentPad`` straight before the FCS checker of ``mac`` (a ``LiteEthMACCore``), before
    its pipeline is connected: ``dw`` is the checker's width, ``before`` its class (LiteEth's by
    default). On a byte-wide path the pad works in the checker's clock, ``eth_rx``."""
    from migen import ClockDomainsRenamer
    from liteeth.mac.crc import LiteEthMACCRC32Checker
    kind = before or LiteEthMACCRC32Checker
    pipeline = mac.rx_datapath.pipeline
    index = next(i for i, stage in enumerate(pipeline) if isinstance(stage, kind))
    pad = FragmentPad(dw)
    if dw == 8:
        pad = ClockDomainsRenamer("eth_rx")(pad)
    mac.rx_datapath.submodules += pad
    pipeline.insert(index, pad)
    return pad
