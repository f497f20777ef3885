# SPDX-License-Identifier: BSD-2-Clause
"""Programming a board's bitstream with openFPGALoader: into the FPGA's SRAM or its SPI flash."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from satemu.base.boards import BOARDS, Programmer
from satemu.base.checkout import CheckoutError, checkout

# Where `make bitstream BOARD=<board>` (hw/bitstream.py) writes bitstream-<board>.json in a
# checkout, whose "bitstream" field names the build's .bit, relative to the checkout.
RESULTS = Path("bench") / "results"
TOOL = "openFPGALoader"
DEBIAN_PACKAGE = "openfpgaloader"
MODES = ("sram", "spi")

# The options below were checked against openFPGALoader v0.10.0 (Debian 12's openfpgaloader
# 0.10.0+git20230202-edea24f-1): `--help`, `--list-boards` and `--list-cables`. In its words:
#   -b BOARD        a board it knows (--list-boards), used "instead of cable"
#   -c CABLE        the JTAG interface (--list-cables); given with -b it overrides the board's own
#   -m / -f         write the bitstream to the FPGA's SRAM (its default) / to the SPI flash, which
#                   on an ECP5 it reaches through the FPGA over JTAG; both take the .bit file
#   --verify        read the flash back after writing (SPI flash only)
#   --ftdi-serial   pick one FTDI chip by serial number when several are plugged in
#   --freq          the JTAG clock in Hz (its default: 6 MHz)
# tests/host/test_flash.py checks every option used here against the installed tool's --help.

# openFPGALoader v0.10.0's cable names (`openFPGALoader --list-cables`), for when the tool is not
# installed (a --dry-run); an installed one's own list is used instead (cable_names), so a newer
# version's cables are taken too. tests/cli/test_hostile_cli.py checks these against the tool's.
CABLES = frozenset("""
    anlogicCable arm-usb-ocd-h bus_blaster bus_blaster_b ch552_jtag cmsisdap dfu digilent
    digilent_ad digilent_b digilent_hs2 digilent_hs3 dirtyJtag ecpix5-debug efinix_jtag_ft4232
    efinix_spi_ft2232 efinix_spi_ft4232 ft2232 ft2232_b ft231X ft232 ft232RL ft4232
    gatemate_evb_jtag gatemate_evb_spi gatemate_pgm jlink jtag-smt2-nc libgpiod lpc-link2
    orbtrace papilio steppenprobe tigard usb-blaster usb-blasterII xvc-client
""".split())


# The boards that can be flashed, and how: satemu.base.boards holds each board's programmer.
PROGRAMMERS: dict[str, Programmer] = {name: board.programmer for name, board in BOARDS.items()
                                      if board.programmer is not None}


class FlashError(RuntimeError):
    """The board cannot be programmed as asked; the message says why and what to do."""


def report_path(board: str, results: Path | str) -> Path:
    """The report `make bitstream BOARD=<board>` writes into ``results`` (a checkout's
    bench/results)."""
    return Path(results) / f"bitstream-{board}.json"


def parse_hz(text: str) -> int:
    """A JTAG clock: whole hertz, or with k or M (``"6000000"``, ``"6M"``, ``"1.5MHz"``)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)(?:[hH][zZ])?\s*", text)
    if not m:
        raise FlashError(f"--freq {text!r}: a frequency in Hz, e.g. 6000000 or 6M")
    scale = {"": 1, "k": 1000, "m": 1000000}[m.group(2).lower()]
    hz = Decimal(m.group(1)) * scale
    if hz < 1 or hz != int(hz):
        raise FlashError(f"--freq {text!r}: a whole number of Hz, at least 1")
    return int(hz)


def cable_names(search_path: str | None = None) -> frozenset[str]:
    """The cable names openFPGALoader takes: the installed one's (``--list-cables``, the tool
    looked for on ``search_path``, default PATH), else :data:`CABLES`. A listing line is a name
    and its USB vid:pid."""
    exe = shutil.which(TOOL, path=search_path)
    if exe is not None:
        try:
            done = subprocess.run([exe, "--list-cables"], capture_output=True, text=True,
                                  timeout=30, errors="replace")
        except (OSError, subprocess.SubprocessError):
            done = None
        names = frozenset(m.group(1) for m in re.finditer(
            r"^(\S+)\s+0x[0-9a-fA-F]+:[0-9a-fA-F]+\s*$", done.stdout if done else "", re.M))
        if names:
            return names
    return CABLES


