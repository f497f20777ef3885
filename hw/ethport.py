# SPDX-License-Identifier: BSD-2-Clause
"""The box's Ethernet ports: a LiteEth MAC per port, used raw at L2, between a PHY and the channels.

Each port is PHY -> ``LiteEthMACCore`` (preamble, FCS, padding, inter-frame gap) -> channel beats.
The MAC's receive side feeds the ingress of the channel that leaves by the other port; its
transmit side takes the egress of the channel that arrives by the other port. Nothing else is
connected to a port: no frame can reach the CPU or the bus.

``SimEthPHY`` is the simulated board's PHY: eight bytes of wire per cycle. At the simulated
board's nominal 6.25 MHz that is 400 Mbit/s (1.6 times the fastest built-in profile's rate).
``ecp5_rgmii_port`` is a board's: an ECP5 RGMII PHY (1 Gbit/s, a byte per 125 MHz cycle); the
MAC's preamble, FCS and padding work a byte at a time in the PHY's clocks, and its FIFOs and
width converters bring 64-bit beats to the system clock.
"""

from __future__ import annotations

from migen import Cat, ClockDomain, ClockDomainsRenamer, ClockSignal, If, Mux, ResetSignal, Signal

from litex.gen import LiteXModule

from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description
from liteeth.mac.core import LiteEthMACCore

from satemu.base.params import BEAT, BEAT_BITS, beat_field

DW = beat_field("data").stop - beat_field("data").start   # the beat's data, and the MAC's width


class SimEthPHY(LiteXModule):
    """A 64-bit PHY for simulation. A frame on the wire is its preamble and SFD (one beat), its
    bytes and FCS, then idle cycles; ``last_be`` (one-hot) marks the last byte of the last beat.
    The wire never waits: transmit is always ready and received beats are taken as they come."""

    dw = DW
    with_preamble_crc = True
    with_padding = True

    def __init__(self, pads):
        self.sink = sink = stream.Endpoint(eth_phy_description(DW))
        self.source = source = stream.Endpoint(eth_phy_description(DW))
        self.comb += [
            sink.ready.eq(1),
            pads.tx_valid.eq(sink.valid),
            pads.tx_data.eq(sink.data),
            pads.tx_last.eq(sink.last),
            pads.tx_last_be.eq(sink.last_be),
        ]
        self.sync += [
            source.valid.eq(pads.rx_valid),
            source.data.eq(pads.rx_data),
            source.last.eq(pads.rx_last),
            source.last_be.eq(pads.rx_last_be),
        ]


class SimEthClocks(LiteXModule):
    """The MACs' ``eth_rx`` and ``eth_tx`` domains, shared by both ports: in the simulated board
    the wire runs on the system clock (LiteEth still crosses domains through its FIFOs)."""

    def __init__(self):
        self.cd_eth_rx = ClockDomain()
        self.cd_eth_tx = ClockDomain()
        for cd in (self.cd_eth_rx, self.cd_eth_tx):
            self.comb += [cd.clk.eq(ClockSignal("sys")), cd.rst.eq(ResetSignal("sys"))]


