# SPDX-License-Identifier: BSD-2-Clause
"""Hostile command lines: each is refused in one line, before anything runs, and loses nothing."""

from __future__ import annotations

import os
import re
import shutil
import stat

import pytest
from aioquic.buffer import Buffer

from satemu import cli
from satemu.box import flash
from satemu.cli import UsageError, main
from satemu.box.flash import CABLES, FlashError, cable_names, flash_command, plan_flash
from satemu.quic.ackpolicy import AckPolicy
from satemu.quic.settings import ACK_N_MAX, VARINT_MAX, EndpointSettings

HUGE = str(10 ** 30)
QUIC = ["quic", "--engine", "model", "--profile", "short-asym", "--size", "10KB"]
EXPERIMENT = ["experiment", "ack-policy", "--engine", "model", "--profile", "short-asym",
              "--sizes", "10KB", "--jobs", "1"]
BOX = ["--port", "socket://127.0.0.1:1", "--timeout", "0.5"]     # nothing listens there


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("satemu: ") and "Traceback" not in err, err
    return err.strip()


@pytest.fixture
def no_run(monkeypatch):
    """Transfers and sweeps that fail the test if they start: a refusal must come first."""
    from satemu import sweep
    from satemu.quic import engine

    def ran(*args, **kwargs):
        raise AssertionError("a run started before the command line was refused")
    monkeypatch.setattr(engine, "run_transfer", ran)
    monkeypatch.setattr(sweep, "run_sweep", ran)


# --- 1. ACK policies: N within what every stack can take ----------------------------------------

def test_ack_n_bound_is_the_varint_bound_of_the_threshold():
    assert ACK_N_MAX == 1 << 62 and VARINT_MAX == ACK_N_MAX - 1
    assert AckPolicy.parse(f"ack-frequency:{ACK_N_MAX}").n == ACK_N_MAX
    assert AckPolicy.parse("ratio:0007") == AckPolicy("ratio", 7)
    # aioquic writes the threshold N - 1 as a varint: the largest N fits, one more would not
    buf = Buffer(capacity=8)
    buf.push_uint_var(ACK_N_MAX - 1)
    with pytest.raises(ValueError):
        buf.push_uint_var(ACK_N_MAX)
    for bad in (f"ack-frequency:{ACK_N_MAX + 1}", f"ratio:{HUGE}", "ratio:" + "9" * 100_000,
                "ratio:0", "ratio:\u00b2", "ack-frequency:-1"):
        with pytest.raises(ValueError, match=rf"N in 1 \.\. {ACK_N_MAX} \(2\^62\), or neqo\[:R\] "
                                     r"with R in 10 \.\. 255$"):
            AckPolicy.parse(bad)
    with pytest.raises(ValueError, match=r"N is outside 1 \.\. "):
        AckPolicy("ack-frequency", ACK_N_MAX + 1)


def test_quinn_takes_the_largest_ack_frequency():
    """The bound is quinn's too: its extension accepts a server asking for threshold 2^62 - 1."""
    from satemu.quic.quinn import QuinnServer
    server = QuinnServer(EndpointSettings(), f"ack-frequency:{ACK_N_MAX}")
    assert server.policy.n == ACK_N_MAX


@pytest.mark.parametrize("stack", ["aioquic", "quinn", "aioquic/quinn", "quinn/aioquic"])
@pytest.mark.parametrize("policy", [f"ack-frequency:{HUGE}", f"ack-frequency:{ACK_N_MAX + 1}",
                                    f"ratio:{HUGE}"])
def test_quic_ack_out_of_range_is_a_usage_error(stack, policy, tmp_path, capsys, no_run):
    assert main(QUIC + ["--stack", stack, "--ack", policy, "--out", str(tmp_path / "o")]) == 2
    assert one_line(capsys) == (f"satemu: --ack: unknown ACK policy {policy[:40]!r}: expected "
                                f"default, ratio:N, adaptive, ack-frequency:N, chromium, "
                                f"picoquic or quicly:N with N in 1 .. {ACK_N_MAX} (2^62), "
                                f"or neqo[:R] with R in 10 .. 255")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("stack", ["aioquic", "quinn"])
