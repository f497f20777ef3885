# SPDX-License-Identifier: BSD-2-Clause
"""Typed access to a satemu box (board or simulated board) over any PySerial URL.

Layers: ``serial.serial_for_url`` is the transport (a device path, ``socket://`` for the
simulated board, ``rfc2217://`` for a remote lab port); ``satemu.base.protocol`` the framing; this
module the typed API; ``satemu.cli`` a thin command line over it.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace

import serial

from satemu.base import protocol as P
from satemu.base.records import BodRecord
from satemu.base.params import TERMINAL_COUNTERS, ChannelRegs
from satemu.base.hardware import Hardware
from satemu.base.validate import TerminalVerdict, Verdict, profile_fields

__all__ = ["Device", "DeviceError", "CommitPending", "BodTrace", "hardware_of"]


def _channels(mask: int) -> str:
    names = [name for i, name in enumerate(P.CHANNEL_NAMES) if mask >> i & 1]
    return " and ".join(names) + (" channels'" if len(names) > 1 else " channel's")


# Seconds Device.load waits, after stopping a timeline, for the step it had committed.
STOP_WAIT_S = 30.0


def hardware_of(info: dict[str, int]) -> Hardware:
    """The hardware of a HELLO answer (``protocol.HELLO_FIELDS``): its limits, and the BOD
    capability, which means the return channel has the BoD block."""
    bod = ("return",) if info["capabilities"] & P.Capability.BOD else ()
    return Hardware.from_limits(info, bod)


class DeviceError(RuntimeError):
    """The box did not answer, or answered that a request was wrong; the message says which."""


class Busy(DeviceError):
    """A commit is still pending in the gateware (BUSY)."""


class TimelineRunning(DeviceError):
    """The box runs a timeline, so it takes no load (RUNNING): TIMELINE_STOP first."""


class CommitPending(DeviceError):
    """COMMIT answered PENDING: the load is committed, but part of it is not in force yet."""

    def __init__(self, message: str, channels: int):
        super().__init__(message)
        self.channels = channels          # a bit per channel whose part waits


# What the simulated board's UART (sim/modules/satemu_uart) sends a client it turns away
# before it closes the connection: another client holds the port.
PORT_BUSY_MARK = b"satemu-uart: busy"
# Sequence numbers and load generations: from the system's entropy, never from a seeded
# generator that two sessions could share.
_RNG = random.SystemRandom()


@dataclass
class BodTrace:
    """The BoD records read from a box, in superframe order."""
    records: list[BodRecord]
    count: int                  # superframes recorded when the last answer was made
    start: int                  # the box's cycle superframe 0 began (bod_start)
    # (first, end) superframe ranges that were overwritten in the box's ring before they were read
    lost: list[tuple[int, int]] = field(default_factory=list)
    terminals: int = 1          # records a superframe: a terminal each, where a table is in force

    @property
    def lost_count(self) -> int:
        return sum(end - first for first, end in self.lost)


class Device:
    """One connection to a box. Requests are retried on silence (the sequence number lets the
    box's answers be told apart from stale ones); every error answer raises DeviceError."""

    def __init__(self, url: str, timeout: float = 5.0, retries: int = 2, baudrate: int = 115200,
                 sim_hint: str = "satemu sim start"):
        self.url = url
        self.timeout = timeout
        self.retries = retries
        # what a user does about a simulated board that does not answer, in the errors
        self.sim_hint = sim_hint
        self.timeline_start: int | None = None    # the last load's timeline's start cycle
        try:
            # exclusive: a local serial port is locked (flock) for as long as it is open, so a
            # second satemu on it fails here instead of stealing half the answers.
            self.port = serial.serial_for_url(url, baudrate=baudrate, timeout=0.05,
                                              exclusive=True)
        except (serial.SerialException, ValueError, OSError) as e:
            if "exclusively lock" in str(e):
                raise DeviceError(f"{url} is in use by another program (another satemu, or a "
                                  f"terminal); close it first") from None
            hint = f" (for the simulated board: {sim_hint})" if url.startswith("socket://") \
                else ""
            raise DeviceError(f"cannot open {url}: {e}{hint}") from None
        self.deframer = P.Deframer()
        # Sequence numbers start at random, so that an answer to an earlier session's request
        # that arrives late is not taken for this one's.
        self.seq = _RNG.randrange(256)
        self.info: dict | None = None
        self.tail = bytearray()            # the last bytes read: a line left before a close
        self._flush()

    def _flush(self):
        """Drops whatever the port holds from before this session: a stale answer, line noise."""
        try:
            if not self.url.startswith("socket://"):   # a socket's would discard what it read
                self.port.reset_input_buffer()
            for _ in range(4096):          # a box answers requests only: it soon falls silent
                if not self._read():
                    break
        except (serial.SerialException, OSError) as e:
            self._dropped(e)

    def close(self):
        self.port.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- requests --------------------------------------------------------------------------

    def call(self, op: P.Op | int, payload: bytes = b"") -> bytes:
        """Send one request; return the response payload after its status byte (status OK)."""
        opname = op.name if isinstance(op, P.Op) else f"opcode {op:#04x}"
        for _ in range(self.retries + 1):
            self.seq = (self.seq + 1) & 0xFF
            try:
                self.port.write(b"\0" + P.encode_frame(self.seq, op, payload))
            except (serial.SerialException, OSError) as e:
                self._dropped(e)
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                try:
                    data = self._read()
                except (serial.SerialException, OSError) as e:
                    self._dropped(e)
                for seq, rop, body in self.deframer.feed(data):
                    if seq == self.seq and rop == op | P.RESPONSE_BIT:
                        if not body:
                            raise DeviceError(f"{self.url}: empty answer to {opname}")
                        self._check(opname, body[0], body[1:])
                        return body[1:]
        raise DeviceError(f"no answer from {self.url} to {opname} after "
                          f"{(self.retries + 1) * self.timeout:.0f} s: is the box running and "
                          f"is this its port? (for the simulated board: {self.sim_hint})")

    def _read(self) -> bytes:
        """What the port holds, or what arrives within its timeout. Never more than it holds:
        a read that asks for more loses what it got when the peer closes meanwhile (PySerial's
        socket), and that may be the line saying why. The last 256 bytes read are kept in
        ``tail``."""
        data = self.port.read(max(1, self.port.in_waiting))
        self.tail = (self.tail + data)[-256:]
        return data

    def _dropped(self, e: Exception):
        if PORT_BUSY_MARK in self.tail:
            raise DeviceError(f"{self.url}: another client holds the simulated board's UART; "
                              f"it serves one at a time") from None
        raise DeviceError(f"{self.url}: the link dropped: {e}") from None

    def _check(self, opname: str, status: int, rest: bytes):
        status = P.Status(status) if status in P.Status._value2member_map_ else status
        if status == P.Status.OK:
            return
        if status == P.Status.BAD_FIELD:
            detail = P.BAD_FIELD_DETAIL.unpack(rest[:P.BAD_FIELD_DETAIL.size])
            raise DeviceError(f"the box rejected the profile: "
                              f"{Verdict(P.Status.BAD_FIELD, *detail).explain()}")
        if status == P.Status.BUDGET:
            need, have = P.BUDGET_DETAIL.unpack(rest[:P.BUDGET_DETAIL.size])
            raise DeviceError(f"the box rejected the profile: its delay line needs {need} words, "
                              f"the channel has {have}")
        if status == P.Status.THROUGHPUT:
            need, have = P.THROUGHPUT_DETAIL.unpack(rest[:P.THROUGHPUT_DETAIL.size])
            raise DeviceError(f"the box rejected the profile: "
                              f"{Verdict(P.Status.THROUGHPUT, 0, need, 0, have).explain()}")
        if status == P.Status.TERMINAL_BAD:
            index, rule, value, lo, hi = P.TERMINAL_BAD_DETAIL.unpack(
                rest[:P.TERMINAL_BAD_DETAIL.size])
            name = P.TERMINAL_RULES[rule] if rule < len(P.TERMINAL_RULES) else str(rule)
            verdict = TerminalVerdict(-1 if index == P.TABLE_INDEX else index, name, value, lo,
                                      hi)
            raise DeviceError(f"the box rejected the terminal table: {verdict.explain()}")
        if status == P.Status.NO_JITTER:
            raise DeviceError("this box's channels have no jitter block (a build option the "
                              "board leaves out; see satemu show --board)")
        if status == P.Status.JITTER_BAD:
            fault, bank = P.JITTER_BAD_DETAIL.unpack(rest[:P.JITTER_BAD_DETAIL.size])
            why = {P.JitterFault.RANGE: "those entries are outside the bank",
                   P.JitterFault.IN_FORCE: "the profile in force draws its jitter from it"}
            raise DeviceError(f"the box refused to write jitter table bank {bank}: "
                              f"{why.get(fault, f'fault {fault}')}")
        if status == P.Status.NO_BOD:
            raise DeviceError("the box has no Bandwidth-on-Demand block on that channel")
        if status == P.Status.NO_LOG:
            raise DeviceError("this board's gateware has no frame log (a build option the "
                              "board leaves out)")
        if status == P.Status.NO_TIMELINE:
            raise DeviceError("this box runs no timelines (its firmware has no timeline store)")
        if status == P.Status.RUNNING:
            raise TimelineRunning("a timeline is running on the box; stop it first (satemu "
                                  "load stops it)")
        if status == P.Status.TIMELINE_BAD:
            entry, fault = P.TIMELINE_FAULT_DETAIL.unpack(rest[:P.TIMELINE_FAULT_DETAIL.size])
            name = P.TimelineFault(fault).name if fault in P.TimelineFault._value2member_map_ \
                else str(fault)
            if fault == P.TimelineFault.AHEAD:
                raise DeviceError(f"the box refused the timeline: it would start more than "
                                  f"{P.TIMELINE_AHEAD_MAX_S} s of box time ahead, or end past "
                                  f"its 64-bit cycle count (AHEAD)")
            raise DeviceError(f"the box refused the timeline at entry {entry}: {name}")
        if status == P.Status.BUSY:
            raise Busy("the box is still applying the previous commit; try again")
        if status == P.Status.INCOMPLETE:
            fwd, ret = P.INCOMPLETE_DETAIL.unpack(rest[:P.INCOMPLETE_DETAIL.size])
            raise DeviceError(f"the box refused the commit: the load is not staged on both "
                              f"channels (forward holds load {fwd:#x}, return {ret:#x}; 0: none); "
                              f"nothing was applied")
        if status in (P.Status.LAYOUT_BUSY, P.Status.PENDING):
            (mask,) = P.CHANNEL_MASK_DETAIL.unpack(rest[:P.CHANNEL_MASK_DETAIL.size])
        if status == P.Status.LAYOUT_BUSY:
            raise DeviceError(f"the box refused the commit: the {_channels(mask)} BoD "
                              f"settings change only while its delay line is empty, and it holds "
                              f"frames; nothing was applied (stop the traffic, then load again)")
        if status == P.Status.PENDING:
            raise CommitPending(f"the box applied the profile except the {_channels(mask)} "
                                f"BoD settings, which wait for the delay line to drain", mask)
        if status == P.Status.BAD_VERSION:
            raise DeviceError(f"the box speaks protocol version "
                              f"{int.from_bytes(rest[:2], 'little')}, this tool "
                              f"{P.PROTOCOL_VERSION}")
        name = status.name if isinstance(status, P.Status) else f"status {status}"
        raise DeviceError(f"the box answered {name} to {opname}")

    def hello(self) -> dict:
        rest = self.call(P.Op.HELLO, P.HELLO_REQUEST.pack(P.PROTOCOL_VERSION))
        self.info = dict(zip(P.HELLO_FIELDS, P.HELLO_RESPONSE.unpack(rest[:P.HELLO_RESPONSE.size])))
        return self.info

    def wait_empty(self, timeout: float, poll: float = 1.0) -> bool:
        """Waits until both channels hold no frame (every frame in has left or been dropped:
        GET_STATS' ``queue_frames_now`` and ``mem_words_now`` are 0), asking every ``poll``
        seconds; False if they still held frames after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            stats = [self.get_stats(ch) for ch in range(len(P.CHANNEL_NAMES))]
            if all(s["queue_frames_now"] == 0 and s["mem_words_now"] == 0 for s in stats):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(poll)

    def hardware(self) -> Hardware:
        """The box's hardware as it reports itself (HELLO): its limits (with the records of its
        frame-log rings, 0 without a log), and the BOD capability, which means the return
        channel has the BoD block. ``load`` checks profiles against it."""
        return hardware_of(self.info or self.hello())

    def set_profile(self, channel: int, regs: ChannelRegs, generation: int = 0) -> None:
        """Stages ``regs`` on ``channel`` as part of load ``generation`` (see ``load``); with
        generation 0 the box checks and writes them, but no COMMIT will apply them."""
        values = profile_fields(regs).values()
        self.call(P.Op.SET_PROFILE, P.SET_PROFILE_REQUEST.pack(channel, generation, *values))

    def get_profile(self, channel: int, in_force: bool = True) -> dict[str, int]:
        """A channel's profile in force (the last commit's, as the channel took it), or the
        staged one (``in_force=False``: the shadow registers, as the last SET_PROFILE left them)."""
        which = P.PROFILE_IN_FORCE if in_force else P.PROFILE_STAGED
        rest = self.call(P.Op.GET_PROFILE, P.GET_PROFILE_REQUEST.pack(channel, which))
        return dict(zip((f.name for f in P.PROFILE_FIELDS), P.PROFILE.unpack(rest)))

    def commit(self, generation: int, reseed: bool = False, settle: float = 2.0) -> bool:
        """Commits load ``generation``: True if this request applied it, False if it was in force
        already (a retry). A part that waits for a delay line to drain is asked after again for
        ``settle`` seconds, then raises CommitPending."""
        from satemu.base.regmap import COMMIT_RESEED
        request = P.COMMIT_REQUEST.pack(COMMIT_RESEED if reseed else 0, generation)
        deadline = time.monotonic() + settle
        while True:
            try:
                rest = self.call(P.Op.COMMIT, request)
                return P.COMMIT_RESULT.unpack(rest[:1])[0] == P.COMMIT_APPLIED
            except CommitPending:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def load(self, profile, reseed: bool = False, settle: float = 2.0,
             stop_timeline: bool = False, regs: dict[str, ChannelRegs] | None = None,
             timeline=None, start: int | None = None,
             lead: int = 0) -> dict[str, ChannelRegs]:
        """Check ``profile`` (a ``satemu.link.profile.Profile``) against this box's hardware (as
        HELLO reported it on this connection; ``regs``: the registers of a check the caller
        made against it already), stage it on both channels under a fresh generation and commit
        it; returns the register values per direction. It returns only once the whole profile
        is in force: a part that is not raises DeviceError (CommitPending) saying which. A box
        running a timeline refuses the load (TimelineRunning), unless ``stop_timeline``: then
        the timeline is stopped first.

        With ``timeline`` (the profile's ``satemu.link.timeline.CompiledTimeline``) its entries
        are stored and it is armed for the load before the commit (TIMELINE_START with the load
        staged), from cycle ``start`` (None: ``lead`` cycles after the box's cycle then), again
        every ``timeline.period`` cycles: the one COMMIT applies the profile and starts its
        timeline, so a host that dies before it leaves the old profile in force, and one that
        dies after it the new one with its timeline. ``self.timeline_start`` is its start.

        A profile with terminals (``profile.tables``) stages each channel's terminal table under
        the same generation, so the COMMIT applies it with the rest or nothing."""
        regs = regs or profile.check(self.hardware())
        tables = profile.tables(self.hardware())
        jitter = profile.jitter_tables()

        def attempt():
            return self._load(self.write_jitter(jitter, regs), reseed, settle, timeline, start,
                              lead, tables)
        try:
            return attempt()
        except TimelineRunning:
            if not stop_timeline:
                raise
        self.stop_timeline()
        # A step committed before the stop (at most a tenth of a second of box time ahead,
        # protocol.TIMELINE_LEAD_DIVISOR) still takes effect at its cycle; until then the box is
        # BUSY.
        deadline = time.monotonic() + STOP_WAIT_S
        while True:
            try:
                return attempt()
            except Busy:
                if time.monotonic() >= deadline:
                    raise DeviceError(f"the timeline stopped, but its last step had not taken "
                                      f"effect after {STOP_WAIT_S} s; load again later") from None
                time.sleep(0.2)

    def load_registers(self, regs: dict[str, ChannelRegs], reseed: bool = False,
                       settle: float = 2.0) -> dict[str, ChannelRegs]:
        """Stages registers per direction (the box checks them) on both channels under a fresh
        generation and commits them, as ``load`` does once it has checked a profile."""
        return self._load(regs, reseed, settle)

    def _load(self, regs, reseed: bool, settle: float, timeline=None, start: int | None = None,
              lead: int = 0, tables=None) -> dict[str, ChannelRegs]:
        if timeline is not None:
            self.store_timeline(timeline.entries)
        generation = _RNG.randrange(1, (1 << 32) - 1)     # 2^32 - 1: the timeline's
        self.set_profile(P.CHANNEL_FORWARD, regs["forward"], generation)
        self.set_profile(P.CHANNEL_RETURN, regs["return"], generation)
        for channel, name in enumerate(P.CHANNEL_NAMES):
            if tables and tables.get(name) is not None and tables[name].terminals:
                self.stage_table(channel, tables[name], generation)
        if timeline is not None:                          # armed for this load
            begin = self.now() + lead if start is None else start
            try:
                self.call(P.Op.TIMELINE_START, P.TIMELINE_START_REQUEST.pack(
                    len(timeline.entries), begin, timeline.period))
            except (TimelineRunning, Busy):
                raise
            except DeviceError as e:
                raise DeviceError(f"{e}; nothing was loaded (the profile in force is the one "
                                  f"before)") from None
        self.commit(generation, reseed=reseed, settle=settle)
        if timeline is not None:
            self.timeline_start = begin
        return regs

    def write_jitter(self, jitter: dict, regs: dict[str, ChannelRegs]) -> dict[str, ChannelRegs]:
        """Write each channel's jitter table of ``jitter`` (by channel name) into the bank the
        profile in force does not draw from (JITTER_SET), and return ``regs`` with each such
        channel's ``jit_bank`` naming it."""
        regs = dict(regs)
        for channel, name in enumerate(P.CHANNEL_NAMES):
            entries = jitter.get(name)
            if entries is None:
                continue
            in_force = self.get_profile(channel)
            bank = 1 - in_force["jit_bank"] if in_force["jit_sigma"] else 0
            for first in range(0, len(entries), P.JITTER_SET_MAX):
                chunk = list(entries[first:first + P.JITTER_SET_MAX])
                self.call(P.Op.JITTER_SET, P.JITTER_SET_REQUEST.pack(
                    channel, bank, first, len(chunk),
                    *(chunk + [0] * (P.JITTER_SET_MAX - len(chunk)))))
            regs[name] = replace(regs[name], jit_bank=bank)
        return regs

    def stage_table(self, channel: int, table, generation: int) -> None:
        """Stages a channel's terminal table (``satemu.base.terminals.TerminalTable``) under
        load ``generation``: each terminal (TERMINAL_SET), then the level table (LEVEL_SET)."""
        for i, t in enumerate(table.terminals):
            self.call(P.Op.TERMINAL_SET, P.TERMINAL_SET_REQUEST.pack(channel, generation, i,
                                                                     *t.values()))
        levels = list(table.levels)
        for first in range(0, len(levels), P.LEVEL_SET_MAX):
            chunk = levels[first:first + P.LEVEL_SET_MAX]
            pad = [(0, 0)] * (P.LEVEL_SET_MAX - len(chunk))
            self.call(P.Op.LEVEL_SET, P.LEVEL_SET_REQUEST.pack(
                channel, generation, first, len(chunk),
                *(x for rate, length in chunk + pad for x in (rate, length))))

    def store_timeline(self, entries) -> None:
        """TIMELINE_WRITE of ``entries`` ((offset, channel, field index, value) each, sorted by
        offset: ``CompiledTimeline.entries``) from entry 0."""
        for first in range(0, len(entries), P.TIMELINE_WRITE_MAX):
            chunk = entries[first:first + P.TIMELINE_WRITE_MAX]
            body = b"".join(P.timeline_entry(*e) for e in chunk)
            body += bytes(P.TIMELINE_ENTRY.size * (P.TIMELINE_WRITE_MAX - len(chunk)))
            self.call(P.Op.TIMELINE_WRITE, P.TIMELINE_WRITE_HEAD.pack(first, len(chunk)) + body)

    def now(self) -> int:
        """The box's cycle, as a statistics snapshot takes it (GET_STATS)."""
        return self.get_stats(P.CHANNEL_FORWARD)["snapshot_cycle"]

    def timeline_status(self) -> dict[str, int]:
        """The timeline run as the box reports it (TIMELINE_STATUS: TIMELINE_STATE_FIELDS)."""
        rest = self.call(P.Op.TIMELINE_STATUS)
        return dict(zip(P.TIMELINE_STATE_FIELDS, P.TIMELINE_STATE.unpack(rest)))

    def stop_timeline(self) -> None:
        """No further step; the profile in force stays."""
        self.call(P.Op.TIMELINE_STOP)

    def link_stats(self) -> dict[str, int]:
        """The control link as the box counts it (LINK_STATS): requests answered, and what its
        deframer discarded, by cause."""
        rest = self.call(P.Op.LINK_STATS)
        return dict(zip(P.LINK_STATS_FIELDS, P.LINK_STATS.unpack(rest[:P.LINK_STATS.size])))

    def get_stats(self, channel: int) -> dict[str, int]:
        rest = self.call(P.Op.GET_STATS, P.CHANNEL_REQUEST.pack(channel))
        return dict(zip(P.STATS_FIELDS, P.STATS.unpack(rest)))

    def reset_stats(self) -> None:
        self.call(P.Op.RESET_STATS)

    def clear_log(self) -> None:
        """Clears both channels' frame logs at once (CLEAR_LOG): their counts start from 0 and
        their rings from slot 0."""
        self.call(P.Op.CLEAR_LOG)

    def bod_trace(self, first: int = 0, max_records: int = P.BOD_TRACE_MAX,
                  channel: int = P.CHANNEL_RETURN, terminals: int | None = None) -> BodTrace:
        """The BoD records from superframe ``first`` up to the newest, ``max_records`` per request
        (BOD_TRACE), until caught up with the box or, should the box write records faster than
        they are read (many terminals), once past the count of the first answer and no longer
        gaining on it; with the cycle superframe 0 began: a record a
        terminal a superframe, of the ``terminals`` the profile in force declares (one without a
        table; None: as many as the channel's profile in force says, read first). Records the box's ring overwrote before they were read are listed in ``lost``
        (by record: superframe x terminals + terminal). Should the block restart meanwhile (a
        layout commit: the start changes), the reading starts over, so all records belong to
        the run that began at ``start``. ``max_records=0`` asks once and reads no record: just
        the count and the start."""
        if not 0 <= max_records <= 255:
            raise ValueError("max_records must lie in 0 .. 255")
        if terminals is None:
            prof = self.get_profile(channel)
            terminals = (prof["term_framed"] + prof["term_synthetic"]) if prof["term_match"] \
                else 1
        trace: BodTrace | None = None

        def lose(a, end):
            if trace.lost and trace.lost[-1][1] == a:
                trace.lost[-1] = (trace.lost[-1][0], end)
            else:
                trace.lost.append((a, end))

        want = first * terminals
        snapshot = behind = None
        while True:
            rest = self.call(P.Op.BOD_TRACE, P.BOD_TRACE_REQUEST.pack(channel, want, max_records))
            try:
                count, start, got, records = P.decode_bod_trace(rest)
            except P.ProtocolError as e:
                raise DeviceError(f"{self.url}: {e}") from None
            if trace is not None and start != trace.start:    # restarted since the last answer
                trace, want = None, first * terminals
                continue
            if trace is None:
                trace = BodTrace([], count, start, terminals=terminals)
                snapshot, behind = count * terminals, None
            trace.count = count
            if got > want:
                lose(want, got)
            for n, rec in enumerate(records, got):
                sf, who = divmod(n, terminals)
                if rec.sf == sf & 0xFFFFFFFF and rec.terminal == who:
                    trace.records.append(rec)
                else:                   # overwritten by a newer superframe while being read
                    lose(n, n + 1)
            want = got + len(records)
            gap = trace.count * terminals - want
            if not records or gap <= 0 or (want >= snapshot and behind is not None
                                           and gap >= behind):
                return trace
            behind = gap

    def terminal_stats(self, channel: int, terminal: int | None) -> dict[str, int]:
        """A terminal's counters on ``channel`` (TERMINAL_STATS: TERMINAL_COUNTERS, 64-bit
        counts since the last RESET_STATS); ``terminal`` None: the frames of no terminal."""
        who = P.NO_ONES if terminal is None else terminal
        rest = self.call(P.Op.TERMINAL_STATS, P.TERMINAL_STATS_REQUEST.pack(channel, who))
        return dict(zip(TERMINAL_COUNTERS, P.TERMINAL_STATS.unpack(rest)))

    def read_log(self, channel: int,
                 first: int = 0) -> tuple[int, int, int, list[tuple[int, int]]]:
        """``channel``'s frame-log records (READ_LOG, ``READ_LOG_MAX`` a request) from record
        ``first`` (records count from the log's last clear), or from the oldest its ring holds
        if that is later, up to the ``log_count`` of the first answer: (log_count, log_lost, the
        first record's number, the records as (word 0, word 1)), record ``first + i`` the i-th.
        Not each is that record: one the ring overwrote before it was asked for is (0, 0) and
        one the box saw overwritten while it read it has word 1 = 0 (no record:
        ``satemu.model.framelog.unpack`` gives None), and one overwritten between the box's
        count and its read shows a later lap; the caller checks each one's lap, as
        ``satemu.model.framelog.read_ring`` does. A log cleared meanwhile (its count falls) is
        read anew."""
        while True:
            records: list[tuple[int, int]] = []
            want, start, count, lost, last = first, None, 0, 0, 0
            while True:
                request = P.READ_LOG_REQUEST.pack(channel, want, P.READ_LOG_MAX)
                rest = self.call(P.Op.READ_LOG, request)
                try:
                    now, dropped, got, words = P.decode_read_log(rest)
                except P.ProtocolError as e:
                    raise DeviceError(f"{self.url}: {e}") from None
                if now < last:                  # cleared since the last answer
                    break
                last = now
                if start is None:
                    start, count, lost = got, now, dropped
                    want = got
                # Records the ring overwrote before they were asked for: none, in their place.
                records += [(0, 0)] * max(0, min(got, count) - want)
                records += words[:max(0, count - got)]
                want = start + len(records)
                if not words or want >= count:
                    return count, lost, start, records
