# SPDX-License-Identifier: BSD-2-Clause
"""Shared pytest set-up: the repository root is importable (for ``sim``), and with
SATEMU_BITSTREAM=1, when the session includes the Versa-5G bitstream tests, the bitstream builds
in the background from the start (at the lowest priority, on the core the other tests leave
idle) and those tests run last; without it they check the committed reports against the
sources' keys (tests/hardware/test_versa_bitstream.py).

Tests that build a Verilator model, the simulated board or a bitstream, or that run for minutes,
are marked ``slow`` here (``SLOW``); ``make check`` runs the rest (``-m "not slow"``). The
data-path variants of the simulated board (tests/datapath), and the system tests' board before
them, build the same way, one after the other, and the data-path tests run just before the
bitstream's (``satemu_boards``; tests/system/conftest.py and tests/datapath/conftest.py wait for
it). `make test` runs the slow tests in two such sessions at once, and has built their boards
beside the fast tests (scripts/test.sh; a board's build holds its key's lock).

The session also fails if it changed the checkout: a tracked file's content, or a file that git
would list as new (``tree_state`` before and after; builds belong under ``build/``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from checkout_state import tree_state  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUILD_LOG = ROOT / "build" / "board" / "background.log"
BITSTREAM_TESTS = "test_versa_bitstream.py"
DATAPATH_BOARDS = {"test_datapath_versa.py": "versa-ecp5",
                   "test_datapath_colorlight.py": "colorlight-5a-75b"}

# What ``make check`` leaves out: folders and files (relative to tests/) whose tests build a
# Verilator model, the simulated board or a bitstream, or run for minutes; in test_versa_bitstream
# only the tests that wait for the build.
SLOW = ("system/", "datapath/", "gateware/test_channel.py", "gateware/test_channel_bod.py",
        "gateware/test_channel_terms.py", "host/test_install.py")


# `make test` runs the slow tests in two sessions at once (scripts/test.sh), each on a core,
# ``--slow-session main`` and ``beside``: "main" the channel's cocotb scenarios, then the system
# tests on the board they share; "beside" every other slow test (the install tests, the data-path
# points, and the system tests below, which need no board or start their own), so that the two
# end about together. Without the option a session runs every test it collects.
MAIN_SESSION = ("gateware/", "system/")
BESIDE_TOO = ("system/test_quic.py", "system/test_realtime.py", "system/test_realtime_scenario.py")


def pytest_addoption(parser):
    parser.addoption("--slow-session", choices=("main", "beside"), default=None,
                     help="run only the slow tests of this session of `make test` "
                          "(scripts/test.sh)")


def _session_of(item) -> str:
    rel = item.path.relative_to(Path(__file__).resolve().parent).as_posix()
    return "main" if rel.startswith(MAIN_SESSION) and not rel.startswith(BESIDE_TOO) \
        else "beside"


def _slow(item) -> bool:
    rel = item.path.relative_to(Path(__file__).resolve().parent).as_posix()
    if rel.endswith(BITSTREAM_TESTS):           # slow only where the suite builds it
        return "versa" in item.fixturenames and os.environ.get("SATEMU_BITSTREAM") == "1"
    return rel.startswith(SLOW)


@pytest.hookimpl(tryfirst=True)         # before -m deselects by marker
def pytest_itemcollected(item):
    if _slow(item):
        item.add_marker(pytest.mark.slow)


def _start_board_builds(config, items):
    """Move the data-path tests to the end and build, in the background, the simulated board
    the system tests share (first: they run before the data-path tests) and the data-path
    boards; the tests that use a board wait for the builds (tests/system/conftest.py,
    tests/datapath/conftest.py), so that the build uses the core the host tests leave idle."""
    datapath = [i for i in items if i.path.name in DATAPATH_BOARDS]
    system = any("board_state" in i.fixturenames for i in items)
    if not (datapath or system) or config.option.collectonly:
        return
    items[:] = [i for i in items if i not in datapath] + datapath
    boards = ["sim"] * system + sorted({DATAPATH_BOARDS[i.path.name] for i in datapath})
    BUILD_LOG.parent.mkdir(parents=True, exist_ok=True)
    script = ("import sys; from sim.board import build_board\n"
              "for name in sys.argv[1:]: build_board(board=name)")
    with open(BUILD_LOG, "w") as log:
        config.satemu_boards = subprocess.Popen(
            [sys.executable, "-c", script, *boards], cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=lambda: os.nice(19))


@pytest.hookimpl(trylast=True)          # after -k / -m have deselected what they deselect
def pytest_collection_modifyitems(session, config, items):
    which = config.getoption("--slow-session")
    if which is not None:
        other = [i for i in items if _session_of(i) != which]
        if other:
            config.hook.pytest_deselected(items=other)
            items[:] = [i for i in items if _session_of(i) == which]
    _start_board_builds(config, items)
    full = [i for i in items if i.path.name == BITSTREAM_TESTS and "versa" in i.fixturenames]
    if not full or os.environ.get("SATEMU_BITSTREAM") != "1" or config.option.collectonly:
        return
    items[:] = [i for i in items if i not in full] + full
    from hw import bitstream
    config.satemu_bitstream = bitstream.start_background("versa-ecp5")


def pytest_unconfigure(config):
    for name in ("satemu_bitstream", "satemu_boards"):
        proc = getattr(config, name, None)
        if proc is not None and proc.poll() is None:  # the session ended before its tests ran
            import signal
            os.killpg(proc.pid, signal.SIGTERM)      # the build and the tools it started


def pytest_sessionstart(session):
    session.config.satemu_tree = tree_state()


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "satemu_tree", None)
    if before is None or session.config.option.collectonly:
        return
    after = tree_state()
    if after == before:
        return
    changed = sorted(set(after["paths"]) ^ set(before["paths"]))
    what = ", ".join(changed) if changed else "the content of a tracked file already changed"
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    reporter.write_line(f"FAILED: the test session changed the checkout: {what}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
