# SPDX-License-Identifier: BSD-2-Clause
"""The boxes a lab console serves, each by name: a real board on a serial port or
``rfc2217://``, a simulated board at ``socket://``, or a simulated board the console starts and
stops itself. The console holds each box's one UART connection: a poller reads everything the
box counts several times a second, and requests that change the box take their turn on the
same connection.

Only one client changes a box at a time. A client may hold a box's session (``claim``): until
it lets go or the session lapses, changes from anyone else are refused. Without a session, a
change is refused while another is under way. A change that is refused changes nothing."""

from __future__ import annotations

import dataclasses
import json
import secrets
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from satemu.base.protocol import CHANNEL_NAMES, CHANNEL_RETURN, Capability
from satemu.base.regmap import BOD_ENABLE
from satemu.box.bod_trace import records_to_rows
from satemu.box.control import snapshot
from satemu.box.device import Device, DeviceError
from satemu.serve.store import write_atomic

# How often the poller reads a box (seconds), and how long a box that stopped answering rests
# before the poller tries it again.
POLL_S = 0.1
RETRY_S = 1.0
# A session lapses this long after it was claimed or last used to change the box.
SESSION_S = 300.0
# How long the poller keeps the channels' profiles in force (GET_PROFILE, the largest answer:
# whether BoD is on, the terminals a table has) before reading them again; a load through the
# console reads them at once. A timeline's steps or another host's load show within this.
PROFILE_S = 2.0
# The BoD records a reading takes at most (the oldest first, so none is skipped).
BOD_PER_READING = 64


