# SPDX-License-Identifier: BSD-2-Clause
"""The frame log through the device API, against a fake box that answers with the firmware's
Python references: HELLO's log, READ_LOG's whole window in chunks (a ring that moves on, is
overwritten or cleared while it is read), CLEAR_LOG, and a box without a log."""

from dataclasses import replace

import pytest

from satemu.box import device as device_mod
from satemu.model import framelog as L
from satemu.base import protocol as P
from satemu.base.boards import BOARDS
from satemu.box.device import Device, DeviceError

from fake_serial import FakeSerial

SIM = BOARDS["sim"].hardware


def record(n: int, ring: int) -> tuple[int, int]:
    """Record number ``n`` of the fake log, as a ring of ``ring`` records stores it."""
    return L.pack(L.Record(kind=L.DECIDED, cycle=1000 * n, length=64 + n % 1000,
                           index=n % L.INDEX_MOD, tx=n, lap=n // ring))


class LogBox(FakeSerial):
    """A box on a fake serial port with a frame log of ``ring`` records per channel (0: none):
    HELLO, READ_LOG (protocol.read_log_answer over the ring's slots) and CLEAR_LOG. ``count``
    records have been written; each READ_LOG lets ``per_request`` more be written after it is
    answered, and the request numbered in ``clear_after`` clears the log after its answer."""

    def __init__(self, ring: int = 64, count: int = 0, per_request: int = 0):
        self.ring, self.per_request = ring, per_request
        self.count = [0, 0]
        self.lost = [0, 0]
        self.slots = [{}, {}]
        self.requests, self.clears = [], 0
        self.clear_after: set[int] = set()
        super().__init__()
        for ch in (0, 1):
            self.write_records(ch, count)

    def write_records(self, ch: int, k: int):
        for _ in range(k):
            n = self.count[ch]
            self.slots[ch][n % self.ring] = record(n, self.ring)
            self.count[ch] += 1

    def clear(self):
        self.count, self.lost, self.clears = [0, 0], [0, 0], self.clears + 1

    def answer(self, op: int, p: bytes) -> bytes:
        if op == P.Op.HELLO:
            return P.hello_answer(p, replace(SIM, log_records=self.ring).limits(), SIM.bod_mask)
        if op == P.Op.CLEAR_LOG:
            answer = P.clear_log_answer(p, self.ring)
            if answer[0] == P.Status.OK:
                self.clear()
            return answer
        if op == P.Op.READ_LOG:
            answer = P.read_log_answer(
                p, self.ring, lambda ch: self.count[ch], lambda ch: self.lost[ch],
                lambda ch, n: self.slots[ch].get(n % self.ring, (0, 0)))
            self.requests.append(p)
            channel = p[0] if p else 0
            if channel < 2:
                self.write_records(channel, self.per_request)
            if len(self.requests) in self.clear_after:
                self.clear()
            return answer
        return bytes([P.Status.BAD_OPCODE])


@pytest.fixture
def box(monkeypatch):
    """Device URLs starting with fake:// reach the LogBox this returns."""
    boxes = {}

    def connect(url, **kwargs):
        assert url.startswith("fake://")
        return boxes["box"]

    monkeypatch.setattr(device_mod.serial, "serial_for_url", connect)

    def make(**kwargs):
        boxes["box"] = LogBox(**kwargs)
        return boxes["box"]
    return make


def checked(first: int, records, ring: int) -> tuple[int, int]:
    """(records that are those numbered first, first + 1, ..., stale ones): each record's lap
    must be that of its number."""
    good = stale = 0
    for n, (w0, w1) in enumerate(records, first):
        r = L.unpack(w0, w1)
        if r is None or r.lap != (n // ring) % L.LAP_MOD:
            stale += 1
            continue
        assert (w0, w1) == record(n, ring)
        good += 1
    return good, stale


def test_hello_reports_the_log(box):
    box(ring=1 << 21)
    with Device("fake://box") as dev:
        info = dev.hello()
        assert info["capabilities"] & P.Capability.FRAME_LOG
        assert info["log_records"] == 1 << 21
        hw = dev.hardware()
        assert hw.log_records == 1 << 21 and hw.params.frame_log
    box(ring=0)
    with Device("fake://box") as dev:
        assert not dev.hello()["capabilities"] & P.Capability.FRAME_LOG
        assert dev.hardware().log_records == 0


def test_read_log_reads_the_whole_window_in_chunks(box):
    """From the oldest record the ring holds to the count, READ_LOG_MAX a request."""
    fake = box(ring=64, count=100)
    fake.lost[1] = 5
    with Device("fake://box") as dev:
        count, lost, first, records = dev.read_log(1)
    assert (count, lost, first, len(records)) == (100, 5, 36, 64)
    assert checked(first, records, 64) == (64, 0)
    wants = [P.READ_LOG_REQUEST.unpack(p) for p in fake.requests]
    assert wants == [(1, 0, P.READ_LOG_MAX), (1, 66, P.READ_LOG_MAX), (1, 96, P.READ_LOG_MAX)]
    with Device("fake://box") as dev:
        assert dev.read_log(0, first=90)[2:] == (90, [record(n, 64) for n in range(90, 100)])
        assert dev.read_log(0, first=100) == (100, 0, 100, [])
        assert dev.read_log(0, first=5000) == (100, 0, 5000, [])


def test_read_log_while_the_ring_moves_on(box):
    """Records written while the window is read: the window stays the first answer's, and
    records the ring overwrote before they were asked for are (0, 0), which the host counts
    stale."""
    fake = box(ring=64, count=100, per_request=40)
    with Device("fake://box") as dev:
        count, lost, first, records = dev.read_log(0)
    assert (count, first, len(records)) == (100, 36, 64)
    # After the first answer 40 more were written (the ring now holds 76..139): 66..75 were
    # lost before the second request asked for them, which started at 76.
    assert records[30:40] == [(0, 0)] * 10
    assert checked(first, records, 64) == (54, 10)
    fake = box(ring=64, count=100, per_request=60)
    with Device("fake://box") as dev:
        count, lost, first, records = dev.read_log(0)
    # The ring moved past the whole rest of the window before it was asked for.
    assert (count, first, len(records)) == (100, 36, 64)
    assert checked(first, records, 64) == (34, 30)
    assert len(fake.requests) == 2


def test_read_log_starts_over_when_cleared(box):
    """A log cleared between two answers (its count falls): the reading starts over, and every
    record is the new log's."""
    fake = box(ring=64, count=100)
    fake.clear_after = {1}
    clear = fake.clear

    def clear_and_write():            # the clear, then 10 records of the new log
        clear()
        fake.write_records(0, 10)
    fake.clear = clear_and_write
    with Device("fake://box") as dev:
        count, lost, first, records = dev.read_log(0)
    assert fake.clears == 1
    assert (count, first, len(records)) == (10, 0, 10)
    assert checked(first, records, 64) == (10, 0)


def test_clear_log(box):
    fake = box(ring=64, count=100)
    with Device("fake://box") as dev:
        dev.clear_log()
        assert fake.clears == 1 and fake.count == [0, 0]
        assert dev.read_log(0) == (0, 0, 0, [])


def test_a_box_without_a_log(box):
    box(ring=0)
    message = r"^this board's gateware has no frame log \(a build option the board leaves out\)$"
    with Device("fake://box") as dev:
        with pytest.raises(DeviceError, match=message):
            dev.read_log(0)
        with pytest.raises(DeviceError, match=message):
            dev.clear_log()
        with pytest.raises(DeviceError, match="BAD_CHANNEL"):
            dev.read_log(2)