def check_cable(cable: str, search_path: str | None = None) -> None:
    """FlashError (one line, with the names) unless openFPGALoader knows ``cable``
    (:func:`cable_names`): an unknown one would otherwise fail only when the tool runs, or pass
    a --dry-run."""
    names = cable_names(search_path)
    if cable not in names:
        raise FlashError(f"--cable {cable[:40]!r}: not a cable openFPGALoader knows; one of "
                         f"{', '.join(sorted(names, key=str.lower))}")


def _board(name: str) -> Programmer:
    try:
        return PROGRAMMERS[name]
    except KeyError:
        raise FlashError(f"unknown board {name!r}: one of {', '.join(sorted(PROGRAMMERS))}") from None


def flash_command(board: str, mode: str, bitstream: Path | str, cable: str | None = None,
                  ftdi_serial: str | None = None, freq: int | None = None,
                  verify: bool = False) -> list[str]:
    """The openFPGALoader argument list that writes ``bitstream`` into ``board``: its SRAM
    (``mode="sram"``, lost at power-off) or its SPI configuration flash (``mode="spi"``)."""
    b = _board(board)
    if mode not in MODES:
        raise FlashError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    if verify and mode != "spi":
        raise FlashError("--verify reads back an SPI flash write: it goes with --spi")
    if freq is not None and freq < 1:
        raise FlashError(f"--freq {freq}: a JTAG clock in Hz, at least 1")
    if cable is not None and not cable.strip():
        raise FlashError("--cable: empty; give a cable name (openFPGALoader --list-cables)")
    if ftdi_serial is not None and not ftdi_serial.strip():
        raise FlashError("--ftdi-serial: empty; give the programmer's serial number")
    argv = [TOOL]
    if b.loader_board:
        argv += ["-b", b.loader_board]
    argv += ["-c", b.cable if cable is None else cable]
    if ftdi_serial is not None:
        argv += ["--ftdi-serial", ftdi_serial]
    if freq is not None:
        argv += ["--freq", str(int(freq))]
    argv.append("-m" if mode == "sram" else "-f")
    if verify:
        argv.append("--verify")
    argv.append(str(bitstream))
    return argv


