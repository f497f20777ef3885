# SPDX-License-Identifier: BSD-2-Clause
"""The real boards' records (satemu.base.boards) and LiteX targets, checked without elaborating or
synthesising anything: each target's constraints (device, resources, clocks), the resources its
source requests, its delay-line layout against its DRAM, its channel parameters, its clocks."""

import ast
import importlib
import inspect

import pytest

from hw.soc_common import board_constraints, board_platform
from satemu.base.boards import BOARDS as ALL_BOARDS
from satemu.base.params import ChannelRegs
from satemu.base.validate import require_registers

# Per board with a bitstream: its FPGA and the DRAM's resource in its constraints.
BOARDS = {"versa-ecp5": ("LFE5UM5G-45F-8BG381C", "ddram"),
          "colorlight-5a-75b": ("LFE5U-25F-6BG256C", "sdram")}


def test_every_board_with_a_bitstream_is_checked():
    assert set(BOARDS) == {name for name, b in ALL_BOARDS.items() if b.bitstream is not None}


@pytest.fixture(params=sorted(BOARDS))
def board(request):
    from litedram import modules
    record = ALL_BOARDS[request.param]
    target = importlib.import_module(record.bitstream.target)
    device, dram = BOARDS[request.param]
    return dict(record=record, target=target, device=device,
                module=getattr(modules, record.dram), dram=dram, io=board_constraints(record))


def _resources(io_list):
    """{name: {number: resource tuple}} of a constraints IO list."""
    out = {}
    for res in io_list:
        out.setdefault(res[0], {})[res[1]] = res
    return out


def _pins(item) -> list[str]:
    """The FPGA pins of a resource or of one of its items (Pins, Subsignal, IOStandard...)."""
    if isinstance(item, tuple):
        return [p for sub in item[2:] for p in _pins(sub)]
    if hasattr(item, "identifiers"):
        return list(item.identifiers)
    if hasattr(item, "constraints"):
        return [p for sub in item.constraints for p in _pins(sub)]
    return []


def _subsignals(res) -> dict:
    return {s.name: s for s in res[2:] if hasattr(s, "constraints")}


def _requests(target) -> dict[str, int | None]:
    """The resources the target's source requests: {name: number}, None where the number is a
    variable (any of the constraints' numbers then), plus the UART that SoCCore requests by
    its ``uart_name``."""
    found = {}
    for node in ast.walk(ast.parse(inspect.getsource(target))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in ("request", "request_all")
                and node.args and isinstance(node.args[0], ast.Constant)):
            name = node.args[0].value
            if func.attr == "request_all":
                found[name] = None
            elif len(node.args) == 1:
                found[name] = 0
            else:
                number = node.args[1]
                found[name] = number.value if isinstance(number, ast.Constant) else None
        for kw in node.keywords:
            if kw.arg == "uart_name" and isinstance(kw.value, ast.Constant):
                found[kw.value.value] = 0
    return found


def test_device(board):
    assert board["io"].DEVICE == board["device"]


def test_requested_resources_exist_and_share_no_pin(board):
    resources = _resources(board["io"].IO)
    requests = _requests(board["target"])
    assert "serial" in requests, "the target requests no UART"
    used = {}
    for name, number in requests.items():
        assert name in resources, f"{name} is requested but not in the constraints"
        numbers = sorted(resources[name]) if number is None else [number]
        for n in numbers:
            assert n in resources[name], f"{name} {n} is requested but not in the constraints"
            for pin in _pins(resources[name][n]):
                assert pin not in used, f"pin {pin} is in both {used[pin]} and {name} {n}"
                used[pin] = f"{name} {n}"


def test_platform_requests_every_resource(board):
    """LiteX's own parser takes each requested resource (one platform per request: a real
    platform refuses to hand out a resource twice)."""
    resources = _resources(board["io"].IO)
    for name, number in _requests(board["target"]).items():
        for n in (sorted(resources[name]) if number is None else [number]):
            assert board_platform(board["record"]).request(name, n) is not None


def test_clock_constraints_name_existing_clocks(board):
    resources = _resources(board["io"].IO)
    for (name, number), period in board["io"].CLOCK_PERIODS.items():
        base, _, sub = name.partition(":")
        assert number in resources.get(base, {}), f"no {base} {number} for its clock constraint"
        if sub:
            assert sub in _subsignals(resources[base][number])
        assert 1 <= period <= 100
    assert isinstance(board["io"].LEDS_ACTIVE_LOW, bool)


def test_delay_lines_fill_the_dram_upper_half(board):
    """Each channel's delay line (``Board.delay_line_base``, ``mem_words`` 64-bit words) lies in
    the DRAM's upper half, which the CPU never uses, and the two do not overlap."""
    module, record = board["module"], board["record"]
    dram_res = _resources(board["io"].IO)[board["dram"]][0]
    databits = len(_pins(_subsignals(dram_res)["dq"]))
    dram_words = module.nbanks * module.nrows * module.ncols * databits // 64
    forward, ret = record.delay_line_base(0), record.delay_line_base(1)
    assert forward >= dram_words // 2, "the forward delay line starts in the lower half"
    assert forward + record.mem_words <= ret, "the delay lines overlap"
    assert ret + record.mem_words <= dram_words, "the return delay line ends beyond the DRAM"


