# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the simulated board's Ethernet wire (sim/modules/satemu_eth).

Frames go onto port A's or port B's wire, preamble to FCS, at a chosen cycle or as soon as the
wire is free; the board reports when each frame started on the wire, when each channel took it
(its arrival) or discarded it for want of room (overrun), and every frame that leaves a port,
with the cycle it started to leave its channel and the cycle it reached the wire.
"""

from __future__ import annotations

import socket
import struct
import time

from satemu.model.board import (CHANNEL_OUT_OF, EGRESS_PORT, FORWARD, GAP_CYCLES, INGRESS_PORT,
    PORT_A, PORT_B, RETURN, RX_LATENCY, TX_LATENCY, Egress, Traffic, arrival_from_wire,
    wire_cycles)
from satemu.base.ether import padded, to_wire
from satemu.base.terminals import frame_key
from satemu.model.ecn import ce_marked, ecn_kind


# The most cycles one lock-step exchange lets the board run (EthPorts.run): 0.67 s of the
# simulated board's 6.25 MHz, a few seconds of Verilator even on a loaded machine.
RUN_PIECE = 1 << 22


class EthPorts:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # lock-step: no Nagle
        self.buf = b""
        self.traffic = Traffic()
        self._now = self._halted = None
        self._at = None                 # the cycle the board halted before, while it is held

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, port: int, wire: bytes, at: int = 0) -> None:
        """Put ``wire`` (preamble to FCS) on a port's wire at cycle ``at`` or as soon as the wire
        is free after it."""
        self.sock.sendall(struct.pack("<cBQH", b"F", port, at, len(wire)) + wire)

    def now(self) -> int:
        """The board's present cycle."""
        self._now = None
        self.sock.sendall(b"T")
        while self._now is None:
            self.buf += self.sock.recv(65536)
            self._parse()
        return self._now

    def run(self, limit: int, halt_on_egress: bool = True) -> int:
        """Lock-step: let the board run until the cycle before ``limit`` (and, with
        ``halt_on_egress``, no further than the end of the next frame to leave a port); returns
        the cycle it halted before. Every report of the cycles run has arrived by then.

        A long run goes in pieces of at most RUN_PIECE cycles, each ending in a halt (which
        changes nothing on the board), so that the socket's timeout bounds one piece's wall
        time, not the whole run's: an endpoint's next timer may be a second of link time away,
        tens of seconds of Verilator."""
        at = self._at if self._at is not None else self.now()
        out = sum(map(len, self.traffic.egress.values()))
        while True:
            at = self._run_once(max(1, min(limit, at + RUN_PIECE)), halt_on_egress)
            if at >= limit or (halt_on_egress and
                               sum(map(len, self.traffic.egress.values())) != out):
                return at

    def _run_once(self, limit: int, halt_on_egress: bool) -> int:
        self._halted = None
        self.sock.sendall(struct.pack("<cQB", b"R", limit, int(halt_on_egress)))
        while self._halted is None:
            self.buf += self.sock.recv(65536)
            self._parse()
        self._at = self._halted
        return self._halted

    def hold(self) -> int:
        """Lock-step: halt the board at once; returns the cycle it halted before. Frames sent
        while it is held, at that cycle or later, start exactly when they say, however long the
        host takes to send them; ``release`` lets it go on."""
        return self.run(1, halt_on_egress=False)

    def release(self) -> None:
        """Leave lock-step: the board runs freely again."""
        self._at = None
        self.sock.sendall(struct.pack("<cQB", b"R", 0, 0))

    def _parse(self):
        t = self.traffic
        while self.buf:
            kind = self.buf[:1]
            if kind in (b"T", b"H") and len(self.buf) >= 9:
                value = struct.unpack_from("<Q", self.buf, 1)[0]
                if kind == b"T":
                    self._now = value
                else:
                    self._halted = value
                self.buf = self.buf[9:]
            elif kind == b"W" and len(self.buf) >= 14:
                _, port, _index, cycle = struct.unpack_from("<cBIQ", self.buf)
                t.wire_in[port].append(cycle)
                self.buf = self.buf[14:]
            elif kind in (b"A", b"O") and len(self.buf) >= 10:
                _, ch, cycle = struct.unpack_from("<cBQ", self.buf)
                t.events[ch].append((cycle, kind.decode()))
                self.buf = self.buf[10:]
            elif kind == b"D" and len(self.buf) >= 11:
                _, ch, fate, _cycle = struct.unpack_from("<cBBQ", self.buf)
                t.fates[ch].append(fate)
                self.buf = self.buf[11:]
            elif kind == b"E" and len(self.buf) >= 20:
                _, port, start, wire, length = struct.unpack_from("<cBQQH", self.buf)
                if len(self.buf) < 20 + length:
                    return
                t.egress[CHANNEL_OUT_OF[port]].append(Egress(start, wire, self.buf[20:20 + length]))
                self.buf = self.buf[20 + length:]
            elif kind in (b"T", b"H", b"W", b"A", b"O", b"D", b"E"):
                return                                   # incomplete
            else:
                raise RuntimeError(f"unexpected byte {self.buf[:1]!r} from the Ethernet module")

    def wait(self, events: dict[int, int], egress: dict[int, int], timeout: float = 120.0,
             fates: dict[int, int] | None = None):
        """Collect reports until each channel has the given numbers of ingress events (taken or
        discarded), of frames out and of fates decided."""
        deadline = time.monotonic() + timeout
        t = self.traffic
        fates = fates or {}
        while any(len(t.events[c]) < n for c, n in events.items()) or \
                any(len(t.egress[c]) < n for c, n in egress.items()) or \
                any(len(t.fates[c]) < n for c, n in fates.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"board reported {[len(t.events[c]) for c in (0, 1)]} ingress "
                                   f"events and {[len(t.egress[c]) for c in (0, 1)]} frames out")
            self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            self.buf += self.sock.recv(65536)
            self._parse()
        return t


