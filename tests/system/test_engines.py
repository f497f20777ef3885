# SPDX-License-Identifier: BSD-2-Clause
"""The two engines are one: the same QUIC transfer across the simulated board (Verilator) and
across the reference models of its frame path gives the same run, frame for frame. Every
datagram's cycle, every delivery's cycle, every counter of both channels and every BoD record
are compared exactly, for a plain profile, a lossy one and a BoD one.

What the model cannot predict it does not pretend to: an overrun of a channel's ingress FIFO
(a burst on the wire longer than the FIFO absorbs) and a late frame (a memory slower than the
traffic). Each run here asserts that the board had neither (its counters) and that the model
saw no burst that could have caused one (``exactness``); docs/architecture.md, "Two engines"."""

import pytest

from satemu.quic.cosim import differences, model_twin
from sim.cosim import run_transfer

# Short paths, so that each board run takes seconds; losses on both channels; BoD on the return.
LOSSY = """
name = "short-asym-lossy"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
loss = "3%"
queue = "20 packets"
[return]
rate = "1.5 Mbit/s"
delay = "10 ms"
gilbert_elliott = {p = 0.05, r = 0.5, loss_good = 0.01, loss_bad = 0.3}
"""

BOD = """
name = "short-asym-bod"
[forward]
rate = "8.5 Mbit/s"
delay = "10 ms"
[return]
delay = "10 ms"
[return.bod]
superframe = "26.5 ms"
slots = 140
slot_bytes = 188
cra = "100 kbit/s"
rbdc_max = "1.5 Mbit/s"
rbdc_timeout = 8
vbdc_max = "64 KB"
request_period = 1
latency = 4
background = 0.5
"""

CASES = {
    "plain": ("short-asym", 150_000, "ratio:2", 3),
    "lossy": (LOSSY, 150_000, "ratio:10", 4),
    "bod": (BOD, 100_000, "adaptive", 5),
}


@pytest.mark.parametrize("case", list(CASES))
def test_model_engine_equals_the_board(board_state, tmp_path, case):
    text, size, ack, seed = CASES[case]
    profile = text
    if "\n" in text:
        profile = tmp_path / f"{case}.toml"
        profile.write_text(text)
    profile = str(profile)
    board = run_transfer(board_state["url"], board_state["eth_port"], profile, size, ack=ack,
                         seed=seed, max_seconds=30)
    assert board.completed and board.error is None
    for d in ("forward", "return"):
        # What the model cannot predict did not happen on the board.
        assert board.board_stats[d]["drop_overrun"] == 0 and board.board_stats[d]["late"] == 0
    model = model_twin(board, profile, max_seconds=30)      # with the board's BoD phase
    assert model.exactness["exact"]
    assert differences(board, model) == []
    # Not vacuous: the runs carried traffic, and the lossy and BoD cases exercised their parts.
    stats = board.board_stats
    assert stats["forward"]["tx_frames"] > 50 and stats["return"]["tx_frames"] > 10
    if case == "lossy":
        assert stats["forward"]["drop_loss"] > 0 and stats["return"]["drop_loss"] > 0
    if case == "bod":
        records = model.bod["records"]
        assert len(records) == len(board.bod["records"]) > 10 and not board.bod["lost"]
        assert sum(r["g_rbdc"] + r["g_vbdc"] for r in records) > 0
        assert sum(r["used"] for r in records) > 0
