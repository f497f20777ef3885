# SPDX-License-Identifier: BSD-2-Clause
"""One simulated board for the whole system-test session (built once, booted once).

Where the tests may (root, /dev/net/tun), the board's ports are also bridged to two TAP
interfaces for the real-time test. They stay down, so the kernel sends nothing on them, until
that test moves them into its namespaces; it runs last (test_tap.py), and nothing else uses
the board after it. One board only: two Verilator boards beside the test driver would overload
two cores."""

import os

import pytest

from sim import board


def _taps():
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        return None
    return (f"sa{os.getpid() % 10000}", f"sb{os.getpid() % 10000}")


@pytest.fixture(scope="session")
def board_state():
    """The running board: its UART ``url``, the Ethernet module's ``eth_port`` and ``taps``."""
    state = board.launch(taps=_taps())
    yield state
    board.kill(state)


@pytest.fixture(scope="session")
def url(board_state):
    return board_state["url"]
