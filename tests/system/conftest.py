# SPDX-License-Identifier: BSD-2-Clause
"""One simulated board for the whole system-test session (built once, booted once)."""

import pytest

from sim import board


@pytest.fixture(scope="session")
def board_state():
    """The running board: its UART ``url`` and the Ethernet module's ``eth_port``."""
    state = board.launch()
    yield state
    board.kill(state)


@pytest.fixture(scope="session")
def url(board_state):
    return board_state["url"]
