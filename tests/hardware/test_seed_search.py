# SPDX-License-Identifier: BSD-2-Clause
"""The seed search (``hw.seed_search``): the nextpnr command it runs, and when it stops a run."""

from hw import seed_search
from hw.bitstream import TOOLCHAIN

LITEX = ("nextpnr-ecp5 --json top.json --lpf top.lpf --textcfg top.config  --router router2 "
         "--placer static --tmg-ripup --log nextpnr.log --report nextpnr-report.json "
         "--um5g-45k --package CABGA381 --speed 8 --seed 2 ")


def test_the_command_takes_the_seed_and_options_given(tmp_path):
    (tmp_path / "build_top.sh").write_text(f"set -e\nyosys -l top.rpt top.ys\n{LITEX}\n"
                                           "ecppack top.config --bit top.bit\n")
    cmd = seed_search.nextpnr_command(tmp_path, "top")
    assert cmd[0] == "nextpnr-ecp5" and cmd[-2:] == ["--seed", "2"]
    board_args = "--router router2 --placer static --tmg-ripup"
    out = seed_search.with_options(cmd, 5, "--placer heap", board_args)
    assert out == [str(TOOLCHAIN / "nextpnr-ecp5"), "--json", "top.json", "--lpf", "top.lpf",
                   "--um5g-45k", "--package", "CABGA381", "--speed", "8", "--placer", "heap",
                   "--seed", "5", "--log", "nextpnr.log", "--report", "report.json",
                   "--textcfg", "out.config"]
    # The board's own options, when none are given instead.
    same = seed_search.with_options(cmd, 2, board_args, board_args)
    assert same[same.index("--speed") + 2:same.index("--seed")] == board_args.split()


def test_a_run_stops_once_its_overuse_stays_high():
    # The Versa-5G's build that converged: 393 overused wires at iteration 20, 148 at 30.
    assert not any(seed_search.should_stop(it, n) for it, n in ((5, 7380), (20, 393), (30, 148),
                                                                (60, 34), (179, 0)))
    # The builds that diverged: 2,754 at iteration 20; 282 at 50, rising.
    assert seed_search.should_stop(20, 2754) and seed_search.should_stop(50, 282)
    assert seed_search.should_stop(110, 41) and not seed_search.should_stop(19, 5000)