class BoxError(Exception):
    """A request a box cannot serve: ``status`` is the HTTP status, the message one line."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class Session:
    id: str
    who: str
    until: float


class Box:
    """One box: ``url`` to reach it, or ``sim`` for a simulated board the console launches
    (``start``/``stop``; ``launcher`` and ``killer`` are the board engine's ``launch`` and
    ``kill``)."""

    def __init__(self, name: str, url: str | None = None, sim: bool = False,
                 launcher: Callable | None = None, killer: Callable | None = None,
                 poll_s: float = POLL_S, timeout: float = 5.0):
        self.name, self.url, self.sim = name, url, sim
        self.launcher, self.killer = launcher, killer
        self.poll_s, self.timeout = poll_s, timeout
        self.sim_state: dict | None = None
        self.dev: Device | None = None
        self.info: dict | None = None
        self.error: str | None = None if url else "not started"
        self.uart = threading.Lock()            # the one connection: a request at a time
        self.changing = threading.Lock()        # a change under way
        self.session: Session | None = None
        self.loaded: dict | None = None         # the last load through the console
        # Where the last load is kept across restarts, with the profiles in force after it
        # (the console's data folder sets it): a console started later takes it as the last
        # load if the box still holds those profiles.
        self.memory: Path | None = None
        self._recall = True                     # compare the box with ``memory`` at its reading
        self._remember = False                  # write ``memory`` at the next reading
        self.reading: dict | None = None        # the newest snapshot
        self.seq = 0
        self._profiles: list[dict] | None = None
        self._profiles_at = 0.0
        self._bod_next = 0
        self._bod_start: int | None = None      # the cycle the BoD block last (re)started
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._poll, name=f"box {name}", daemon=True)
        self._thread.start()

    # ---- the connection ----------------------------------------------------------------------

    def _open(self) -> Device:
        if self.dev is None:
            if self.url is None:
                raise BoxError(409, f"box {self.name}: the simulated board is not running; "
                                    f"start it first")
            self.dev = Device(self.url, timeout=self.timeout, sim_hint="start it, or let the "
                              "console run one: satemu serve --sim NAME")
            try:
                self.info = self.dev.hello()
            except BaseException:
                self._drop()
                raise
        return self.dev

    def _drop(self) -> None:
        if self.dev is not None:
            try:
                self.dev.close()
            except OSError:
                pass
        self.dev = None

    def offline(self, fn: Callable[[], object]):
        """``fn()`` with the box's connection closed and no request on it (programming the
        FPGA, which restarts its firmware); the connection is opened afresh, with a new HELLO,
        at the next reading."""
        with self.uart:
            self._drop()
            self.info, self.loaded, self._profiles = None, None, None
            try:
                return fn()
            finally:
                self._wake.set()

    def call(self, fn: Callable[[Device], object]):
        """``fn(device)`` on the box's connection, opened if need be, alone on it; a box that
        does not answer is BoxError 503 (and its connection is opened afresh next time)."""
        with self.uart:
            try:
                return fn(self._open())
            except (DeviceError, OSError) as e:
                self._drop()
                self.error = f"{e}"
                raise BoxError(503, f"box {self.name}: {e}") from None

    def _poll(self) -> None:
        while not self._closed:
            started = time.monotonic()
            if self.url is not None:
                try:
                    reading = self.call(self._read)
                except Exception as e:          # noqa: BLE001 (BoxError, or a garbled reading)
                    self.error = str(e) if isinstance(e, BoxError) else f"box {self.name}: {e}"
                    self._publish(None)
                    self._wake.wait(RETRY_S)
                    self._wake.clear()
                    continue
                self.error = None
                self._publish(reading)
            self._wake.wait(max(0.0, self.poll_s - (time.monotonic() - started)))
            self._wake.clear()

    def _read(self, dev: Device) -> dict:
        now = time.monotonic()
        if self._profiles is None or now - self._profiles_at > PROFILE_S:
            self._profiles = [dev.get_profile(ch) for ch in range(len(CHANNEL_NAMES))]
            self._profiles_at = now
        if self._remember or self._recall:
            self._keep_load()
        reading = snapshot(dev, self.info, profiles=self._profiles)
        prof = self._profiles[CHANNEL_RETURN]
        if self.info["capabilities"] & Capability.BOD and prof["bod_flags"] & BOD_ENABLE:
            reading["bod"] = self._read_bod(dev, prof)
        return reading

    def _read_bod(self, dev: Device, prof: dict) -> dict:
        """The BoD records written since the last reading (at most BOD_PER_READING, oldest
        first)."""
        terminals = (prof["term_framed"] + prof["term_synthetic"]) if prof["term_match"] else 1
        trace = dev.bod_trace(first=self._bod_next, max_records=BOD_PER_READING,
                              terminals=terminals)
        if self._bod_start is not None and (trace.start != self._bod_start
                                            or trace.count < self._bod_next):
            # the block restarted since the last reading (a load from elsewhere, a timeline's
            # layout step): its records from superframe 0 again
            self._bod_next = 0
            trace = dev.bod_trace(first=0, max_records=BOD_PER_READING, terminals=terminals)
        self._bod_start = trace.start
        records = trace.records[:BOD_PER_READING]
        if records:
            self._bod_next = records[-1].sf + 1
        cycles = prof["bod_slots"] * prof["bod_slot_cycles"]
        # in the superframe's shape in force now (a timeline's BoD steps change it: satemu
        # bod-trace --profile reads their records in each one's own)
        new = records_to_rows(records, trace.start, cycles, self.info["f_clk"],
                              prof["bod_slot_bytes"])
        return {"start": trace.start, "count": trace.count, "superframe_cycles": cycles,
                "slot_bytes": prof["bod_slot_bytes"], "terminals": terminals,
                "lost": trace.lost_count, "rows": new}

    def after_load(self, loaded: dict) -> None:
        """A load through the console took effect: ``loaded`` says which; the profiles in
        force and the BoD records are read afresh from the next reading on, and the load is
        kept (``memory``) with them."""
        self.loaded, self._bod_next, self._bod_start, self._profiles = loaded, 0, None, None
        self._remember, self._recall = True, False

    def _keep_load(self) -> None:
        """At a reading with the profiles in force just read: keep the last load with them
        (after a load), or take the kept one as the last load if the box still holds its
        profiles (the first reading after a start)."""
        if self.memory is None:                 # not told yet where (or never)
            return
        if self._remember:
            self._remember = False
            write_atomic(self.memory, json.dumps({"loaded": self.loaded,
                                                  "profiles": self._profiles}))
        elif self._recall:
            self._recall = False
            try:
                kept = json.loads(self.memory.read_text())
            except (OSError, ValueError):
                return
            if self.loaded is None and kept.get("profiles") == self._profiles:
                self.loaded = kept.get("loaded")

    def _publish(self, reading: dict | None) -> None:
        self.reading = reading
        self.seq += 1

    # ---- what a client sees -------------------------------------------------------------------

    def describe(self) -> dict:
        now = time.monotonic()
        s = self.session if self.session and self.session.until > now else None
        return {"name": self.name, "url": self.url, "simulated": self.sim,
                "state": "up" if self.error is None and self.reading is not None else
                         ("stopped" if self.url is None else "down"),
                "error": self.error, "hello": self.info, "loaded": self.loaded,
                # what its HELLO says it has, by Capability's names: bod, frame_log, ...
                "capabilities": [c.name.lower() for c in Capability
                                 if self.info and self.info["capabilities"] & c],
                "session": None if s is None else {"who": s.who,
                                                   "expires_in_s": round(s.until - now, 1)}}

    def live(self) -> tuple[int, dict]:
        """The newest reading and its number (a new number: a new reading or a new error)."""
        return self.seq, {"box": self.name, "seq": self.seq, "error": self.error,
                          "loaded": self.loaded, "reading": self.reading}

    # ---- changing the box -------------------------------------------------------------------

    def claim(self, who: str) -> dict:
        """A session of this box for ``who``: changes from others are refused until it is let
        go (``release``) or lapses (SESSION_S after its last use)."""
        now = time.monotonic()
        if self.session and self.session.until > now:
            raise BoxError(409, f"box {self.name} is held by {self.session.who}'s session for "
                                f"{self.session.until - now:.0f} s more")
        self.session = Session(secrets.token_urlsafe(16), who[:64] or "a client",
                               now + SESSION_S)
        return {"session": self.session.id, "expires_in_s": SESSION_S}

    def release(self, session: str | None) -> None:
        if self.session and self.session.id == session:
            self.session = None
        elif self.session and self.session.until > time.monotonic():
            raise BoxError(409, f"box {self.name}: that session does not hold it")

    @contextmanager
    def change(self, session: str | None):
        """Hold the box for one change: refused (409, nothing done) while another client's
        session holds it or another change is under way."""
        now = time.monotonic()
        s = self.session
        if s and s.until > now and s.id != session:
            raise BoxError(409, f"box {self.name} is held by {s.who}'s session for "
                                f"{s.until - now:.0f} s more; nothing was changed")
        if session and (s is None or s.id != session or s.until <= now):
            raise BoxError(409, f"box {self.name}: that session does not hold it (it ended or "
                                f"lapsed); nothing was changed")
        if not self.changing.acquire(blocking=False):
            raise BoxError(409, f"box {self.name} is being changed by another request; nothing "
                                f"was changed")
        try:
            if s and s.id == session:
                s.until = now + SESSION_S
            yield self
        finally:
            self.changing.release()

    def start(self) -> dict:
        """A simulated board of the console's own, launched (built first if need be)."""
        if not self.sim:
            raise BoxError(409, f"box {self.name} is not a simulated board the console runs")
        if self.sim_state is None:
            try:
                self.sim_state = self.launcher()
            except Exception as e:                      # noqa: BLE001 (the build's or launch's)
                raise BoxError(503, f"box {self.name}: cannot start the simulated board: "
                                    f"{e}") from None
            with self.uart:
                self.url, self.error = self.sim_state["url"], None
            self._wake.set()
        return {"url": self.url, "eth_port": self.sim_state["eth_port"]}

    def stop(self) -> None:
        if not self.sim:
            raise BoxError(409, f"box {self.name} is not a simulated board the console runs")
        with self.uart:
            self._drop()
            state, self.sim_state = self.sim_state, None
            self.url, self.info, self.reading, self.loaded = None, None, None, None
            self.error = "not started"
            self.seq += 1
        if state is not None:
            self.killer(state)

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._thread.join(timeout=5)
        with self.uart:
            self._drop()
        if self.sim and self.sim_state is not None:
            self.killer(self.sim_state)
            self.sim_state = None
