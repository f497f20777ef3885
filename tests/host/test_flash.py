# SPDX-License-Identifier: BSD-2-Clause
"""`satemu flash`: openFPGALoader's command line per board and mode, the bitstream from the build
report, the refusals, and the options checked against the installed openFPGALoader."""

import json
import re
import shlex
import shutil
import subprocess

import pytest

from satemu.box import flash
from satemu.cli import main
from satemu.box.flash import (PROGRAMMERS, FlashError, flash_command, parse_hz, plan_flash,
    resolve_bitstream, run_flash)

BIT = "build/bitstream/b/0123/soc/gateware/top.bit"


def write_report(results, board="versa-ecp5", bitstream=BIT, ok=True, **extra):
    results.mkdir(parents=True, exist_ok=True)
    report = {"board": board, "ok": ok, "error": None if ok else "timing not met: sys_clk",
              "bitstream": bitstream, "key": "0123",
              "clocks": {"sys_clk": {"fmax_mhz": 80.0 if ok else 38.75, "target_mhz": 75.0,
                                     "met": ok},
                         "eth_rx": {"fmax_mhz": 150.0, "target_mhz": 125.0, "met": True}}}
    report.update(extra)
    path = results / f"bitstream-{board}.json"
    path.write_text(json.dumps(report))
    return path


