# SPDX-License-Identifier: BSD-2-Clause
"""What every data-path point of a board variant must show (sim.datapath.run_point's result)."""

import pytest


def _assert_delivered_exactly(r: dict) -> None:
    """Every frame offered on each channel was on the wire on schedule, taken, delivered at the
    model's egress cycle with its bytes, and counted so by the firmware; nothing dropped."""
    assert r["complete"]
    for name, ch in r["per_channel"].items():
        assert ch["wire_on_schedule"] and ch["arrivals_as_the_mac_latency_says"], name
        assert ch["overrun"] == 0 and ch["model_fates"] == {"DELIVERED": ch["offered"]}, name
        assert ch["exact"] and ch["late_seen"] == 0 and ch["wrong_on_the_wire"] == 0, name
        c = ch["counters"]
        assert c["late"] == 0 and c["rx_frames"] == c["tx_frames"] == ch["offered"], name
        assert not any(c[k] for k in ("drop_overrun", "drop_mem", "drop_queue", "drop_loss")), name
    assert r["ok"]


@pytest.fixture
def assert_delivered_exactly():
    return _assert_delivered_exactly


@pytest.fixture(scope="module", autouse=True)
def _boards_built(request):
    """The background build of the data-path boards (tests/conftest.py) has ended, so a board's
    fixture finds it built (or, if it failed, builds it itself, saying why in its error)."""
    proc = getattr(request.config, "satemu_boards", None)
    if proc is not None:
        proc.wait()
