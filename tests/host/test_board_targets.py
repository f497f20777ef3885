# SPDX-License-Identifier: BSD-2-Clause
"""The board targets' data, checked without elaborating or synthesising anything: each target's
constraints (device, resources, clocks), the resources its source requests, its delay-line
memory against its DRAM, its channel parameters and its system clock."""

import ast
import inspect
from fractions import Fraction

import pytest

from satemu.channel_model import ChannelParams, ChannelRegs

import hw.colorlight_5a_75b
import hw.versa_ecp5

# Per target: device, system clock (Hz), the LiteDRAM module class it names and the DRAM's
# resource in its constraints.
BOARDS = {
    "versa_ecp5": (hw.versa_ecp5, "LFE5UM5G-45F-8BG381C", 55e6, "MT41K64M16", "ddram"),
    "colorlight_5a_75b": (hw.colorlight_5a_75b, "LFE5U-25F-6BG256C", 40e6, "M12L64322A", "sdram"),
}


@pytest.fixture(params=sorted(BOARDS))
def board(request):
    target, device, f_sys, module_name, dram = BOARDS[request.param]
    return dict(target=target, device=device, f_sys=f_sys, module=getattr(target, module_name),
                dram=dram, io=target.board_constraints())


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
    target = board["target"]
    platform_cls = next(v for name, v in vars(target).items()
                        if callable(v) and name.endswith("Platform")
                        and getattr(v, "__module__", None) == target.__name__)
    resources = _resources(board["io"].IO)
    for name, number in _requests(target).items():
        for n in (sorted(resources[name]) if number is None else [number]):
            assert platform_cls().request(name, n) is not None


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
    """The firmware puts the forward channel at word 2 x MEM_WORDS and the return channel at
    3 x MEM_WORDS (64-bit words): both must lie in the DRAM's upper half, which the CPU never
    uses."""
    module = board["module"]
    dram_res = _resources(board["io"].IO)[board["dram"]][0]
    databits = len(_pins(_subsignals(dram_res)["dq"]))
    dram_bytes = module.nbanks * module.nrows * module.ncols * databits // 8
    words = board["target"].MEM_WORDS
    assert words * 8 * 2 <= dram_bytes // 2, "both delay lines do not fit the upper half"
    assert 2 * words * 8 >= dram_bytes // 2, "the forward delay line starts in the lower half"
    assert 4 * words * 8 <= dram_bytes


def test_colorlight_memory_is_8_mib_split_in_2_mib():
    target = hw.colorlight_5a_75b
    assert target.MEM_WORDS == 2**18
    assert target.SDRAM_MODULE.nbanks * target.SDRAM_MODULE.nrows * target.SDRAM_MODULE.ncols * 4 == 8 << 20


@pytest.mark.parametrize("bod", [False, True])
def test_channel_params_are_valid(board, bod):
    p = board["target"].channel_params(bod)
    assert isinstance(p, ChannelParams)
    # The return channel has the BoD block, except on the Colorlight, too small for it.
    assert p.bod is (bod and board["target"] is not hw.colorlight_5a_75b)
    assert p.bod_ring & (p.bod_ring - 1) == 0, "the BoD ring must be a power of two"
    assert p.queue_depth & (p.queue_depth - 1) == 0
    # The egress pacing of a LiteEth MAC (padding, FCS, preamble and gap), as on every board.
    assert (p.port_pad, p.port_fcs, p.port_gap) == (60, 4, 3)
    ChannelRegs(queue_frames=p.queue_depth).check(p)


def test_colorlight_channels_are_smaller_than_the_versa():
    small, big = (m.channel_params(True) for m in (hw.colorlight_5a_75b, hw.versa_ecp5))
    assert small.queue_depth <= big.queue_depth and small.bod_ring <= big.bod_ring
    assert small.max_frame == big.max_frame and small.latency_floor == big.latency_floor


def test_system_clock(board):
    target = board["target"]
    assert target.SYS_CLK_FREQ == board["f_sys"]
    assert target.BUILD_NAME.startswith("satemu_")
    assert Fraction(target.SYS_CLK_FREQ).denominator == 1


def test_colorlight_pll_makes_its_clocks():
    """The ECP5 PLL reaches the system clock and its phase-shifted copy from 25 MHz exactly."""
    from migen import ClockDomain, Signal
    from litex.soc.cores.clock import ECP5PLL

    pll = ECP5PLL()
    pll.register_clkin(Signal(), 25e6)
    pll.create_clkout(ClockDomain("sys"), hw.colorlight_5a_75b.SYS_CLK_FREQ, margin=0)
    pll.create_clkout(ClockDomain("sys_ps", reset_less=True), hw.colorlight_5a_75b.SYS_CLK_FREQ,
                      phase=180, margin=0, with_reset=False)
    config = pll.compute_config()
    assert config["clko0_freq"] == config["clko1_freq"] == hw.colorlight_5a_75b.SYS_CLK_FREQ


def test_versa_pll_makes_its_clocks():
    """From the 100 MHz oscillator the PLL makes the DDR3 edge clock (twice the system clock)
    and the 25 MHz init clock exactly."""
    from migen import ClockDomain, Signal
    from litex.soc.cores.clock import ECP5PLL

    pll = ECP5PLL()
    pll.register_clkin(Signal(), 100e6)
    pll.create_clkout(ClockDomain("sys2x_i", reset_less=True), 2 * hw.versa_ecp5.SYS_CLK_FREQ,
                      margin=0, with_reset=False)
    pll.create_clkout(ClockDomain("init"), 25e6, margin=0)
    config = pll.compute_config()
    assert config["clko0_freq"] == 2 * hw.versa_ecp5.SYS_CLK_FREQ
    assert config["clko1_freq"] == 25e6


def test_colorlight_rom_holds_the_firmware_padded():
    from hw.soc_common import soc_core_kwargs
    c = hw.colorlight_5a_75b

    def soc_kwargs(firmware):
        return soc_core_kwargs("test", firmware, c.ROM_BYTES, c.SRAM_BYTES)

    kwargs = soc_kwargs([1, 2, 3])
    assert kwargs["integrated_rom_size"] == hw.colorlight_5a_75b.ROM_BYTES
    assert kwargs["integrated_rom_init"][:3] == [1, 2, 3]
    assert len(kwargs["integrated_rom_init"]) * 4 == hw.colorlight_5a_75b.ROM_BYTES
    with pytest.raises(ValueError):
        soc_kwargs([0] * (c.ROM_BYTES // 4 + 1))


@pytest.mark.parametrize("target, bench_name", [(hw.versa_ecp5, "datapath-versa-ecp5.json"),
                                                (hw.colorlight_5a_75b,
                                                 "datapath-colorlight-5a-75b.json")])
def test_throughput_guarantee_is_below_what_was_measured(target, bench_name):
    """The delay-line throughput a board's firmware guarantees each channel (MEM_WPC) stays
    below the lowest both-channels maximum in the board's committed data-path bench, at the
    board's clock, with some margin."""
    import json
    from pathlib import Path
    from satemu.channel_model import frame_words

    bench = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results"
                        / bench_name).read_text())
    f_clk = bench["board"]["f_clk_hz"]
    assert f_clk == target.SYS_CLK_FREQ
    both = [r for r in bench["results"].values() if r["channels"] == 2]
    assert {r["length"] for r in both} == {64, 1500}
    measured = min(r["at_max"]["frames_per_s_per_channel"] * frame_words(r["length"]) * 65536
                   / f_clk for r in both)
    assert 0 < target.MEM_WPC <= 0.91 * measured