def run_traffic(url: str, eth_port: int, sent: dict[int, list[tuple[bytes, bool]]],
                timeout: float = 300.0, bad_preamble: dict[int, set[int]] | None = None,
                load: float = 0.25, tables: dict | None = None):
    """Send ``sent`` (per channel: frames and their bad-FCS flags) into a running board's ports,
    at ``load`` times the wire's rate (1.0: back to back), wait for every frame the reference
    model says leaves, and return
    (traffic, models, taken): what the board reported, ``satemu.model.channel.simulate`` on the
    arrivals of the frames each channel took (with the profiles read back from the firmware),
    and the indices of those frames. Frames listed in ``bad_preamble`` go out without an SFD;
    the MAC must discard them before the channel. ``tables``: each channel's terminal table
    (satemu.base.terminals.TerminalTable, by channel), where the load had one."""
    from satemu.base.boards import BOARDS, DEFAULT_BOARD
    from satemu.model.channel import simulate
    from satemu.base.params import ChannelRegs, Fate
    from satemu.box.device import Device

    bad_preamble = bad_preamble or {}
    board = BOARDS[DEFAULT_BOARD]
    with Device(url) as dev:
        reported = dev.hardware().limits()
        if reported != board.hardware.limits():
            raise RuntimeError(f"{url} is not the simulated board: it reports {reported}")
        regs = {ch: ChannelRegs(**dev.get_profile(ch), mem_size=dev.info["mem_words"])
                for ch in sent}
        params = {ch: board.channel_params(ch) for ch in sent}
        # A BoD channel's superframe 0 began in the cycle after the profile's commit.
        bod_start = {ch: dev.bod_trace(max_records=0).start if regs[ch].bod else 0 for ch in sent}
    with EthPorts(eth_port, timeout=timeout) as eth:
        expect_events = {}
        start = eth.hold() + 200_000
        for ch, frames in sent.items():
            bad = bad_preamble.get(ch, set())
            at = start
            for i, (frame, err) in enumerate(frames):
                wire = to_wire(frame, bad_fcs=err, bad_preamble=i in bad)
                eth.send(INGRESS_PORT[ch], wire, at if load < 1 else 0)
                at += int(wire_cycles(len(wire)) / load)
            expect_events[ch] = len(frames) - len(bad)
        eth.release()
        traffic = eth.wait(expect_events, {}, timeout)
        models, taken = {}, {}
        for ch, frames in sent.items():
            bad = bad_preamble.get(ch, set())
            reaching = [i for i in range(len(frames)) if i not in bad]   # past the MAC, in order
            events = traffic.events[ch]
            taken[ch] = [i for i, (_, kind) in zip(reaching, events) if kind == "A"]
            table = (tables or {}).get(ch)
            keys = [frame_key(frames[i][0], table.match, source=ch == RETURN)
                    if table is not None else None for i in taken[ch]]
            kinds = [ecn_kind(frames[i][0]) for i in taken[ch]]
            models[ch] = simulate(zip(traffic.arrivals(ch), [len(frames[i][0]) for i in taken[ch]],
                                      [frames[i][1] for i in taken[ch]], keys, kinds), regs[ch],
                                  params[ch], bod_start=bod_start[ch], table=table)
        eth.wait({}, {ch: sum(r.fate == Fate.DELIVERED for r in models[ch].frames)
                      for ch in sent}, timeout)
    return traffic, models, taken


def expected_egress(sent, models, taken):
    """Per channel, the (start cycle, frame as the MAC sends it) the model says leave, in the
    order they leave (with terminals, not always the order they came in): a copy duplication
    made as its original, a frame marked CE or corrupted with its bytes changed so."""
    from satemu.base.params import Fate
    from satemu.model.corrupt import flipped

    def out(frame, r):
        return padded(flipped(ce_marked(frame, ecn_kind(frame)) if r.ce else frame, r.flip))
    return {ch: sorted((r.egress, out(sent[ch][taken[ch][k]][0], r))
                       for k, r in zip(models[ch].offered(), models[ch].frames)
                       if r.fate == Fate.DELIVERED) for ch in sent}


def observed_egress(traffic, ch):
    """What left a channel: (start cycle, frame) per frame, for comparison with the model."""
    return [(e.start, e.frame) for e in traffic.egress[ch]]
