# SPDX-License-Identifier: BSD-2-Clause
"""The whole simulated board's frame path as a model: both ports' wires and MACs, both channels.

:class:`BoardModel` has the surface of ``sim.frames.EthPorts`` (the host side of the simulated
board's Ethernet wire): frames go onto a port's wire at a cycle, :meth:`BoardModel.run` runs to a
cycle in lock-step and halts at the end of every cycle in which a frame's last beat left a port,
and :attr:`BoardModel.traffic` holds what the wire reported. Nothing runs in Verilator: the wire's
timing and the MACs' fixed latencies are the simulated board's (measured, and held by the system
tests), and each channel is ``satemu.model.channel.Channel``, which the gateware equals cycle for
cycle. So for the same traffic the model reports what the board reports, frame for frame, with
two exceptions it cannot predict and reports instead (:meth:`BoardModel.exactness`): a channel
discarding a frame for want of room in its ingress FIFO (overrun, which needs a burst on the wire
longer than the FIFO absorbs), and a frame leaving late (which needs a memory slower than the
traffic). See docs/architecture.md, "Two engines".
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import cached_property

from satemu.base.boards import BOARDS, DEFAULT_BOARD, Board
from satemu.model.channel import Channel, ModelResult
from satemu.model.corrupt import flipped
from satemu.model.ecn import ce_marked, ecn_kind
from satemu.base.ether import FCS_BYTES, PREAMBLE, fcs, from_wire, padded
from satemu.base.params import FATE_COPY, ChannelRegs, Fate, beat_field
from satemu.base.terminals import TerminalTable, frame_key

__all__ = ["FORWARD", "RETURN", "PORT_A", "PORT_B", "INGRESS_PORT", "EGRESS_PORT",
           "CHANNEL_OUT_OF", "GAP_CYCLES", "RX_LATENCY", "TX_LATENCY", "arrival_from_wire",
           "wire_cycles", "Egress", "Traffic", "BoardModel"]

FORWARD, RETURN = 0, 1      # forward: in on port B, out on port A; return: A -> B
PORT_A, PORT_B = 0, 1
INGRESS_PORT = {FORWARD: PORT_B, RETURN: PORT_A}
EGRESS_PORT = {FORWARD: PORT_A, RETURN: PORT_B}
CHANNEL_OUT_OF = {PORT_A: FORWARD, PORT_B: RETURN}
CHANNEL_INTO = {PORT_B: FORWARD, PORT_A: RETURN}

# The simulated board's wire (sim/modules/satemu_eth) carries eight bytes a cycle and keeps
# GAP_CYCLES idle cycles between frames (the 12-byte gap, in whole beats).
GAP_CYCLES = 2
# The MACs' fixed latencies on the simulated board, in cycles (measured; the system tests hold
# them): a frame of L bytes (no FCS) whose preamble is on the wire in cycle w arrives at its
# channel in w + ceil(L/8) + RX_LATENCY; a frame that starts to leave its channel in cycle s has
# its preamble on the wire in s + TX_LATENCY.
RX_LATENCY = 6
TX_LATENCY = 6
# A frame of one beat (BEAT_BYTES or fewer after the SFD) reaches its channel as a runt of
# FRAGMENT_RUNT bytes flagged as an error (hw.fragment.FragmentPad).
BEAT_BYTES = (beat_field("data").stop - beat_field("data").start) // 8
FRAGMENT_RUNT = BEAT_BYTES + 1 - FCS_BYTES


def arrival_from_wire(wire_start: int, length: int) -> int:
    """The channel's arrival cycle of a frame of ``length`` bytes put on the wire at ``wire_start``."""
    return wire_start + (length + 7) // 8 + RX_LATENCY


def wire_beats(wire_bytes: int) -> int:
    """Cycles a frame of ``wire_bytes`` (preamble to FCS) is on the simulated wire."""
    return (wire_bytes + 7) // 8


def wire_cycles(wire_bytes: int) -> int:
    """Cycles a frame of ``wire_bytes`` (preamble to FCS) holds the simulated wire, gap included."""
    return wire_beats(wire_bytes) + GAP_CYCLES


@dataclass
class Egress:
    start: int          # cycle the frame started to leave its channel
    wire: int           # cycle its first beat (the preamble) was on the port's wire
    data: bytes         # the wire's bytes, preamble to FCS

    @cached_property
    def _split(self) -> tuple[bytes, bool]:
        return from_wire(self.data)

    @property
    def frame(self) -> bytes:
        return self._split[0]

    @property
    def wire_ok(self) -> bool:
        return self._split[1]

    @property
    def end(self) -> int:
        """The cycle after the one in which its last beat left the port."""
        return self.wire + wire_beats(len(self.data))