def make_bit(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\xff\x00bitstream")
    return path


# --- the command ------------------------------------------------------------------------------

@pytest.mark.parametrize("board, mode, expected", [
    ("versa-ecp5", "sram", ["openFPGALoader", "-c", "ft2232", "-m", "x.bit"]),
    ("versa-ecp5", "spi", ["openFPGALoader", "-c", "ft2232", "-f", "x.bit"]),
    ("colorlight-5a-75b", "sram", ["openFPGALoader", "-b", "colorlight", "-c", "ft232", "-m",
                                   "x.bit"]),
    ("colorlight-5a-75b", "spi", ["openFPGALoader", "-b", "colorlight", "-c", "ft232", "-f",
                                  "x.bit"]),
])
def test_command_per_board_and_mode(board, mode, expected):
    assert flash_command(board, mode, "x.bit") == expected


def test_command_overrides():
    assert flash_command("colorlight-5a-75b", "spi", "/b/top.bit", cable="dirtyJtag",
                         ftdi_serial="FT6ABC", freq=3_000_000, verify=True) == [
        "openFPGALoader", "-b", "colorlight", "-c", "dirtyJtag", "--ftdi-serial", "FT6ABC",
        "--freq", "3000000", "-f", "--verify", "/b/top.bit"]
    assert flash_command("versa-ecp5", "sram", "t.bit", cable="ft2232_b", freq=1000) == [
        "openFPGALoader", "-c", "ft2232_b", "--freq", "1000", "-m", "t.bit"]


def test_command_rejects_bad_requests():
    with pytest.raises(FlashError, match="unknown board"):
        flash_command("arty", "sram", "x.bit")
    with pytest.raises(FlashError, match="unknown mode"):
        flash_command("versa-ecp5", "eeprom", "x.bit")
    with pytest.raises(FlashError, match="--verify .* --spi"):
        flash_command("versa-ecp5", "sram", "x.bit", verify=True)
    with pytest.raises(FlashError, match="--freq"):
        flash_command("versa-ecp5", "sram", "x.bit", freq=0)


def test_parse_hz():
    assert parse_hz("6000000") == 6_000_000
    assert parse_hz("6M") == parse_hz("6MHz") == 6_000_000
    assert parse_hz("1.1M") == 1_100_000
    assert parse_hz("500k") == 500_000
    for bad in ("fast", "0", "1.5", "-3M", ""):
        with pytest.raises(FlashError, match="--freq"):
            parse_hz(bad)


# --- the bitstream ----------------------------------------------------------------------------

def test_default_bitstream_from_report(tmp_path):
    results = tmp_path / "results"
    write_report(results)
    assert resolve_bitstream("versa-ecp5", results=results, root=tmp_path) == tmp_path / BIT
    bit = make_bit(tmp_path / "elsewhere" / "abs.bit")          # an absolute path, as is
    write_report(results, board="colorlight-5a-75b", bitstream=str(bit))
    assert resolve_bitstream("colorlight-5a-75b", results=results, root=tmp_path / "x") == bit


def test_plan_uses_report_bitstream(tmp_path):
    results = tmp_path / "results"
    write_report(results)
    bit = make_bit(tmp_path / BIT)
    assert plan_flash("versa-ecp5", "spi", results=results, root=tmp_path, verify=True) == [
        "openFPGALoader", "-c", "ft2232", "-f", "--verify", str(bit)]


def test_explicit_bitstream_overrides_report(tmp_path):
    results = tmp_path / "results"
    write_report(results, ok=False)                    # about another file: not in the way
    bit = make_bit(tmp_path / "mine.bit")
    assert plan_flash("versa-ecp5", bitstream=bit, results=results, root=tmp_path)[-1] == str(bit)
    assert plan_flash("versa-ecp5", bitstream=bit, results=tmp_path / "none")[-1] == str(bit)


def test_no_report(tmp_path):
    with pytest.raises(FlashError, match=r"make bitstream BOARD=colorlight-5a-75b"):
        resolve_bitstream("colorlight-5a-75b", results=tmp_path)


def test_report_without_bitstream(tmp_path):
    write_report(tmp_path, bitstream=None, ok=False)
    with pytest.raises(FlashError, match=r"wrote no bitstream \(timing not met"):
        resolve_bitstream("versa-ecp5", results=tmp_path)


def test_report_of_another_board(tmp_path):
    path = write_report(tmp_path)
    path.rename(tmp_path / "bitstream-colorlight-5a-75b.json")
    with pytest.raises(FlashError, match="not 'colorlight-5a-75b'"):
        resolve_bitstream("colorlight-5a-75b", results=tmp_path)


def test_unreadable_report(tmp_path):
    (tmp_path / "bitstream-versa-ecp5.json").write_text("{not json")
    with pytest.raises(FlashError, match="not a readable bitstream report"):
        resolve_bitstream("versa-ecp5", results=tmp_path)


def test_missing_bitstream_file(tmp_path):
    results = tmp_path / "results"
    write_report(results)                                   # names a file nobody built
    with pytest.raises(FlashError, match=r"does not exist: run `make bitstream BOARD=versa-ecp5`"):
        plan_flash("versa-ecp5", results=results, root=tmp_path)
    with pytest.raises(FlashError, match=r"make bitstream BOARD=versa-ecp5"):
        plan_flash("versa-ecp5", bitstream=tmp_path / "nope.bit", results=results)


def test_timing_not_met_refused_unless_forced(tmp_path, capsys):
    results = tmp_path / "results"
    write_report(results, ok=False)
    bit = make_bit(tmp_path / BIT)
    with pytest.raises(FlashError) as e:
        plan_flash("versa-ecp5", results=results, root=tmp_path)
    msg = str(e.value)
    assert "timing not met" in msg and "sys_clk reaches 38.75 MHz of 75.0 MHz" in msg
    assert "--force" in msg and "eth_rx" not in msg
    # the same file named explicitly is refused as well
    with pytest.raises(FlashError, match="timing not met"):
        plan_flash("versa-ecp5", bitstream=bit, results=results, root=tmp_path)
    assert plan_flash("versa-ecp5", results=results, root=tmp_path, force=True)[-1] == str(bit)
    assert "flashing it anyway (--force)" in capsys.readouterr().err


# --- running it -------------------------------------------------------------------------------

def fake_loader(bindir, status=0):
    """An openFPGALoader stand-in that records its arguments and exits with ``status``."""
    bindir.mkdir()
    log = bindir / "args"
    script = bindir / "openFPGALoader"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\necho "fake: programming"\n'
                      f"exit {status}\n")
    script.chmod(0o755)
    return log


def test_run_flash_runs_the_tool(tmp_path, capfd):
    log = fake_loader(tmp_path / "bin", status=3)
    bit = make_bit(tmp_path / "t.bit")
    status = run_flash("colorlight-5a-75b", "spi", bit, freq=6_000_000, verify=True,
                       results=tmp_path, search_path=str(tmp_path / "bin"))
    assert status == 3
    assert log.read_text().splitlines() == ["-b", "colorlight", "-c", "ft232", "--freq",
                                            "6000000", "-f", "--verify", str(bit)]
    out = capfd.readouterr().out
    assert out.splitlines() == [
        f"$ openFPGALoader -b colorlight -c ft232 --freq 6000000 -f --verify {bit}",
        "fake: programming"]