def test_experiment_policies_out_of_range_are_a_usage_error(stack, tmp_path, capsys, no_run):
    assert main(EXPERIMENT + ["--stack", stack, "--policies", f"ratio:2,ack-frequency:{HUGE}",
                              "--out", str(tmp_path / "o")]) == 2
    assert f"N in 1 .. {ACK_N_MAX} (2^62)" in one_line(capsys)
    assert not (tmp_path / "o").exists()


# --- 2. outputs checked before anything runs ----------------------------------------------------

def test_quic_out_naming_a_file_is_refused_first(tmp_path, capsys, no_run):
    there = tmp_path / "results"
    there.write_text("keep me")
    assert main(QUIC + ["--out", str(there)]) == 2
    assert one_line(capsys) == (f"satemu: --out {there}: exists and is not a directory; name a "
                                f"directory for the results")
    assert there.read_text() == "keep me"


@pytest.mark.parametrize("verb", [QUIC, EXPERIMENT])
@pytest.mark.parametrize("where", ["/proc/satemu-results", "/proc/self/status/x"])
def test_out_where_nothing_can_be_written_is_refused_first(verb, where, capsys, no_run):
    assert main(verb + ["--out", where]) == 2
    assert one_line(capsys).startswith(f"satemu: --out {where}: cannot write there (")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_out_in_a_read_only_directory_is_refused_first(tmp_path, capsys, no_run):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert main(QUIC + ["--out", str(ro / "run")]) == 2
        assert one_line(capsys) == (f"satemu: --out {ro / 'run'}: cannot write there "
                                    f"(Permission denied)")
    finally:
        ro.chmod(stat.S_IRWXU)


def test_experiment_out_naming_a_file_is_refused_first(tmp_path, capsys, no_run):
    there = tmp_path / "file"
    there.write_text("x")
    assert main(EXPERIMENT + ["--out", str(there)]) == 2
    assert "exists and is not a directory" in one_line(capsys) and there.read_text() == "x"


def test_quic_out_is_made_before_the_run_and_holds_its_results(tmp_path, monkeypatch, capsys):
    from satemu.quic import engine
    out = tmp_path / "new" / "run"
    real = engine.run_transfer
    seen = []

    def run_transfer(*args, **kwargs):
        seen.append(out.is_dir() and not any(out.iterdir()))     # made, and left clean
        return real(*args, **kwargs)
    monkeypatch.setattr(engine, "run_transfer", run_transfer)
    assert main(QUIC + ["--out", str(out)]) == 0
    assert seen == [True] and (out / "result.json").is_file()


@pytest.mark.parametrize("argv, option", [
    (["bod-trace"] + BOX + ["--out", "/proc/satemu.csv"], "--out"),
    (["bod-trace"] + BOX + ["--plot", "/proc/satemu.png"], "--plot"),
    (["capture"] + BOX + ["--out", "/proc/satemu.base.pcapng"], "--out"),
])
def test_output_files_are_checked_before_the_box_is_asked(argv, option, capsys):
    # Were the box asked first, the refusal would be the connection's to port 1.
    assert main(argv) == 2
    assert one_line(capsys).startswith(f"satemu: {option} /proc/satemu.")


@pytest.mark.parametrize("verb", [["bod-trace"] + BOX, ["capture"] + BOX])
def test_an_output_file_that_is_a_directory_is_refused(verb, tmp_path, capsys):
    assert main(verb + ["--out", str(tmp_path)]) == 2
    assert one_line(capsys) == f"satemu: --out {tmp_path}: a directory; name a file"


def test_an_existing_output_file_is_left_alone_by_the_check(tmp_path):
    kept = tmp_path / "trace.csv"
    kept.write_text("old rows\n")
    made = tmp_path / "sub" / "new.csv"
    assert cli._output_file(kept, "--out") == kept and kept.read_text() == "old rows\n"
    assert cli._output_file(made, "--out") == made
    assert made.parent.is_dir() and not made.exists()


