# SPDX-License-Identifier: BSD-2-Clause
"""The host tool as a lab installs it for a real board: the package's wheel, installed with its
locked dependencies into a fresh virtual environment outside the repository. What a board needs
works there; what builds the simulated board refuses in one line and says why."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=900,
                          **kwargs)


@pytest.fixture(scope="module")
def satemu(tmp_path_factory):
    """Runs the installed ``satemu`` in an empty directory, with nothing of the repository on
    its paths; returns (exit status, stdout, stderr)."""
    tmp = tmp_path_factory.mktemp("install")
    venv = tmp / "venv"
    # Nothing of the repository's environment: no paths into it, no checkout named.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SATEMU_REPO", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin"
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist",
                 ROOT], env=env)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp / "dist").glob("satemu-*.whl")
    assert run([sys.executable, "-m", "venv", venv], env=env).returncode == 0
    pip = run([venv / "bin" / "python", "-m", "pip", "install", "-q", "-c",
               ROOT / "requirements.lock", wheel], env=env)
    assert pip.returncode == 0, pip.stderr
    work = tmp / "work"
    work.mkdir()

    def satemu(*args):
        done = run([venv / "bin" / "satemu", *args], cwd=work, env=env)
        return done.returncode, done.stdout, done.stderr
    satemu.venv = venv
    satemu.work = work
    return satemu


def test_the_wheel_holds_the_host_tool_only(satemu):
    site = next((satemu.venv / "lib").glob("python3*/site-packages"))
    assert (site / "satemu" / "profiles" / "geo-testbed.toml").is_file()
    assert not (site / "sim").exists() and not (site / "hw").exists()
    # Installed, not a link to the repository.
    assert not any(p.name.startswith("__editable__") for p in site.iterdir())


def test_profiles_show_and_load_work_without_the_repository(satemu):
    status, out, err = satemu("profiles")
    assert status == 0 and "geo-testbed" in out and "sat-endres" in out, err
    status, out, err = satemu("show", "geo-testbed", "--board", "versa-ecp5")
    assert status == 0, err
    assert "board: versa-ecp5 (the Lattice ECP5 Versa-5G), 55 MHz" in out
    status, out, err = satemu("load", "--help")
    assert status == 0 and "--port URL" in out
    # A box that is not there: a one-line error, not a traceback.
    status, out, err = satemu("stats", "--port", "socket://127.0.0.1:9", "--timeout", "0.2")
    assert status == 2 and err.startswith("satemu: ") and "Traceback" not in err


@pytest.mark.parametrize("verb", [
    ["sim", "start"],
    ["quic", "--profile", "geo-testbed", "--size", "100KB"],
    ["experiment", "ack-policy"],
])
def test_simulated_board_verbs_say_they_need_a_checkout(satemu, verb):
    """The board engine is registered by a checkout's sim/ (satemu.quic.engine): the wheel
    alone has only the model's, and a verb that needs the board says so in one line."""
    status, out, err = satemu(*verb)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "the board engine" in err and "needs a satemu source checkout" in err


def test_flash_takes_a_bitstream_from_the_command_line(satemu):
    status, out, err = satemu("flash", "--board", "versa-ecp5", "--dry-run")
    assert status == 2 and "--bitstream PATH" in err and "Traceback" not in err
    bit = satemu.work / "top.bit"
    bit.write_bytes(b"\xff" * 64)
    status, out, err = satemu("flash", "--board", "versa-ecp5", "--dry-run", "--bitstream",
                              str(bit))
    assert status == 0 and out == f"openFPGALoader -c ft2232 -m {bit}\n", err
