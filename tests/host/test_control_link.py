# SPDX-License-Identifier: BSD-2-Clause
"""The control link's session rules on a local serial port (a pseudo-terminal stands in for
the board's USB UART): one satemu at a time, and nothing from before the session is read."""

import os
import tty

import pytest

from satemu.base import protocol as P
from satemu.box.device import Device, DeviceError


@pytest.fixture
def serial_port():
    primary, secondary = os.openpty()
    tty.setraw(secondary)
    yield primary, os.ttyname(secondary)
    os.close(primary)
    os.close(secondary)


def test_a_second_satemu_on_the_port_gets_one_line(serial_port):
    _, path = serial_port
    with Device(path, timeout=0.2):
        with pytest.raises(DeviceError, match=rf"^{path} is in use by another program "
                                              r"\(another satemu, or a terminal\); close it first$"):
            Device(path, timeout=0.2)
    with Device(path, timeout=0.2):                      # the lock goes with the session
        pass


def test_stale_input_is_dropped_on_open(serial_port):
    primary, path = serial_port
    # An answer meant for an earlier session, still in the port.
    os.write(primary, P.encode_frame(1, P.Op.HELLO | P.RESPONSE_BIT, bytes([P.Status.OK])))
    with Device(path, timeout=0.2) as dev:
        assert dev.port.in_waiting == 0
        assert not dev.deframer.feed(dev.port.read(4096))


def test_sequence_numbers_start_at_random(serial_port):
    _, path = serial_port
    starts = set()
    for _ in range(8):
        with Device(path, timeout=0.2) as dev:
            starts.add(dev.seq)
    assert len(starts) > 1
