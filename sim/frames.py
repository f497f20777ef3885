# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the simulated board's Ethernet ports (sim/modules/satemu_eth).

Frames are queued into a channel's ingress and enter back to back at one beat per cycle; the
board reports the cycle each frame's last beat was accepted (its arrival) and every frame that
leaves a channel, with the cycle of its first beat.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

FORWARD, RETURN = 0, 1      # forward: in on port B, out on port A; return: A -> B


@dataclass
class Traffic:
    arrivals: dict[int, list[int]] = field(default_factory=lambda: {0: [], 1: []})
    egress: dict[int, list[tuple[int, bytes]]] = field(default_factory=lambda: {0: [], 1: []})


class EthPorts:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.traffic = Traffic()

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, channel: int, frame: bytes, err: bool = False) -> None:
        self.sock.sendall(struct.pack("<cBBH", b"F", channel, int(err), len(frame)) + frame)

    def _parse(self):
        while True:
            if len(self.buf) >= 14 and self.buf[:1] == b"A":
                _, ch, _index, cycle = struct.unpack_from("<cBIQ", self.buf)
                self.traffic.arrivals[ch].append(cycle)
                self.buf = self.buf[14:]
            elif len(self.buf) >= 12 and self.buf[:1] == b"E":
                _, ch, cycle, length = struct.unpack_from("<cBQH", self.buf)
                if len(self.buf) < 12 + length:
                    return
                self.traffic.egress[ch].append((cycle, self.buf[12:12 + length]))
                self.buf = self.buf[12 + length:]
            else:
                return

    def wait(self, arrivals: dict[int, int], egress: dict[int, int], timeout: float = 120.0):
        """Collect reports until each channel has the given numbers of arrivals and egress frames."""
        deadline = time.monotonic() + timeout
        t = self.traffic
        while any(len(t.arrivals[c]) < n for c, n in arrivals.items()) or \
                any(len(t.egress[c]) < n for c, n in egress.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"board reported {[len(t.arrivals[c]) for c in (0, 1)]} arrivals "
                                   f"and {[len(t.egress[c]) for c in (0, 1)]} egress frames")
            self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            self.buf += self.sock.recv(65536)
            self._parse()
        return t


def run_traffic(url: str, eth_port: int, sent: dict[int, list[tuple[bytes, bool]]],
                timeout: float = 300.0):
    """Send ``sent`` (per channel: frames and their bad-FCS flags) into a running board, wait
    for every frame the reference model says leaves, and return (traffic, models): what the
    board reported and ``satemu.channel_model.simulate`` on the board's own arrivals, with the
    profiles read back from the firmware."""
    from satemu.channel_model import ChannelRegs, Fate, simulate
    from satemu.device import Device

    with Device(url) as dev:
        params = dev.params()
        regs = {ch: ChannelRegs(**dev.get_profile(ch), mem_size=dev.info["mem_words"])
                for ch in sent}
    with EthPorts(eth_port, timeout=timeout) as eth:
        for ch, frames in sent.items():
            for frame, err in frames:
                eth.send(ch, frame, err)
        traffic = eth.wait({ch: len(frames) for ch, frames in sent.items()}, {}, timeout)
        models = {ch: simulate(zip(traffic.arrivals[ch], [len(f) for f, _ in frames],
                                   [e for _, e in frames]), regs[ch], params)
                  for ch, frames in sent.items()}
        eth.wait({}, {ch: sum(r.fate == Fate.DELIVERED for r in models[ch].frames)
                      for ch in sent}, timeout)
    return traffic, models


def expected_egress(sent, models):
    """Per channel, the (egress cycle, bytes) the model says leave, in order."""
    from satemu.channel_model import Fate
    return {ch: [(r.egress, f) for (f, _), r in zip(sent[ch], models[ch].frames)
                 if r.fate == Fate.DELIVERED] for ch in sent}