class EthPort(LiteXModule):
    """A MAC on ``phy``. ``rx_*`` carries received frames as channel beats and ``tx_*`` takes
    beats to send, each payload flattened as ``satemu.base.params.BEAT`` lays a beat out.

    ``with_sys_datapath``: the MAC's preamble, FCS and padding logic works at the system side's
    64 bits in the system clock (the simulated board, whose wire is 64 bits a cycle), or else at
    the PHY's width in the PHY's clocks, with LiteEth's FIFOs and width converters between
    (RGMII: 8 bits at 125 MHz; a 64-bit FCS engine per byte count would cost thousands of
    LUTs per port). ``cdc_depth``: the clock-crossing FIFOs' depth in beats, each way;
    ``paced_cdc``: ``hw.cdc.PacedAsyncFIFO`` in their place, its wire side paced (at most a beat
    every other wire cycle, registered flags, short paths at 125 MHz), with an FCS checker whose
    flag comes from registers (``_registered_fcs_check``) and a register stage before the
    preamble inserter (``_cut_before_preamble``): the Colorlight's slower FPGA. On either
    byte-wide path a register stage follows the FCS checker (``_cut_after_fcs_check``).

    A fragment (a frame of four bytes or fewer after the SFD, or on the 64-bit path eight) reaches
    the channel as a runt flagged ``error``, never lost and never joined to the next frame:
    ``hw.fragment.FragmentPad`` goes before the FCS checker on either path."""

    def __init__(self, phy, with_sys_datapath: bool = True, cdc_depth: int = 32,
                 paced_cdc: bool = False):
        self.mac = mac = LiteEthMACCore(phy=phy, dw=DW, with_sys_datapath=with_sys_datapath,
                                        tx_cdc_depth=cdc_depth, rx_cdc_depth=cdc_depth)
        if not with_sys_datapath:
            if paced_cdc:
                self._paced_crossings(mac, cdc_depth)
                self._registered_fcs_check(mac)
                self._cut_before_preamble(mac)
            self._cut_after_fcs_check(mac)
            self._cut_tx_ready(mac)
            self._last_be_before_fcs_check(mac)
            self._pad_fragments(mac, 8, paced_cdc)
        else:
            self._pad_fragments(mac, DW, False)
        # Received frames, FCS stripped; ``error`` flags a bad FCS on the last beat.
        self.rx_valid, self.rx_ready = Signal(), Signal()
        self.rx_payload = Signal(BEAT_BITS)
        rx = mac.source
        nbytes = Signal(len(self.rx_payload[beat_field("nbytes")]))
        # The lowest lane flagged wins: the byte-wide path's width converter writes only the
        # lanes a beat fills, so a frame of one beat (a fragment's runt) leaves the lanes above
        # its last byte as the frame before had them, ``last_be`` included.
        for i in reversed(range(DW // 8)):
            self.comb += If(rx.last_be[i], nbytes.eq(i + 1))
        # An end without a byte count (nbytes 0) reaches the channel as malformed.
        fields = {"data": rx.data, "last": rx.last, "nbytes": Mux(rx.last, nbytes, 0),
                  "err": rx.error != 0}
        self.comb += [
            self.rx_valid.eq(rx.valid),
            rx.ready.eq(self.rx_ready),
            self.rx_payload.eq(Cat(*(fields[name] for name, _ in BEAT))),
        ]
        # Frames to send: the padding inserter pads runts, the CRC inserter appends the FCS.
        self.tx_valid, self.tx_ready = Signal(), Signal()
        self.tx_payload = Signal(BEAT_BITS)
        tx = mac.sink
        last = self.tx_payload[beat_field("last")]
        count = self.tx_payload[beat_field("nbytes")]
        last_be = Signal(DW // 8)
        for i in range(DW // 8):
            self.comb += If(last & (count == i + 1), last_be.eq(1 << i))
        self.comb += [
            tx.valid.eq(self.tx_valid),
            self.tx_ready.eq(tx.ready),
            tx.data.eq(self.tx_payload[beat_field("data")]),
            tx.last.eq(last),
            tx.last_be.eq(last_be),
            tx.error.eq(0),
        ]

    @staticmethod
    def _replace_stage(datapath, kind, make):
        """Put ``make(old)`` in place of the stage of ``datapath``'s pipeline that is a ``kind``:
        the old stage leaves the datapath altogether (its submodules and its pipeline), before
        the pipeline is connected."""
        pipeline = datapath.pipeline
        index = next(i for i, stage in enumerate(pipeline) if isinstance(stage, kind))
        old = pipeline[index]
        pipeline[index] = make(old)
        datapath._submodules[:] = [(n, m) for n, m in datapath._submodules if m is not old]
        datapath.submodules += pipeline[index]

    def _paced_crossings(self, mac, depth: int):
        """Put a ``hw.cdc.paced_crossing`` in place of each of LiteEth's clock-domain crossings:
        transmit from ``sys`` to ``eth_tx``, paced on its read side, receive from ``eth_rx`` to
        ``sys``, paced on its write side."""
        from hw.cdc import paced_crossing
        for datapath, cd_from, cd_to, paced in ((mac.tx_datapath, "sys", "eth_tx", "read"),
                                               (mac.rx_datapath, "eth_rx", "sys", "write")):
            self._replace_stage(datapath, stream.ClockDomainCrossing,
                                lambda old: paced_crossing(old.sink.description, cd_from, cd_to,
                                                           depth, paced))

    def _registered_fcs_check(self, mac):
        """``hw.fcs.RegisteredFCSChecker`` in place of LiteEth's FCS checker, whose error flag
        is the incoming byte, the CRC engine and a comparison in one wire cycle
        (docs/hardware.md, "Colorlight 5A-75B"). Its error pulse, and so LiteEth's
        ``crc_errors`` count, which nothing reads (a bad FCS reaches the channel as
        ``drop_error``), goes with LiteEth's checker."""
        from liteeth.mac.crc import LiteEthMACCRC32Checker
        from hw.fcs import RegisteredFCSChecker
        self._replace_stage(mac.rx_datapath, LiteEthMACCRC32Checker,
                            lambda old: ClockDomainsRenamer("eth_rx")(RegisteredFCSChecker()))

    @staticmethod
    def _pad_fragments(mac, dw: int, registered_check: bool):
        """``hw.fragment.FragmentPad`` straight before the FCS checker: LiteEth's, or
        ``hw.fcs.RegisteredFCSChecker`` where that replaced it."""
        from hw.fcs import RegisteredFCSChecker
        from hw.fragment import pad_fragments
        pad_fragments(mac, dw, before=RegisteredFCSChecker if registered_check else None)

    def _cut_before_preamble(self, mac):
        """A register stage that holds ``ready`` as well as ``valid`` between the transmit side's
        FCS inserter and its preamble inserter, so that ``ready`` no longer goes on from the
        preamble inserter's state through the FCS inserter's output stage into the reset of its
        CRC register in one wire cycle. The bytes on the wire and the gaps are unchanged; a
        frame leaves one cycle later."""
        from liteeth.mac.preamble import LiteEthMACPreambleInserter
        pipeline = mac.tx_datapath.pipeline
        index = next(i for i, stage in enumerate(pipeline)
                     if isinstance(stage, LiteEthMACPreambleInserter))
        cut = ClockDomainsRenamer("eth_tx")(
            stream.Buffer(eth_phy_description(8), pipe_valid=True, pipe_ready=True))
        self.submodules += cut
        pipeline.insert(index, cut)

    def _cut_after_fcs_check(self, mac):
        """A register stage (valid and data) straight after the FCS checker (LiteEth's, or
        ``hw.fcs.RegisteredFCSChecker`` where that replaced it), on the receive side, so that the
        checker's error flag, the end of a 32-bit comparison, does not go on through the
        last-byte stage into the width converter's register in the same wire cycle. Frames
        reach the system side one wire cycle later."""
        from liteeth.mac.crc import LiteEthMACCRC32Checker
        from hw.fcs import RegisteredFCSChecker
        pipeline = mac.rx_datapath.pipeline
        index = next(i for i, stage in enumerate(pipeline)
                     if isinstance(stage, (RegisteredFCSChecker, LiteEthMACCRC32Checker)))
        cut = ClockDomainsRenamer("eth_rx")(stream.Buffer(eth_phy_description(8), pipe_valid=True))
        self.submodules += cut
        pipeline.insert(index + 1, cut)

    def _cut_tx_ready(self, mac):
        """On the byte-wide datapath, LiteEth's transmit stages pass ``ready`` on combinationally
        from the PHY, through the gap, preamble, FCS, padding and last-byte stages and the width
        converter, to the clock-crossing FIFO's read, too long a chain for the wire clock
        (docs/hardware.md, "Timing closure on the Versa-5G"). A register stage that holds
        ``ready`` as well as ``valid`` goes on each side of the padding inserter, and a 64-bit
        one straight after the FIFO; the bytes on the wire, and the gaps between frames, are
        unchanged (tests/hardware/test_board_mac.py), each frame leaves three wire cycles
        later."""
        from liteeth.mac.padding import LiteEthMACPaddingInserter
        from hw.cdc import PacedCrossing
        pipeline = mac.tx_datapath.pipeline
        cdc, pad = (next(i for i, stage in enumerate(pipeline) if isinstance(stage, kind))
                    for kind in ((stream.ClockDomainCrossing, PacedCrossing),
                                 LiteEthMACPaddingInserter))
        # From the back, so that each index still names the place meant.
        for index, width in ((pad + 1, 8), (pad, 8), (cdc + 1, DW)):
            cut = ClockDomainsRenamer("eth_tx")(
                stream.Buffer(eth_phy_description(width), pipe_valid=True, pipe_ready=True))
            self.submodules += cut
            pipeline.insert(index, cut)

    def _last_be_before_fcs_check(self, mac):
        """A byte-wide PHY marks a frame's end with ``last`` only; LiteEth (2024.12) derives
        ``last_be`` from it after the FCS checker, whose CRC engine flags an error only in a byte
        lane ``last_be`` selects, so a bad FCS went through unflagged and the channel would have
        forwarded the frame. So that stage also goes first, straight after the PHY."""
        from liteeth.mac.last_be import LiteEthMACRXLastBE
        stage = ClockDomainsRenamer("eth_rx")(LiteEthMACRXLastBE(8))
        self.submodules += stage
        mac.rx_datapath.pipeline.insert(1, stage)


def ecp5_rgmii_port(clock_pads, pads, domain: str, tx_delay: float, rx_delay: float,
                    cdc_depth: int = 32, paced_cdc: bool = False):
    """An ECP5 RGMII PHY on ``pads`` and an ``EthPort`` on it; returns (phy, port). Their wire
    clock domains are named ``{domain}_rx`` and ``{domain}_tx``, so that each port of a box has
    its own (LiteEth names them ``eth_rx`` and ``eth_tx``). ``tx_delay`` and ``rx_delay`` (s)
    are the clock skews the FPGA adds, 0 where the PHY chip adds them itself; ``cdc_depth`` the
    depth of the MAC's clock-crossing FIFOs and ``paced_cdc`` their kind (``EthPort``)."""
    from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

    rename = ClockDomainsRenamer({"eth_rx": f"{domain}_rx", "eth_tx": f"{domain}_tx"})
    phy = rename(LiteEthPHYRGMII(clock_pads=clock_pads, pads=pads, tx_delay=tx_delay,
                                 rx_delay=rx_delay))
    return phy, rename(EthPort(phy, with_sys_datapath=False, cdc_depth=cdc_depth,
                               paced_cdc=paced_cdc))
