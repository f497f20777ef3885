# SPDX-License-Identifier: BSD-2-Clause
"""The one build pipeline (hw.pipeline): each cached build's content key follows what the build
reads and nothing else, and a build step over its limit, or stopped, leaves nothing behind."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hw import bitstream, pipeline
from sim import board, build

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def copied(tmp_path_factory):
    """A copy of the sources the builds read, made once."""
    tmp = tmp_path_factory.mktemp("tree")
    for d in ("gateware", "hw", "sim", "constraints", "firmware", "host/satemu"):
        shutil.copytree(ROOT / d, tmp / d, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp


@pytest.fixture
def tree(monkeypatch, copied):
    """The copy, which the keys are computed over while a test runs."""
    monkeypatch.setattr(pipeline, "ROOT", copied)
    monkeypatch.setattr(pipeline, "PACKAGES", {
        "satemu": copied / "host" / "satemu", "satemu_gw": copied / "gateware" / "satemu_gw",
        "hw": copied / "hw", "sim": copied / "sim"})
    return copied


def all_keys():
    from satemu.base.params import ChannelParams
    keys = {f"bitstream {name}": bitstream._key(name, 1) for name in bitstream.BOARDS}
    keys.update({f"board {name}": board._key(name) for name in ("sim", "versa-ecp5",
                                                               "colorlight-5a-75b")})
    keys["channel model"] = build.channel_model_key(ChannelParams())
    return keys


EVERY = {"bitstream versa-ecp5", "bitstream colorlight-5a-75b", "board sim", "board versa-ecp5",
         "board colorlight-5a-75b", "channel model"}
SOCS = EVERY - {"channel model"}


@pytest.mark.parametrize("path, moved", [
    # A board's own target and constraints move its builds (and its variant's), not others'.
    ("hw/colorlight_5a_75b.py", {"bitstream colorlight-5a-75b", "board colorlight-5a-75b"}),
    ("constraints/versa_ecp5.py", {"bitstream versa-ecp5", "board versa-ecp5"}),
    # What the SoCs share; the MAC imports hw.cdc inside a method, which counts too.
    ("hw/ethport.py", SOCS),
    ("hw/cdc.py", SOCS),
    # The simulated board's own SoC and harness move only the simulated boards.
    ("hw/satemu_soc.py", {"board sim", "board versa-ecp5", "board colorlight-5a-75b"}),
    ("sim/modules/satemu_eth/satemu_eth.c", {"board sim", "board versa-ecp5",
                                             "board colorlight-5a-75b"}),
    # The firmware is in every SoC; its host-compiled tests are in none.
    ("firmware/app/main.c", SOCS),
    ("firmware/tests/test_fw.c", set()),
    # The channel's gateware and the shared parameter types are in every build.
    ("gateware/satemu_gw/admission.py", EVERY),
    ("host/satemu/base/params.py", EVERY),
    # The board registry is read by every SoC build (the channel model takes its parameters
    # as given); host modules no build imports are in no key.
    ("host/satemu/base/boards.py", SOCS),
    ("host/satemu/cli/__init__.py", set()),
    ("host/satemu/link/profile.py", set()),
    # The models are no build's: the gateware imports the foundation alone (satemu.base).
    ("host/satemu/model/channel.py", set()),
])
def test_a_key_moves_exactly_with_what_its_build_reads(tree, path, moved):
    before = all_keys()
    original = (tree / path).read_bytes()
    with open(tree / path, "a") as f:
        f.write("\n/* changed */\n" if path.endswith((".c", ".h")) else "\n# changed\n")
    try:
        after = all_keys()
    finally:
        (tree / path).write_bytes(original)
    assert {name for name in after if after[name] != before[name]} == moved


def test_imports_are_followed_through_the_project_only():
    files = pipeline.imported_files(["hw.versa_ecp5"])
    rel = {str(p.relative_to(ROOT)) for p in files}
    # Its package, its own imports, theirs (satemu.base.boards imports satemu.base.hardware),
    # and those made inside functions (hw.ethport imports hw.fcs in a method).
    assert {"hw/__init__.py", "hw/versa_ecp5.py", "hw/soc_common.py", "hw/ethport.py",
            "hw/fcs.py", "host/satemu/__init__.py", "host/satemu/base/boards.py",
            "host/satemu/base/hardware.py", "gateware/satemu_gw/channel.py"} <= rel
    assert all(p.is_relative_to(ROOT) for p in files)
    assert not any(r.startswith("host/satemu/cli/") for r in rel)


def test_a_declared_data_file_that_is_missing_fails():
    with pytest.raises(FileNotFoundError, match="no-such"):
        pipeline.content_key([], ["firmware/no-such.c"])


def assert_gone(pid):
    """``pid`` stops existing within 5 s (killed, then reaped by init)."""
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)


def test_step_over_the_limit_is_stopped(tmp_path):
    # A step that runs past its limit fails the build, and nothing it started (here a child of
    # the shell) is left running.
    marker = tmp_path / "child.pid"
    with open(tmp_path / "log", "w") as log, pytest.raises(pipeline.StepError, match="limit"):
        pipeline.run_step(["sh", "-c", f"sleep 30 & echo $! > {marker}; wait"], log, tmp_path,
                          dict(os.environ), limit=1)
    assert_gone(int(marker.read_text()))


def test_a_failing_step_says_where_its_log_is(tmp_path):
    with open(tmp_path / "log", "w") as log, pytest.raises(pipeline.StepError,
                                                           match=f"see {tmp_path / 'log'}"):
        pipeline.run_step(["sh", "-c", "exit 3"], log, tmp_path, dict(os.environ))


def test_sigterm_stops_the_running_step(tmp_path):
    # The test session stops an unfinished build with SIGTERM to the build's process group; the
    # running step has a group of its own and must go too.
    marker = tmp_path / "child.pid"
    script = (
        "import os, signal, sys\n"
        "from hw import pipeline\n"
        "signal.signal(signal.SIGTERM, pipeline.stop_running_steps)\n"
        "with open(sys.argv[1], 'w') as log:\n"
        f"    pipeline.run_step(['sh', '-c', 'sleep 30 & echo $! > {marker}; wait'], log, '.',"
        " dict(os.environ))\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "log")], cwd=ROOT,
                            start_new_session=True)
    for _ in range(100):
        if marker.exists() and marker.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(marker.read_text())
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(10) == 128 + signal.SIGTERM
    assert_gone(pid)
