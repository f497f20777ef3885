# SPDX-License-Identifier: BSD-2-Clause
"""``satemu show --board``: the host's table of boards (satemu.boards) against the board targets'
own constants, which the host tool cannot import, and the command with each board."""

import ast
import importlib
import inspect
from dataclasses import replace
from pathlib import Path

import pytest

import hw.bitstream
import hw.colorlight_5a_75b
import hw.satemu_soc
import hw.versa_ecp5
import sim.board
from hw.soc_common import add_channels
from satemu.boards import BOARDS, DEFAULT_BOARD
from satemu.cli import main
from satemu.profile import Hardware
from satemu.units import format_size

# A profile whose forward channel needs more delay-line throughput than the Versa-5G guarantees
# (300 Mbit/s of 60-byte frames: 6982 words per 65536 cycles at 55 MHz, against 6000).
FAST = ('name = "fast"\n[forward]\nrate = "300 Mbit/s"\ndelay = "10 ms"\nqueue = "100 packets"\n'
        '[return]\nrate = "1 Mbit/s"\ndelay = "10 ms"\n')


def _mem_wpc_given(module) -> int:
    """The ``mem_wpc`` that ``module``'s SoC passes to ``add_channels``: the constant it names,
    or the parameter's default when it passes none."""
    calls = [node for node in ast.walk(ast.parse(inspect.getsource(module)))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "add_channels"]
    assert len(calls) == 1, f"{module.__name__}: one add_channels call"
    call = calls[0]
    given = [kw.value for kw in call.keywords if kw.arg == "mem_wpc"] + call.args[6:]
    if not given:
        return inspect.signature(add_channels).parameters["mem_wpc"].default
    (arg,) = given
    assert isinstance(arg, ast.Name), f"{module.__name__}: mem_wpc is a module constant"
    return getattr(module, arg.id)


def _sources():
    """{board name: (f_clk, mem_words, port_bps, mem_wpc, params_for(bod))} from the simulated
    board's build (hw.satemu_soc, sim.board) and from each target ``hw.bitstream`` builds."""
    f_clk, port_bps = hw.satemu_soc.sim_clock("sim")
    out = {"sim": (f_clk, hw.satemu_soc.MEM_WORDS, port_bps, _mem_wpc_given(hw.satemu_soc),
                   sim.board.channel_params_for("sim"))}
    for name, module_name in hw.bitstream.BOARDS.items():
        target = importlib.import_module(module_name)
        wpc = getattr(target, "MEM_WPC", 0)            # none: not limited
        assert _mem_wpc_given(target) == wpc
        out[name] = (int(target.SYS_CLK_FREQ), target.MEM_WORDS, target.PORT_BPS, wpc,
                     target.channel_params)
    return out


def test_the_targets_are_the_ones_compared():
    assert hw.bitstream.BOARDS == {"versa-ecp5": hw.versa_ecp5.__name__,
                                   "colorlight-5a-75b": hw.colorlight_5a_75b.__name__}
    assert set(BOARDS) == {"sim"} | set(hw.bitstream.BOARDS)
    assert DEFAULT_BOARD == "sim"                       # what `make demo` runs


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_table_matches_the_board_sources(name):
    f_clk, mem_words, port_bps, mem_wpc, params_for = _sources()[name]
    got = BOARDS[name].hardware
    assert (got.f_clk, got.mem_words, got.port_bps, got.mem_wpc) == (f_clk, mem_words, port_bps,
                                                                      mem_wpc)
    assert got.params == params_for(False) and not params_for(False).bod
    # The return channel's parameters: the same, with the BoD block where the board has it.
    has_bod = params_for(True).bod
    assert replace(got.params, bod=has_bod) == params_for(True)
    assert got.bod_channels == (("return",) if has_bod else ())


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_each_firmware_is_told_its_bod_channels(name):
    """The board's firmware header (built from its return channel's parameters, as
    hw.bitstream and sim.board write it) names the channels with the BoD block, which
    firmware/app/main.c reports in HELLO and enforces: the same ones the host's table says."""
    import re
    from satemu import protocol as P
    from satemu.gen_c import proto_header

    params_for = _sources()[name][4]
    (mask,) = re.findall(r"^#define SATEMU_BOD_CHANNELS (\d+)u$", proto_header(params_for(True)),
                         re.M)
    want = sum(1 << {"forward": P.CHANNEL_FORWARD, "return": P.CHANNEL_RETURN}[ch]
               for ch in BOARDS[name].hardware.bod_channels)
    assert int(mask) == want
    main_c = (Path(hw.bitstream.ROOT) / "firmware" / "app" / "main.c").read_text()
    assert "SATEMU_BOD_CHANNELS, SATEMU_BOD_RING" in main_c


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_each_firmware_is_told_its_counter_width(name):
    """Both channels' statistics counters have one width, which the firmware's header gives it
    (satemu_fold_counters folds every counter with it)."""
    import re
    from satemu.gen_c import proto_header

    params_for = _sources()[name][4]
    assert params_for(True).counter_bits == params_for(False).counter_bits
    (bits,) = re.findall(r"^#define SATEMU_COUNTER_BITS (\d+)$", proto_header(params_for(True)),
                         re.M)
    assert int(bits) == params_for(False).counter_bits == BOARDS[name].hardware.params.counter_bits
    main_c = (Path(hw.bitstream.ROOT) / "firmware" / "app" / "main.c").read_text()
    assert "SATEMU_COUNTER_BITS," in main_c and "satemu_fold_start(&hw)" in main_c


