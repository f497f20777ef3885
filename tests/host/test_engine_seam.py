# SPDX-License-Identifier: BSD-2-Clause
"""The engine seam (satemu.quic.engine): both engines are found through the ``satemu.engines``
entry points, both have the Engine surface, and one ``run_transfer`` runs either."""

import pytest

from satemu.quic.cosim import differences
from satemu.quic.engine import (ENGINES, Engine, EngineError, ModelEngine, engine_class,
                                run_model_transfer, run_transfer)


def test_every_engine_is_registered_and_has_the_engine_surface():
    """In a checkout (make installs its sim/ and hw/ editable), both names resolve; the board's
    class comes from the checkout's sim package, not from the host package."""
    assert ENGINES == ("board", "model")
    assert engine_class("model") is ModelEngine
    board = engine_class("board")
    assert board.__module__ == "sim.engine" and board.name == "board"
    for engine in (ModelEngine(), board("socket://127.0.0.1:9", 9)):
        assert isinstance(engine, Engine)
    # The board's lifecycle comes with it, for `satemu sim` and the sweep's workers.
    for name in ("start", "stop", "status", "launch", "kill", "alive", "build_board"):
        assert callable(getattr(board, name))


def test_an_unknown_engine_is_refused_in_one_line():
    with pytest.raises(EngineError, match="no 'warp' engine is registered"):
        engine_class("warp")


def test_run_transfer_by_name_is_the_model_engine_s_run():
    a = run_transfer("model", "short-asym", 30_000, ack="ratio:2", seed=4, max_seconds=20)
    b = run_model_transfer("short-asym", 30_000, ack="ratio:2", seed=4, max_seconds=20)
    assert a.completed and a.engine == "model" and a.exactness is not None
    assert differences(a, b) == []


def test_the_board_engine_needs_its_board():
    with pytest.raises(ValueError, match="needs a running simulated board"):
        run_transfer("board", "short-asym", 10_000)
