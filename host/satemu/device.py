# SPDX-License-Identifier: BSD-2-Clause
"""Typed access to a satemu box (board or simulated board) over any PySerial URL.

Layers: ``serial.serial_for_url`` is the transport (a device path, ``socket://`` for the
simulated board, ``rfc2217://`` for a remote lab port); ``satemu.protocol`` the framing; this
module the typed API; ``satemu.cli`` a thin command line over it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import serial

from . import protocol as P
from .bod_model import BodRecord
from .params import ChannelRegs
from .validate import Hardware, Verdict, profile_fields

__all__ = ["Device", "DeviceError", "BodTrace"]


class DeviceError(RuntimeError):
    """The box did not answer, or answered that a request was wrong; the message says which."""


@dataclass
class BodTrace:
    """The BoD records read from a box, in superframe order."""
    records: list[BodRecord]
    count: int                  # superframes recorded when the last answer was made
    start: int                  # the box's cycle superframe 0 began (bod_start)
    # (first, end) superframe ranges that were overwritten in the box's ring before they were read
    lost: list[tuple[int, int]] = field(default_factory=list)

    @property
    def lost_count(self) -> int:
        return sum(end - first for first, end in self.lost)


class Device:
    """One connection to a box. Requests are retried on silence (the sequence number lets the
    box's answers be told apart from stale ones); every error answer raises DeviceError."""

    def __init__(self, url: str, timeout: float = 5.0, retries: int = 2, baudrate: int = 115200):
        self.url = url
        self.timeout = timeout
        self.retries = retries
        try:
            self.port = serial.serial_for_url(url, baudrate=baudrate, timeout=0.05)
        except (serial.SerialException, ValueError, OSError) as e:
            hint = " (for the simulated board: satemu sim start)" if url.startswith("socket://") else ""
            raise DeviceError(f"cannot open {url}: {e}{hint}") from None
        self.deframer = P.Deframer()
        self.seq = 0
        self.info: dict | None = None

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
                raise DeviceError(f"{self.url}: the link dropped: {e}") from None
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                try:
                    data = self.port.read(4096)
                except (serial.SerialException, OSError) as e:
                    raise DeviceError(f"{self.url}: the link dropped: {e}") from None
                for seq, rop, body in self.deframer.feed(data):
                    if seq == self.seq and rop == op | P.RESPONSE_BIT:
                        if not body:
                            raise DeviceError(f"{self.url}: empty answer to {opname}")
                        self._check(opname, body[0], body[1:])
                        return body[1:]
        raise DeviceError(f"no answer from {self.url} to {opname} after "
                          f"{(self.retries + 1) * self.timeout:.0f} s: is the box running and "
                          f"is this its port? (for the simulated board: satemu sim start)")

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
        if status == P.Status.NO_BOD:
            raise DeviceError("the box has no Bandwidth-on-Demand block on that channel")
        if status == P.Status.BUSY:
            raise DeviceError("the box is still applying the previous commit; try again")
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

    def hardware(self) -> Hardware:
        """The box's hardware as it reports itself (HELLO): its limits, and the BOD capability,
        which means the return channel has the BoD block. ``load`` checks profiles against it."""
        info = self.info or self.hello()
        bod = ("return",) if info["capabilities"] & P.Capability.BOD else ()
        return Hardware.from_limits(info, bod)

    def set_profile(self, channel: int, regs: ChannelRegs) -> None:
        values = profile_fields(regs).values()
        self.call(P.Op.SET_PROFILE, P.SET_PROFILE_REQUEST.pack(channel, *values))

    def get_profile(self, channel: int) -> dict[str, int]:
        rest = self.call(P.Op.GET_PROFILE, P.CHANNEL_REQUEST.pack(channel))
        return dict(zip((f.name for f in P.PROFILE_FIELDS), P.PROFILE.unpack(rest)))

    def commit(self, reseed: bool = False) -> None:
        from .regmap import COMMIT_RESEED
        self.call(P.Op.COMMIT, P.COMMIT_REQUEST.pack(COMMIT_RESEED if reseed else 0))

    def load(self, profile, reseed: bool = False) -> dict[str, ChannelRegs]:
        """Check ``profile`` (a ``satemu.profile.Profile``) against this box's hardware, set
        it into both channels and commit it; returns the register values per direction."""
        self.hello()
        regs = profile.check(self.hardware())
        self.set_profile(P.CHANNEL_FORWARD, regs["forward"])
        self.set_profile(P.CHANNEL_RETURN, regs["return"])
        self.commit(reseed=reseed)
        return regs

    def get_stats(self, channel: int) -> dict[str, int]:
        rest = self.call(P.Op.GET_STATS, P.CHANNEL_REQUEST.pack(channel))
        return dict(zip(P.STATS_FIELDS, P.STATS.unpack(rest)))

    def reset_stats(self) -> None:
        self.call(P.Op.RESET_STATS)

    def bod_trace(self, first: int = 0, max_records: int = P.BOD_TRACE_MAX,
                  channel: int = P.CHANNEL_RETURN) -> BodTrace:
        """The BoD records from superframe ``first`` up to the newest, ``max_records`` per request
        (BOD_TRACE), until caught up with the box, with the cycle superframe 0 began. Records the
        box's ring overwrote before they were read are listed in ``lost``. Should the block
        restart meanwhile (a layout commit: the start changes), the reading starts over, so all
        records belong to the run that began at ``start``. ``max_records=0`` asks once and
        reads no record: just the count and the start."""
        if not 0 <= max_records <= 255:
            raise ValueError("max_records must lie in 0 .. 255")
        trace: BodTrace | None = None

        def lose(a, end):
            if trace.lost and trace.lost[-1][1] == a:
                trace.lost[-1] = (trace.lost[-1][0], end)
            else:
                trace.lost.append((a, end))

        want = first
        while True:
            rest = self.call(P.Op.BOD_TRACE, P.BOD_TRACE_REQUEST.pack(channel, want, max_records))
            try:
                count, start, got, records = P.decode_bod_trace(rest)
            except P.ProtocolError as e:
                raise DeviceError(f"{self.url}: {e}") from None
            if trace is not None and start != trace.start:    # restarted since the last answer
                trace, want = None, first
                continue
            if trace is None:
                trace = BodTrace([], count, start)
            trace.count = count
            if got > want:
                lose(want, got)
            for sf, rec in enumerate(records, got):
                if rec.sf == sf & 0xFFFFFFFF:
                    trace.records.append(rec)
                else:                   # overwritten by a newer superframe while being read
                    lose(sf, sf + 1)
            want = got + len(records)
            if not records or want >= trace.count:
                return trace