@dataclass
class Traffic:
    wire_in: dict[int, list[int]] = field(default_factory=lambda: {0: [], 1: []})   # per port
    events: dict[int, list[tuple[int, str]]] = field(default_factory=lambda: {0: [], 1: []})
    egress: dict[int, list[Egress]] = field(default_factory=lambda: {0: [], 1: []})  # per channel
    # Per channel, the fate (a satemu.base.params.Fate value) of each frame it took, in arrival order.
    fates: dict[int, list[int]] = field(default_factory=lambda: {0: [], 1: []})

    def arrivals(self, ch: int) -> list[int]:
        return [c for c, kind in self.events[ch] if kind == "A"]


class BoardModel:
    """Both channels of ``board`` behind the simulated board's two ports, from cycle ``cycle``
    on, with the profile ``regs`` (per channel) committed and the counters cleared; a BoD
    channel's superframe 0 began at ``bod_start``."""

    def __init__(self, regs: dict[int, ChannelRegs], cycle: int = 0, bod_start: int = 0,
                 board: Board | None = None, commits: dict | None = None,
                 tables: dict[int, TerminalTable] | None = None,
                 jitter: dict[int, tuple] | None = None):
        self.board = board or BOARDS[DEFAULT_BOARD]
        # Later commits per channel (a timeline's steps: satemu.model.channel.Commit), each
        # applied to the frames that arrive after its cycle (and a BoD channel's slots after it).
        # ``tables``: each channel's terminals (satemu.base.terminals), if the profile has any;
        # ``jitter``: each channel's jitter table banks (satemu.model.jitter), where written.
        self.tables = tables or {}
        self.channels = {ch: Channel(regs[ch], self.board.channel_params(ch), bod_start,
                                     (commits or {}).get(ch, ()), self.tables.get(ch),
                                     (jitter or {}).get(ch))
                         for ch in (FORWARD, RETURN)}
        self.cycle = cycle                  # every cycle before this one has run
        self.traffic = Traffic()
        self.drop_preamble = {FORWARD: 0, RETURN: 0}
        self._free = {PORT_A: 0, PORT_B: 0}    # first cycle each wire may carry the next frame
        self._frames = {FORWARD: [], RETURN: []}   # each channel's frames, by its index
        # The length of each frame a channel took (as it counts it), in order.
        self.taken_lengths: dict[int, list[int]] = {FORWARD: [], RETURN: []}
        self._pending: list[tuple[int, int, int, Egress]] = []   # (end, channel, seq, egress)
        self._seq = 0
        self._run_start = {PORT_A: None, PORT_B: None}   # first cycle of a back-to-back run
        self._run_beats = {PORT_A: 0, PORT_B: 0}
        self.longest_burst = {PORT_A: 0, PORT_B: 0}      # wire beats back to back, at most

    # ---- the surface of sim.frames.EthPorts -------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def close(self) -> None:
        pass

    def release(self) -> None:
        pass

    def now(self) -> int:
        return self.cycle

    def send(self, port: int, wire: bytes, at: int = 0) -> None:
        """Put ``wire`` (preamble to FCS) on a port's wire at cycle ``at`` or as soon as the wire
        is free after it."""
        start = max(at, self._free[port], self.cycle)
        beats = wire_beats(len(wire))
        if self._run_start[port] is not None and start == self._free[port]:
            self._run_beats[port] += beats
        else:
            self._run_start[port], self._run_beats[port] = start, beats
        self.longest_burst[port] = max(self.longest_burst[port], self._run_beats[port])
        self._free[port] = start + beats + GAP_CYCLES
        self.traffic.wire_in[port].append(start)
        ch = CHANNEL_INTO[port]
        body = wire[len(PREAMBLE):]
        if wire[:len(PREAMBLE)] != PREAMBLE or not body:
            # The MAC finds no SFD, or nothing after it: it never reaches the channel.
            self.drop_preamble[ch] += 1
            return
        if len(body) <= BEAT_BYTES:
            # A fragment: the MAC pads its one beat to two (hw.fragment) and passes on a runt.
            frame, bad_fcs = body.ljust(BEAT_BYTES, b"\0")[:FRAGMENT_RUNT], True
        else:
            frame = body[:-FCS_BYTES]
            bad_fcs = fcs(frame) != body[-FCS_BYTES:]
        arrival = arrival_from_wire(start, len(frame))
        self.traffic.events[ch].append((arrival, "A"))
        self.taken_lengths[ch].append(len(frame))
        table = self.tables.get(ch)
        # Port A's frames are told apart by their source, port B's by their destination.
        key = None if table is None else frame_key(frame, table.match, source=ch == RETURN)
        channel = self.channels[ch]
        decided = len(channel.frames)
        channel.arrive(arrival, len(frame), bad_fcs, key, ecn_kind(frame))
        # One report a decision: the frame's, and its copy's where duplication made one.
        for r in channel.frames[decided:]:
            self._frames[ch].append(frame)
            self.traffic.fates[ch].append(int(r.fate) | (FATE_COPY if r.copy else 0))
        self._schedule(ch)

    def run(self, limit: int, halt_on_egress: bool = True) -> int:
        """Run until the cycle before ``limit`` or, with ``halt_on_egress``, to the end of the
        next cycle in which a frame's last beat left a port (at least one cycle); returns the
        cycle it halted before. Frames that left by then are in ``traffic.egress``."""
        target = max(limit - 1, self.cycle)
        while True:
            halt = target
            if halt_on_egress and self._pending:
                halt = min(halt, max(self._pending[0][0] - 1, self.cycle))
            # A BoD channel's scheduler runs slot by slot up to the halt; a frame it releases
            # leaves at least a latency floor later, but may still end before the halt.
            slots = [(c.next_slot(), ch) for ch, c in self.channels.items()
                     if c.bod is not None and c.next_slot() <= halt]
            if not slots:
                break
            at, ch = min(slots)
            self.channels[ch].advance(at)
            self._schedule(ch)
        while self._pending and self._pending[0][0] <= halt + 1:
            _, ch, _, e = heapq.heappop(self._pending)
            self.traffic.egress[ch].append(e)
        self.cycle = halt + 1
        return self.cycle

    # ---- the end of a run ---------------------------------------------------------------------
    def finish(self, bod_superframes: int = 0) -> dict[int, ModelResult]:
        """Run until every frame has left or been dropped (and a BoD channel has recorded at
        least ``bod_superframes`` superframes); returns each channel's result."""
        results = {}
        for ch, channel in self.channels.items():
            results[ch] = channel.finish()
            if channel.bod is not None:
                channel.bod.record(bod_superframes)
            self._schedule(ch)
        while self._pending:
            _, ch, _, e = heapq.heappop(self._pending)
            self.traffic.egress[ch].append(e)
            self.cycle = max(self.cycle, e.end)
        self.results = results
        return results

    def stats(self, ch: int) -> dict[str, int]:
        """What GET_STATS reports for a channel after :meth:`finish`, with ``snapshot_cycle`` the
        cycle everything had left by (the box's is the cycle of its read)."""
        r = self.results[ch]
        held = [f for f in r.frames if f.fate is Fate.DELIVERED and f.egress is None]
        if held:
            raise RuntimeError(f"{len(held)} frames never left the channel")
        return {**r.counters, "queue_frames_now": 0, "queue_bytes_now": 0,
                "queue_frames_hwm": r.gauges["queue_frames_hwm"],
                "queue_bytes_hwm": r.gauges["queue_bytes_hwm"], "mem_words_now": 0,
                "mem_words_hwm": r.gauges["mem_words_hwm"], "snapshot_cycle": self.cycle,
                "drop_preamble": self.drop_preamble[ch]}

    def exactness(self) -> dict:
        """Where the board might differ from this model: the longest back-to-back run of wire
        beats into each channel against the room its ingress FIFO has for them (a longer run
        may overrun on the board, where the model assumes it does not; a shorter one cannot
        overrun a FIFO that was empty when it began)."""
        out = {}
        for ch in (FORWARD, RETURN):
            params = self.board.channel_params(ch)
            room = params.ingress_beats - params.max_beats
            burst = self.longest_burst[INGRESS_PORT[ch]]
            out["forward" if ch == FORWARD else "return"] = {
                "longest_burst_beats": burst, "ingress_fifo_room_beats": room,
                "overrun_possible": burst > room}
        out["exact"] = not any(v["overrun_possible"] for v in out.values()
                               if isinstance(v, dict))
        return out

    # -------------------------------------------------------------------------------------------
    def _schedule(self, ch: int) -> None:
        """Frames of channel ``ch`` whose egress cycle became known: onto the port's wire, in
        the MAC's time."""
        for index in self.channels[ch].take_timed():
            r = self.channels[ch].frames[index]
            frame = self._frames[ch][index]
            frame = padded(flipped(ce_marked(frame, ecn_kind(frame)) if r.ce else frame, r.flip))
            self._frames[ch][index] = None              # held only until it is scheduled
            e = Egress(r.egress, r.egress + TX_LATENCY, PREAMBLE + frame + fcs(frame))
            self._seq += 1
            heapq.heappush(self._pending, (e.end, ch, self._seq, e))