def test_colorlight_memory_is_8_mib_split_in_2_mib():
    from litedram import modules
    record = ALL_BOARDS["colorlight-5a-75b"]
    chip = getattr(modules, record.dram)
    assert record.mem_words == 2**18
    assert chip.nbanks * chip.nrows * chip.ncols * 4 == 8 << 20


@pytest.mark.parametrize("channel", [0, 1])
def test_channel_params_are_valid(board, channel):
    p = board["record"].channel_params(channel)
    # The return channel has the BoD block, except on the Colorlight, too small for it.
    assert p.bod is (channel == 1 and board["record"].name != "colorlight-5a-75b")
    assert p.bod_ring & (p.bod_ring - 1) == 0, "the BoD ring must be a power of two"
    assert p.queue_onchip & (p.queue_onchip - 1) == 0
    require_registers(ChannelRegs(queue_frames=p.queue_depth), p)
    # A queue deeper than the chip holds spills into a ring that ends where the next channel's
    # region starts (the return channel's, or the DRAM's end).
    assert p.queue_depth < 1 << 16 and p.spill_words in (0, 1 << 16)


def test_colorlight_channels_are_smaller_than_the_versa():
    small, big = (ALL_BOARDS[name].channel_params(1) for name in ("colorlight-5a-75b",
                                                                  "versa-ecp5"))
    assert small.queue_depth <= big.queue_depth and small.bod_ring <= big.bod_ring
    assert small.max_frame == big.max_frame and small.latency_floor == big.latency_floor


def test_system_clock(board):
    record = board["record"]
    assert record.bitstream.build_name.startswith("satemu_")
    assert isinstance(record.f_clk, int) and record.f_clk > 0


def test_colorlight_pll_makes_its_clocks():
    """The ECP5 PLL reaches the system clock and its phase-shifted copy from 25 MHz exactly."""
    from migen import ClockDomain, Signal
    from litex.soc.cores.clock import ECP5PLL

    pll = ECP5PLL()
    pll.register_clkin(Signal(), 25e6)
    f_sys = float(ALL_BOARDS["colorlight-5a-75b"].f_clk)
    pll.create_clkout(ClockDomain("sys"), f_sys, margin=0)
    pll.create_clkout(ClockDomain("sys_ps", reset_less=True), f_sys, phase=180, margin=0,
                      with_reset=False)
    config = pll.compute_config()
    assert config["clko0_freq"] == config["clko1_freq"] == f_sys


def test_versa_pll_makes_its_clocks():
    """From the 100 MHz oscillator the PLL makes the DDR3 edge clock (twice the system clock)
    and the 25 MHz init clock exactly."""
    from migen import ClockDomain, Signal
    from litex.soc.cores.clock import ECP5PLL

    pll = ECP5PLL()
    pll.register_clkin(Signal(), 100e6)
    f_sys = float(ALL_BOARDS["versa-ecp5"].f_clk)
    pll.create_clkout(ClockDomain("sys2x_i", reset_less=True), 2 * f_sys, margin=0,
                      with_reset=False)
    pll.create_clkout(ClockDomain("init"), 25e6, margin=0)
    config = pll.compute_config()
    assert config["clko0_freq"] == 2 * f_sys
    assert config["clko1_freq"] == 25e6


def test_colorlight_rom_holds_the_firmware_padded():
    from hw.soc_common import soc_core_kwargs
    cpu = ALL_BOARDS["colorlight-5a-75b"].cpu

    kwargs = soc_core_kwargs("test", [1, 2, 3], cpu)
    assert kwargs["integrated_rom_size"] == cpu.rom_bytes == 0x8000
    assert kwargs["integrated_sram_size"] == cpu.sram_bytes
    assert kwargs["integrated_rom_init"][:3] == [1, 2, 3]
    assert len(kwargs["integrated_rom_init"]) * 4 == cpu.rom_bytes
    with pytest.raises(ValueError):
        soc_core_kwargs("test", [0] * (cpu.rom_bytes // 4 + 1), cpu)


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_throughput_guarantee_is_below_what_was_measured(name):
    """The delay-line throughput a board's firmware guarantees its channels (mem_wpc, one each)
    stays below what its committed data-path bench measured, at the board's clock, with some
    margin: their sum below the lowest maximum of both channels together and of one alone;
    and where the board splits it between the channels, a point of the bench's split run above
    both guarantees, the forward queue in the ring, delivered every frame on time."""
    import json
    from pathlib import Path
    from satemu.base.params import frame_words

    record = ALL_BOARDS[name]
    bench = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results"
                        / f"datapath-{name}.json").read_text())
    f_clk = bench["board"]["f_clk_hz"]
    assert f_clk == record.f_clk
    both = [r for r in bench["results"].values() if r["channels"] == 2]
    assert {r["length"] for r in both} == {64, 1500}
    # The words per 65536 cycles all channels together carried at each maximum.
    totals = [r["channels"] * r["at_max"]["frames_per_s_per_channel"] * frame_words(r["length"])
              * 65536 / f_clk for r in bench["results"].values()]
    forward, ret = record.mem_wpc
    assert 0 < forward and 0 < ret and forward + ret <= 0.91 * min(totals)
    if forward != ret:
        ok = [p for p in bench["split"]["points"] if p["ok"] and p["forward_ring"]]
        assert any(p["forward"]["words_per_65536"] >= forward / 0.9
                   and p["return"]["words_per_65536"] >= ret / 0.9 for p in ok)