def test_show_plot_is_checked_before_anything_is_printed(tmp_path, capsys):
    assert main(["show", "leo-starlink", "--plot", "/proc/satemu.png"]) == 2
    assert one_line(capsys).startswith("satemu: --plot /proc/satemu.png: cannot write there")
    assert main(["show", "geo-testbed", "--plot", str(tmp_path / "p.png")]) == 2
    assert one_line(capsys) == ("satemu: --plot draws a profile's timeline: geo-testbed has "
                                "none")
    assert not (tmp_path / "p.png").exists()


# --- 3. empty values are refused, not taken for the option left out ----------------------------

@pytest.mark.parametrize("argv, option", [
    (["show", "leo-starlink", "--plot", ""], "--plot"),
    (["show", ""], "profile"),
    (["load", " "] + BOX, "profile"),
    (["bod-trace"] + BOX + ["--plot", ""], "--plot"),
    (["bod-trace"] + BOX + ["--out", ""], "--out"),
    (["bod-trace"] + BOX + ["--profile", ""], "--profile"),
    (["stats", "--port", ""], "--port"),
    (["capture"] + BOX + ["--out", ""], "--out"),
    (QUIC + ["--out", ""], "--out"),
    (QUIC + ["--port", ""], "--port"),
    (QUIC + ["--cc", ""], "--cc"),
    (["quic", "--profile", ""], "--profile"),
    (QUIC + ["--realtime", "--client-if", "", "--server-if", "b"], "--client-if"),
    (QUIC + ["--realtime", "--client-if", "a", "--server-if", "b", "--netem", ""], "--netem"),
    (QUIC + ["--client-cmd", ""], "--client-cmd"),
    (EXPERIMENT + ["--seeds", ""], "--seeds"),
    (EXPERIMENT + ["--dask", ""], "--dask"),
    (EXPERIMENT + ["--sizes", ""], "--sizes"),
    (EXPERIMENT + ["--policies", " "], "--policies"),
    (EXPERIMENT + ["--cc", ""], "--cc"),
    (EXPERIMENT + ["--engine", ""], "--engine"),
    (EXPERIMENT + ["--profile", "geo-testbed", ""], "--profile"),
    (EXPERIMENT + ["--out", ""], "--out"),
    (["flash", "--board", "versa-ecp5", "--cable", "", "--dry-run"], "--cable"),
    (["flash", "--board", "versa-ecp5", "--bitstream", "", "--dry-run"], "--bitstream"),
    (["flash", "--board", "versa-ecp5", "--ftdi-serial", "", "--dry-run"], "--ftdi-serial"),
    (["flash", "--board", "versa-ecp5", "--freq", "", "--dry-run"], "--freq"),
])
def test_an_empty_value_is_a_usage_error(argv, option, capsys, no_run):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("satemu ") and f": error: argument {option}: " in err, err
    assert err.endswith(", not empty"), err


def test_flash_api_refuses_empty_cable_and_serial():
    with pytest.raises(FlashError, match=r"^--cable: empty"):
        flash_command("versa-ecp5", "sram", "x.bit", cable="")
    with pytest.raises(FlashError, match=r"^--ftdi-serial: empty"):
        flash_command("versa-ecp5", "sram", "x.bit", ftdi_serial=" ")


# --- 4. flash: a cable openFPGALoader does not know ---------------------------------------------

@pytest.fixture
def bitstream(tmp_path, monkeypatch):
    monkeypatch.setattr(flash, "RESULTS", tmp_path / "results")   # no build report to consult
    bit = tmp_path / "top.bit"
    bit.write_bytes(b"\xff\x00bitstream")
    return bit


@pytest.mark.parametrize("tool", ["installed", "absent"])
def test_flash_unknown_cable_is_refused_even_in_a_dry_run(tool, bitstream, tmp_path,
                                                          monkeypatch, capsys):
    if tool == "absent":
        monkeypatch.setenv("PATH", str(tmp_path))         # the built-in list of v0.10.0
    elif shutil.which("openFPGALoader") is None:
        pytest.skip("openFPGALoader is not installed (Debian package openfpgaloader)")
    argv = ["flash", "--board", "versa-ecp5", "--bitstream", str(bitstream), "--dry-run"]
    assert main(argv + ["--cable", "nosuch"]) == 2
    err = one_line(capsys)
    assert err.startswith("satemu: --cable 'nosuch': not a cable openFPGALoader knows; one of "
                          "anlogicCable, arm-usb-ocd-h, ") and ", ft232, " in err
    assert main(argv + ["--cable", "dirtyJtag"]) == 0
    assert capsys.readouterr().out == f"openFPGALoader -c dirtyJtag -m {bitstream}\n"


