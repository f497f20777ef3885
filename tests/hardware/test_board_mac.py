# SPDX-License-Identifier: BSD-2-Clause
"""The boards' MAC (hw.ethport.EthPort on a byte-wide PHY, as ecp5_rgmii_port builds it) in
Migen's simulator, with three clocks: the system clock at 55 MHz and the PHY's two at 125 MHz.

Transmit: frames offered as 64-bit channel beats leave on the wire exactly as a PHY must send
them (preamble and SFD, the frame padded to 60 bytes, its FCS; ``satemu.base.ether``), back to back
with exactly the 12-byte inter-frame gap, byte for byte and cycle for cycle. Receive: wire bytes
come out as channel beats, FCS stripped, a bad FCS flagged on the last beat."""

import random

import pytest
from migen import ClockDomain, Module, run_simulation
from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description

from hw.ethport import DW, EthPort
from satemu.base.ether import PREAMBLE, padded, to_wire

GAP = 12                                   # idle byte times between frames (IEEE 802.3)
# Frames without FCS; the first two are padded, the last is longer than either clock-crossing
# FIFO holds (42 beats against 32 or 16).
SIZES = (14, 59, 60, 61, 64, 333)


class ModelPHY(Module):
    """A byte-wide PHY whose transmit side always takes a byte, like RGMII's."""

    dw = 8

    def __init__(self):
        self.sink = stream.Endpoint(eth_phy_description(8))     # MAC -> wire
        self.source = stream.Endpoint(eth_phy_description(8))   # wire -> MAC
        self.comb += self.sink.ready.eq(1)


class Bench(Module):
    def __init__(self, paced_cdc: bool):
        self.clock_domains.cd_sys = ClockDomain()
        self.clock_domains.cd_eth_tx = ClockDomain()
        self.clock_domains.cd_eth_rx = ClockDomain()
        self.submodules.phy = ModelPHY()
        # The Versa-5G's ports (LiteEth's crossings, 32 beats), the Colorlight's (paced, 16).
        self.submodules.port = EthPort(self.phy, with_sys_datapath=False,
                                       cdc_depth=16 if paced_cdc else 32, paced_cdc=paced_cdc)


CLOCKS = {"sys": 18, "eth_tx": 8, "eth_rx": 8}   # periods in ns: 55.6 and 125 MHz


def beats(frame: bytes):
    """A frame as channel beats: (data, last, byte count of the last beat)."""
    for off in range(0, len(frame), DW // 8):
        chunk = frame[off:off + DW // 8]
        last = off + DW // 8 >= len(frame)
        yield int.from_bytes(chunk, "little"), last, len(chunk) if last else 0


@pytest.mark.parametrize("paced_cdc", [False, True])
def test_frames_leave_on_the_wire_exactly_with_the_gap_between(paced_cdc):
    frames = [random.Random(n).randbytes(n) for n in SIZES]
    bench = Bench(paced_cdc)
    port, phy = bench.port, bench.phy
    wire = []                        # per eth_tx cycle: a byte, or None when idle
    done = []

    def channel():
        for frame in frames:
            for data, last, count in beats(frame):
                yield port.tx_payload.eq(data | (last << DW) | (count << (DW + 1)))
                yield port.tx_valid.eq(1)
                yield
                while not (yield port.tx_ready):
                    yield
        yield port.tx_valid.eq(0)
        done.append(True)

    def monitor():
        expected = sum(len(to_wire(padded(f))) for f in frames)
        while sum(b is not None for b in wire) < expected:
            yield
            wire.append((yield phy.sink.data) if (yield phy.sink.valid) else None)
        for _ in range(40):            # nothing more leaves
            yield
            wire.append((yield phy.sink.data) if (yield phy.sink.valid) else None)

    run_simulation(bench, {"sys": channel(), "eth_tx": monitor()}, clocks=CLOCKS)
    assert done
    start = next(i for i, b in enumerate(wire) if b is not None)
    expected = []
    for frame in frames:
        expected += list(to_wire(padded(frame))) + [None] * GAP
    got = wire[start:]
    assert got[:len(expected) - GAP] == expected[:-GAP]          # every byte, every gap exact
    assert all(b is None for b in got[len(expected) - GAP:])


@pytest.mark.parametrize("paced_cdc", [False, True])
def test_wire_bytes_arrive_as_channel_beats_with_a_bad_fcs_flagged(paced_cdc):
    """Each frame once, its FCS stripped and a bad one flagged; a fragment (four bytes or fewer
    after the SFD) as its first byte, flagged (hw.fragment), and the frame after it whole."""
    frames = [random.Random(100 + n).randbytes(n) for n in SIZES]
    bad = {2, 5}                                                  # these get a corrupt FCS
    wires = [to_wire(frame, bad_fcs=i in bad) for i, frame in enumerate(frames)]
    want = [(frame, i in bad) for i, frame in enumerate(frames)]
    for at, n in ((1, 1), (3, 4), (5, 2), (7, 3), (9, 6)):        # fragments between frames
        tail = random.Random(n).randbytes(n)
        wires.insert(at, PREAMBLE + tail)
        want.insert(at, (tail[:1] if n <= 4 else tail[:-4], True))
    bench = Bench(paced_cdc)
    port, phy = bench.port, bench.phy
    got = []

    def wire():
        for data in wires:
            for k, byte in enumerate(data):
                yield phy.source.data.eq(byte)
                yield phy.source.valid.eq(1)
                yield phy.source.last.eq(k == len(data) - 1)
                yield
            yield phy.source.valid.eq(0)
            yield phy.source.last.eq(0)
            for _ in range(GAP):
                yield

    def channel():
        frame = bytearray()
        yield port.rx_ready.eq(1)
        # Bounded, so that a frame that never comes out fails the test rather than hanging it.
        limit = 4 * sum(len(w) + GAP for w in wires)
        while len(got) < len(want) and limit:
            limit -= 1
            yield
            if not (yield port.rx_valid):
                continue
            payload = yield port.rx_payload
            data, last = payload & ((1 << DW) - 1), (payload >> DW) & 1
            count, err = (payload >> (DW + 1)) & 0xF, (payload >> (DW + 5)) & 1
            frame += data.to_bytes(DW // 8, "little")[:count if last else DW // 8]
            if last:
                got.append((bytes(frame), bool(err)))
                frame = bytearray()

    run_simulation(bench, {"eth_rx": wire(), "sys": channel()}, clocks=CLOCKS)
    assert got == want