def _read_report(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise FlashError(f"{path}: not a readable bitstream report ({e})") from None
    if not isinstance(report, dict):
        raise FlashError(f"{path}: not a bitstream report (no JSON object)")
    return report


def _same_file(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def _check_report_ok(report: dict, where: Path, bitstream: Path, force: bool) -> None:
    """Refuse a bitstream whose build report is not ok (timing missed, say) unless forced."""
    if report.get("ok") is True:
        return
    missed = [f"{name} reaches {c.get('fmax_mhz')} MHz of {c.get('target_mhz')} MHz"
              for name, c in (report.get("clocks") or {}).items()
              if isinstance(c, dict) and not c.get("met", True)]
    why = report.get("error") or "the build is not marked ok"
    if missed:
        why += f" ({'; '.join(missed)})"
    text = (f"{where} says the build of {bitstream} is not good: {why}. A bitstream that misses "
            f"timing can fail on the board in ways that look like anything but timing")
    if not force:
        raise FlashError(f"{text}. Not flashing it: fix and rebuild, or give --force to flash "
                         f"it anyway")
    print(f"satemu: warning: {text}; flashing it anyway (--force)", file=sys.stderr)


def resolve_bitstream(board: str, bitstream: Path | str | None = None, *, force: bool = False,
                      results: Path | str | None = None, root: Path | str | None = None) -> Path:
    """The bitstream to flash: ``bitstream`` if given, else the one the board's report (under
    ``results``) names, taken relative to ``root`` (the repository). A report that is not ok
    stops it unless ``force``; so does one given explicitly, if it is the report's bitstream."""
    _board(board)
    if results is None or root is None:
        try:
            repo = checkout(f"satemu flash --board {board} without --bitstream",
                            "its last `make bitstream` build")
        except CheckoutError as e:
            if results is not None:
                repo = Path.cwd()
            elif bitstream is None:
                raise FlashError(f"{e}; or give --bitstream PATH") from None
            else:
                return Path(bitstream)  # no checkout, so no build report to hold it to
        results = repo / RESULTS if results is None else results
        root = repo if root is None else root
    where = report_path(board, results)
    report = _read_report(where)
    reported = Path(root) / report["bitstream"] if report and report.get("bitstream") else None
    if bitstream is not None:
        path = Path(bitstream)
        if reported is not None and _same_file(path, reported):
            _check_report_ok(report, where, path, force)
        return path
    if report is None:
        raise FlashError(f"no bitstream for {board}: {where} does not exist. Run `make bitstream "
                         f"BOARD={board}` first, or give --bitstream PATH")
    if report.get("board", board) != board:
        raise FlashError(f"{where} is the report of board {report.get('board')!r}, not {board!r}")
    if reported is None:
        raise FlashError(f"{where}: the last `make bitstream BOARD={board}` wrote no bitstream "
                         f"({report.get('error') or 'no reason given'}). Fix the build and run it "
                         f"again, or give --bitstream PATH")
    _check_report_ok(report, where, reported, force)
    return reported


def plan_flash(board: str, mode: str = "sram", bitstream: Path | str | None = None, *,
               cable: str | None = None, ftdi_serial: str | None = None, freq: int | None = None,
               verify: bool = False, force: bool = False, results: Path | str | None = None,
               root: Path | str | None = None, search_path: str | None = None) -> list[str]:
    """Everything short of running openFPGALoader: a ``cable`` given is one it knows (the tool on
    ``search_path``, default PATH, asked if it is there: :func:`check_cable`), the bitstream is
    found, checked against its report and present; returns the command (what ``satemu flash
    --dry-run`` prints)."""
    # The options first, with a stand-in path: a bad one fails before the files are looked at.
    flash_command(board, mode, "-", cable=cable, ftdi_serial=ftdi_serial, freq=freq,
                  verify=verify)
    if cable is not None:
        check_cable(cable, search_path)
    path = resolve_bitstream(board, bitstream, force=force, results=results, root=root)
    if not path.is_file():
        raise FlashError(f"bitstream {path} does not exist: run `make bitstream BOARD={board}` "
                         f"to build it, or give --bitstream PATH")
    return flash_command(board, mode, path, cable=cable, ftdi_serial=ftdi_serial, freq=freq,
                         verify=verify)


def run_flash(board: str, mode: str = "sram", bitstream: Path | str | None = None, *,
              cable: str | None = None, ftdi_serial: str | None = None, freq: int | None = None,
              verify: bool = False, force: bool = False, results: Path | str | None = None,
              root: Path | str | None = None, search_path: str | None = None,
              output=None) -> int:
    """Program the board: openFPGALoader (looked for on ``search_path``, default PATH) runs with
    its output going straight to ours, or into file ``output`` (with the command first);
    returns its exit status."""
    exe = shutil.which(TOOL, path=search_path)
    if exe is None:
        raise FlashError(f"{TOOL} is not on PATH: install the Debian package {DEBIAN_PACKAGE} "
                         f"(apt-get install {DEBIAN_PACKAGE}, or `make bootstrap`)")
    argv = plan_flash(board, mode, bitstream, cable=cable, ftdi_serial=ftdi_serial, freq=freq,
                      verify=verify, force=force, results=results, root=root,
                      search_path=search_path)
    print(f"$ {shlex.join(argv)}", file=output or sys.stdout, flush=True)
    sys.stderr.flush()
    done = subprocess.run([exe, *argv[1:]], stdin=subprocess.DEVNULL, stdout=output,
                          stderr=None if output is None else subprocess.STDOUT)
    return done.returncode if done.returncode >= 0 else 128 - done.returncode