def test_the_table_is_what_the_boards_say():
    """Spelled out, so that a change to a board shows here as well as in its target."""
    sim_hw, versa, colorlight = (BOARDS[n].hardware for n in ("sim", "versa-ecp5",
                                                               "colorlight-5a-75b"))
    assert (sim_hw.f_clk, sim_hw.mem_words, sim_hw.mem_wpc) == (6_250_000, 1 << 22, 0)
    assert (versa.f_clk, versa.mem_words, versa.mem_wpc) == (55_000_000, 1 << 22, 6000)
    assert (colorlight.f_clk, colorlight.mem_words, colorlight.mem_wpc) == (40_000_000, 1 << 18,
                                                                         4600)
    assert (sim_hw.params.counter_bits, versa.params.counter_bits,
            colorlight.params.counter_bits) == (64, 64, 32)
    assert colorlight.params.queue_depth == 512
    assert (sim_hw.bod_channels, versa.bod_channels, colorlight.bod_channels) == (
        ("return",), ("return",), ())
    # None of them is the profile checks' default hardware.
    assert Hardware() not in (sim_hw, versa, colorlight)


def test_show_defaults_to_the_simulated_board(capsys):
    assert main(["show", "geo-testbed"]) == 0
    out = capsys.readouterr().out
    assert "board: sim (the simulated board" in out and "at 6.25 MHz:" in out
    assert f"of {format_size((1 << 22) * 8)} (" in out and "(not limited)" in out


def test_show_on_the_versa(capsys):
    assert main(["show", "geo-testbed", "--board", "versa-ecp5"]) == 0
    out = capsys.readouterr().out
    mem = format_size(hw.versa_ecp5.MEM_WORDS * 8)
    assert "board: versa-ecp5 (the Lattice ECP5 Versa-5G), 55 MHz, ports at 1 Gbit/s" in out
    assert f"delay line per channel: {mem}, 6000 words per 65536 cycles guaranteed" in out
    assert "at 55 MHz: 51 + 13/17 cycles per byte, delay 16500000 cycles" in out
    assert f"of {mem} (1.4%)" in out and "of 6000 guaranteed" in out


def test_show_on_the_colorlight(capsys):
    assert main(["show", "geo-testbed", "--board", "colorlight-5a-75b"]) == 0
    out = capsys.readouterr().out
    assert "at 40 MHz:" in out and f"of {format_size((1 << 18) * 8)} (20.0%)" in out
    assert "or 512 packets (hardware cap)" in out
    # geo-large's 11 MB of delay line do not fit its 2 MB: the same one-line error as ever.
    assert main(["show", "geo-large", "--board", "colorlight-5a-75b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: forward: delay x rate needs") and "the channel has 262144" in err
    # It has no BoD block: a BoD profile is refused before anything is loaded, and says why.
    assert main(["show", "geo-testbed-bod", "--board", "colorlight-5a-75b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("satemu: return.bod: the return channel has no Bandwidth-on-Demand "
                          "block on this hardware (no channel has one)")
    assert main(["show", "geo-testbed-bod", "--board", "versa-ecp5"]) == 0


def test_show_fails_beyond_the_versa_throughput(capsys, tmp_path):
    fast = tmp_path / "fast.toml"
    fast.write_text(FAST)
    assert main(["show", str(fast), "--board", "versa-ecp5"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("satemu: forward: the profile's rate needs up to 6982 words per "
                              "65536 cycles of delay-line bandwidth, the board guarantees 6000 "
                              "per channel") and "Traceback" not in cap.err
    # Not on the simulated board, whose delay line is not limited; nor with --mem-wpc over it.
    assert main(["show", str(fast)]) == 0
    assert main(["show", str(fast), "--board", "versa-ecp5", "--mem-wpc", "0"]) == 0
    assert main(["show", str(fast), "--board", "versa-ecp5", "--mem-wpc", "6982"]) == 0
    assert main(["show", str(fast), "--board", "versa-ecp5", "--mem-wpc", "6981"]) == 2


def test_options_override_the_board(capsys):
    assert main(["show", "geo-testbed", "--board", "versa-ecp5", "--f-clk", "75000000",
                 "--mem-words", str(6 << 20)]) == 0
    out = capsys.readouterr().out
    assert "75 MHz, ports at 1 Gbit/s; given --f-clk 75000000, --mem-words 6291456" in out
    assert "at 75 MHz: 70 + 10/17 cycles per byte" in out
    assert f"of {format_size((6 << 20) * 8)} (" in out
    assert "of 6000 guaranteed" in out                  # the Versa's, not given


def test_unknown_board_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["show", "geo-testbed", "--board", "ulx3s"])
    assert e.value.code == 2
    assert "invalid choice: 'ulx3s'" in capsys.readouterr().err