def test_flash_unknown_cable_never_reaches_the_tool(bitstream, tmp_path):
    """Without --dry-run too: refused before openFPGALoader programs anything."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls"
    tool = bindir / "openFPGALoader"
    tool.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n"
                    "[ \"$1\" = --list-cables ] && printf 'cable name vid:pid\\n"
                    "ft2232 0x0403:6010\\nnewcable 0x1234:abcd\\n'\nexit 0\n")
    tool.chmod(0o755)
    with pytest.raises(FlashError, match=r"^--cable 'ft232': not a cable openFPGALoader knows; "
                                         r"one of ft2232, newcable$"):
        flash.run_flash("versa-ecp5", "sram", bitstream, cable="ft232",
                        search_path=str(bindir))
    assert log.read_text() == "--list-cables\n"
    # the installed tool's own list rules: a cable newer than v0.10.0 is taken
    assert cable_names(str(bindir)) == {"ft2232", "newcable"}
    assert plan_flash("versa-ecp5", "sram", bitstream, cable="newcable",
                      search_path=str(bindir))[:3] == ["openFPGALoader", "-c", "newcable"]


@pytest.mark.skipif(shutil.which("openFPGALoader") is None,
                    reason="openFPGALoader is not installed (Debian package openfpgaloader)")
def test_built_in_cables_are_the_installed_tools():
    assert CABLES <= cable_names()
    assert all(b.cable in CABLES for b in flash.PROGRAMMERS.values())


# --- 5. usage errors ------------------------------------------------------------------------------

def test_usage_errors_are_one_line_with_status_2(capsys):
    with pytest.raises(UsageError, match=r"^--size 'lots': "):
        cli._size("lots")
    assert main(QUIC[:-2] + ["--size", "0"]) == 2
    assert one_line(capsys) == "satemu: --size '0': a whole number of bytes, at least 1"
    assert main(["quic", "--realtime"]) == 2
    assert one_line(capsys) == "satemu: --realtime needs --client-if and --server-if"
    assert main(["quic", "--engine", "model"]) == 2
    assert one_line(capsys) == "satemu: --profile is needed (the simulated board's link)"


# --- 6. numbers out of range (found by tests/host/test_hardening.py's property tests) ----------

NOBODY = ["--port", "socket://127.0.0.1:9"]


@pytest.mark.parametrize("argv, option", [
    (["show", "geo-testbed", "--f-clk", "0"], "--f-clk"),
    (["show", "geo-testbed", "--f-clk", "-75000000"], "--f-clk"),
    (["show", "geo-testbed", "--mem-wpc", "-1"], "--mem-wpc"),
    (["show", "geo-testbed", "--mem-words", "0"], "--mem-words"),
    (["stats"] + NOBODY + ["--watch", "-1"], "--watch"),
    (["stats"] + NOBODY + ["--watch", "nan"], "--watch"),
    (["load", "geo-testbed"] + NOBODY + ["--timeout", "-1"], "--timeout"),
    (["bod-trace"] + NOBODY + ["--from", "4294967296"], "--from"),
    (["experiment", "ack-policy", "--jobs", "0"], "--jobs"),
    (["quic", "--profile", "geo-testbed", "--max-time", "inf"], "--max-time"),
    (["sim", "start", "--port", "70000"], "--port"),
])
def test_out_of_range_options_are_usage_errors(argv, option, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(rf"satemu [\w-]+( start)?: error: argument {option}: '.*': .* "
                        rf"(a whole number in \d+ \.\. \d+|seconds above 0 and at most \d+)", err)


def test_experiment_seeds_out_of_range_are_one_line_errors(capsys):
    assert main(["experiment", "ack-policy", "--engine", "model", "--seeds", "1,-2"]) == 2
    assert capsys.readouterr().err == ("satemu: --seeds '1,-2': whole numbers in 0 .. 2^64-1, "
                                       "such as 0,1,2\n")