def test_run_flash_without_the_tool(tmp_path):
    (tmp_path / "empty").mkdir()
    bit = make_bit(tmp_path / "t.bit")
    with pytest.raises(FlashError, match=r"openFPGALoader is not on PATH: .*Debian package "
                                         r"openfpgaloader"):
        run_flash("versa-ecp5", "sram", bit, results=tmp_path, search_path=str(tmp_path / "empty"))


def test_run_flash_missing_bitstream(tmp_path):
    fake_loader(tmp_path / "bin")
    with pytest.raises(FlashError, match=r"make bitstream BOARD=versa-ecp5"):
        run_flash("versa-ecp5", "sram", tmp_path / "gone.bit", results=tmp_path,
                  search_path=str(tmp_path / "bin"))


# --- the command line -------------------------------------------------------------------------

def test_cli_dry_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(flash, "RESULTS", tmp_path / "results")
    monkeypatch.setenv("PATH", str(tmp_path))           # no openFPGALoader needed to print it
    bit = make_bit(tmp_path / "build" / "top.bit")
    write_report(tmp_path / "results", bitstream=str(bit))
    assert main(["flash", "--board", "versa-ecp5", "--dry-run"]) == 0
    assert capsys.readouterr().out == f"openFPGALoader -c ft2232 -m {bit}\n"
    other = make_bit(tmp_path / "with space" / "x.bit")
    assert main(["flash", "--board", "colorlight-5a-75b", "--spi", "--verify", "--bitstream",
                 str(other), "--cable", "dirtyJtag", "--ftdi-serial", "S1", "--freq", "2M",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert shlex.split(out) == ["openFPGALoader", "-b", "colorlight", "-c", "dirtyJtag",
                                "--ftdi-serial", "S1", "--freq", "2000000", "-f", "--verify",
                                str(other)]
    assert f"'{other}'" in out                          # quoted for the shell


def test_cli_refusals(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(flash, "RESULTS", tmp_path)
    bit = make_bit(tmp_path / "top.bit")
    write_report(tmp_path, bitstream=str(bit), ok=False)
    assert main(["flash", "--board", "versa-ecp5", "--dry-run"]) == 2
    assert "timing not met" in capsys.readouterr().err
    assert main(["flash", "--board", "versa-ecp5", "--dry-run", "--force"]) == 0
    out, err = capsys.readouterr()
    assert out == f"openFPGALoader -c ft2232 -m {bit}\n" and "anyway (--force)" in err
    assert main(["flash", "--board", "versa-ecp5", "--sram", "--verify", "--dry-run"]) == 2
    assert "--spi" in capsys.readouterr().err
    assert main(["flash", "--board", "versa-ecp5", "--freq", "fast", "--dry-run"]) == 2
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["flash", "--board", "versa-ecp5", "--force"]) == 2
    assert "apt-get install openfpgaloader" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["flash", "--board", "versa-ecp5", "--sram", "--spi"])


# --- against the real openFPGALoader ----------------------------------------------------------

def _loader_output(*args):
    done = subprocess.run(["openFPGALoader", *args], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("openFPGALoader") is None,
                    reason="openFPGALoader is not installed (Debian package openfpgaloader)")
def test_options_boards_and_cables_exist_in_openfpgaloader():
    help_text = _loader_output("--help")
    commands = [flash_command(board, mode, "x.bit", ftdi_serial="S", freq=1_000_000,
                              verify=mode == "spi")
                for board in PROGRAMMERS for mode in flash.MODES]
    options = {arg for argv in commands for arg in argv if arg.startswith("-")}
    assert {"-c", "-m", "-f", "--verify", "--ftdi-serial", "--freq", "-b"} <= options
    for option in sorted(options):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text), \
            f"openFPGALoader --help has no {option}"
    boards = {line.split()[0] for line in _loader_output("--list-boards").splitlines()
              if line.strip()}
    cables = {line.split()[0] for line in _loader_output("--list-cables").splitlines()
              if line.strip()}
    for b in PROGRAMMERS.values():
        assert b.loader_board is None or b.loader_board in boards
        assert b.cable in cables
