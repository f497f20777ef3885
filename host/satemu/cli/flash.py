# SPDX-License-Identifier: BSD-2-Clause
"""``satemu flash``: a board's bitstream programmed with openFPGALoader."""

from __future__ import annotations

import sys

from satemu.box.flash import PROGRAMMERS
from satemu.cli.args import given


def add_flash(sub) -> None:
    flash = sub.add_parser("flash", help="program a board's bitstream with openFPGALoader: into "
                                         "the FPGA's SRAM, or its SPI flash")
    flash.add_argument("--board", required=True, choices=sorted(PROGRAMMERS),
                       help="the board; its programmer: " + "; ".join(
                           f"{name}: {b.programmer}" for name, b in sorted(PROGRAMMERS.items())))
    mode = flash.add_mutually_exclusive_group()
    mode.add_argument("--sram", dest="mode", action="store_const", const="sram",
                      help="load into the FPGA's configuration SRAM, lost at power-off (default)")
    mode.add_argument("--spi", dest="mode", action="store_const", const="spi",
                      help="write the board's SPI configuration flash: the FPGA loads it at "
                           "every power-on")
    flash.add_argument("--bitstream", metavar="PATH", type=given("a file name"),
                       help="the .bit file (default: the one the "
                       "last `make bitstream BOARD=...` built, from bench/results/bitstream-"
                       "BOARD.json)")
    cables = ", ".join(f"{b.cable} for {name}" for name, b in sorted(PROGRAMMERS.items()))
    flash.add_argument("--cable", metavar="NAME", type=given("a cable name"),
                       help="the programmer, by openFPGALoader's "
                       f"cable name (openFPGALoader --list-cables; default {cables})")
    flash.add_argument("--ftdi-serial", metavar="SERIAL", type=given("a serial number"),
                       help="the FTDI programmer with this "
                       "serial number, when several are plugged in")
    flash.add_argument("--freq", metavar="HZ", type=given("a frequency"),
                       help="the JTAG clock, e.g. 6000000 or 6M "
                       "(default: openFPGALoader's, 6 MHz)")
    flash.add_argument("--verify", action="store_true",
                       help="with --spi: read the flash back and compare")
    flash.add_argument("--force", action="store_true",
                       help="flash even a bitstream whose build report says it is not ok "
                            "(timing not met)")
    flash.add_argument("--dry-run", action="store_true",
                       help="print the openFPGALoader command and stop")
    flash.set_defaults(func=cmd_flash, mode="sram")


def cmd_flash(args) -> int:
    import shlex
    from satemu.box.flash import parse_hz, plan_flash, run_flash
    options = dict(cable=args.cable, ftdi_serial=args.ftdi_serial,
                   freq=parse_hz(args.freq) if args.freq is not None else None,
                   verify=args.verify, force=args.force)
    if args.dry_run:
        print(shlex.join(plan_flash(args.board, args.mode, args.bitstream, **options)))
        return 0
    status = run_flash(args.board, args.mode, args.bitstream, **options)
    if status:
        print(f"satemu: openFPGALoader failed (exit status {status})", file=sys.stderr)
    return status
