# SPDX-License-Identifier: BSD-2-Clause
"""What every satemu SoC shares, simulated or on a board: the CPU's memories, the two channel
instances on their LiteDRAM ports and the wishbone bridge to their registers.

The channels enter as generated Verilog (``write_channel_verilog``): modules
``satemu_channel_fwd`` and ``satemu_channel_ret`` (the latter with the BoD block). Their
registers sit behind one bridge:

    0x000-0x3ff  forward channel (port B -> A), one 32-bit word per register of satemu.base.regmap
    0x400-0x7ff  return channel (port A -> B)
    0x800-0xbff  both channels: a write reaches both in the same cycle (COMMIT, STATS)

Each channel addresses its delay line in 64-bit words, in the DRAM's upper half: forward at word
``2 * mem_words``, return at ``3 * mem_words`` (``satemu.base.boards.Board.delay_line_base``, which
the firmware's board header carries). Where the DRAM
controller's native port is 64 bits (the simulated board's SDRAM), the channel has one of its own.
Where it is 128 bits (the Versa's DDR3 at 1:2), a port widener (``satemu_gw.widen``, module
``satemu_memwiden``) sits between the channel and its native port: it merges each pair of words
the channel writes or reads in a row into one DRAM burst and keeps many reads in flight.
LiteDRAM's own up-converter takes one command at a time and waits for each read's data, too slow
for a channel at GbE rates (docs/hardware.md, "Data path at the board's clocks").
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from migen import Cat, ClockSignal, FSM, If, Instance, Module, Mux, NextState, ResetSignal, Signal

from litex.soc.integration.soc import SoCRegion
from litex.soc.interconnect import wishbone

from satemu.base.params import beat_field
from satemu.base.protocol import CHANNEL_FORWARD, CHANNEL_RETURN
from satemu.base.regmap import ADDR_BITS, WINDOW_BOTH, WINDOW_BYTES

CHANNEL_BASE = 0x9000_0000    # the bridge's place on the CPU bus
# Each channel's Verilog module suffix, by channel number: forward is port B -> A, return is
# port A -> B.
CHANNEL_MODULES = {CHANNEL_FORWARD: "fwd", CHANNEL_RETURN: "ret"}


def write_channel_verilog(out_dir: Path, board) -> list[Path]:
    """Generate both channels' Verilog into ``out_dir`` with the parameters ``board`` (a
    ``satemu.base.boards.Board``) gives each. Returns the files, forward first."""
    from amaranth.back import verilog
    from satemu_gw.channel import Channel

    paths = []
    for channel, pre in CHANNEL_MODULES.items():
        path = Path(out_dir) / f"satemu_channel_{pre}.v"
        path.write_text(without_delta_init(verilog.convert(
            Channel(board.channel_params(channel), mac_fed=True), name=f"satemu_channel_{pre}",
            emit_src=False)))
        paths.append(path)
    return paths


def without_delta_init(text: str) -> str:
    """``text`` without the initial values of the delta-coded departure queue's one-bit
    memories (satemu_gw.depdelta): zeros, as block RAMs and Verilator's arrays start anyway,
    and never read before written; spelled word by word, 34 x 16,384 lines, they made the
    YoWASP yosys fail on the Versa-5G's return channel."""
    from satemu_gw.depdelta import MEMORY_PREFIX
    block = re.compile(r"^  initial begin\n(?:    %s\d+\[\d+\] = 1'h0;\n)+  end\n"
                       % re.escape(MEMORY_PREFIX), re.M)
    return block.sub("", text)


def write_widen_verilog(out_dir: Path, addr_width: int) -> Path:
    """Generate the port widener (``satemu_memwiden``) for ``addr_width``-bit word addresses
    into ``out_dir``."""
    from amaranth.back import verilog
    from satemu_gw.widen import MemWiden

    path = Path(out_dir) / "satemu_memwiden.v"
    path.write_text(verilog.convert(MemWiden(addr_width), name="satemu_memwiden", emit_src=False))
    return path


def soc_core_kwargs(ident: str, firmware: list[int] | None, cpu) -> dict:
    """SoCCore's arguments: the board's CPU (``cpu``, a ``satemu.base.boards.Cpu``) with the
    firmware in ROM, as every satemu SoC has it. ``firmware`` (32-bit words) is padded to the
    whole ROM, so the ROM's size never depends on the firmware; without it LiteX builds only the
    headers and libraries. The firmware is built for whichever CPU the SoC has."""
    # No build date in the ident (ident_version): it would make every build's netlist differ.
    kwargs = dict(cpu_type=cpu.type, cpu_variant=cpu.variant, integrated_rom_size=cpu.rom_bytes,
                  integrated_sram_size=cpu.sram_bytes, ident=ident, ident_version=False)
    if firmware is not None:
        if len(firmware) * 4 > cpu.rom_bytes:
            raise ValueError(f"firmware of {len(firmware) * 4} bytes exceeds the "
                             f"{cpu.rom_bytes}-byte ROM")
        kwargs["integrated_rom_init"] = firmware + [0] * (cpu.rom_bytes // 4 - len(firmware))
    return kwargs


def dram_module(board, clk_freq: float):
    """The LiteDRAM module of ``board``'s DRAM chip (``board.dram``, a ``litedram.modules``
    class) at ``clk_freq`` and the board's clock ratio."""
    from litedram import modules
    return getattr(modules, board.dram)(clk_freq, board.dram_rate)


def read_firmware(firmware_bin: Path | None) -> list[int] | None:
    """A firmware.bin as the ROM's 32-bit words, or None."""
    if firmware_bin is None:
        return None
    from litex.soc.integration.common import get_mem_data
    return get_mem_data(str(firmware_bin), data_width=32, endianness="little")


class ChannelBridge(Module):
    """Wishbone slave in front of the channels' register buses (address, write strobe, data;
    read data one cycle after the address). Everything it drives towards the channels, and
    the read data it returns, comes from flip-flops: the channels sit far from the CPU on a
    board, and the route each way takes much of a cycle."""

    def __init__(self, buses):
        self.bus = wishbone.Interface(data_width=32, address_width=30, addressing="word")
        # Word addresses: the register within a window, then the window (regmap.WINDOW_BYTES).
        window_bits = (WINDOW_BYTES // 4).bit_length() - 1
        word = self.bus.adr[:ADDR_BITS]
        window = self.bus.adr[window_bits:window_bits + 2]
        window_r = Signal(2)
        read_data = Signal(32)
        # A write is acked at once and reaches the channels in the next cycle. A read: the
        # address reaches the channel (ADDR), its registered data comes back (DATA), is
        # registered here and acked (ACK).
        self.submodules.fsm = fsm = FSM()
        fsm.act("IDLE",
            If(self.bus.cyc & self.bus.stb,
                If(self.bus.we, self.bus.ack.eq(1)).Else(NextState("ADDR"))))
        fsm.act("ADDR", NextState("DATA"))
        fsm.act("DATA", NextState("ACK"))
        fsm.act("ACK",
            self.bus.dat_r.eq(read_data),
            self.bus.ack.eq(1),
            NextState("IDLE"))
        write = self.bus.cyc & self.bus.stb & self.bus.we & fsm.ongoing("IDLE")
        for i, b in enumerate(buses):
            self.sync += [
                b["addr"].eq(word),
                b["w_data"].eq(self.bus.dat_w),
                b["w_en"].eq(write & ((window == i) | (window == WINDOW_BOTH))),
            ]
        self.sync += [
            window_r.eq(window),
            If(fsm.ongoing("DATA"),
                read_data.eq(Mux(window_r == 1, buses[1]["r_data"], buses[0]["r_data"]))),
        ]


class ChannelEvents:
    """One channel's events, each high for one cycle: ``arrived`` (a frame taken at ingress),
    ``overrun`` (a frame discarded at ingress for want of room), ``start`` (a frame starts
    to leave: its source's valid first rises) and ``fate_valid`` (the channel decided a taken
    frame's fate, ``fate``: a ``satemu.base.params.Fate``, with bit 3 set for a copy
    (duplication); one a decision, in arrival order)."""

    def __init__(self, pre: str):
        self.arrived = Signal(name=f"{pre}_arrived")
        self.overrun = Signal(name=f"{pre}_overrun")
        self.start = Signal(name=f"{pre}_start")
        self.fate_valid = Signal(name=f"{pre}_fate_valid")
        self.fate = Signal(4, name=f"{pre}_fate")


def mem_port_pins(name: str, port, master: bool) -> dict:
    """An Amaranth memory port's Verilog pins (``name``__cmd/wdata/rdata, as
    ``satemu_gw.layouts.MemPortSignature`` flattens) connected to a LiteDRAM native ``port``:
    ``master`` for the side that issues commands (a channel's ``mem``, the widener's ``wide``),
    otherwise the side that takes them (the widener's ``narrow``)."""
    out, inp = ("o", "i") if master else ("i", "o")
    return {
        f"{out}_{name}__cmd__valid": port.cmd.valid,
        f"{inp}_{name}__cmd__ready": port.cmd.ready,
        f"{out}_{name}__cmd__payload": Cat(port.cmd.we, port.cmd.addr),
        f"{out}_{name}__wdata__valid": port.wdata.valid,
        f"{inp}_{name}__wdata__ready": port.wdata.ready,
        f"{out}_{name}__wdata__payload": Cat(port.wdata.data, port.wdata.we),
        f"{inp}_{name}__rdata__valid": port.rdata.valid,
        f"{out}_{name}__rdata__ready": port.rdata.ready,
        f"{inp}_{name}__rdata__payload": port.rdata.data,
    }


def add_channels(soc, channel_verilog: list[Path], ports: dict,
                 mem_ports: list | None = None) -> tuple[Signal, dict[str, ChannelEvents]]:
    """Add both channels to ``soc`` between ``ports["a"]`` and ``ports["b"]``
    (``hw.ethport.EthPort``s): forward in on B and out on A, return in on A and out on B. Each
    channel's memory port is its own port of ``soc.sdram``'s crossbar, or, given
    ``mem_ports`` (64-bit native ports, forward's first), that one. Where their delay lines
    lie, the firmware says (its board header). Returns the shared 64-bit timebase and each
    channel's events by module suffix."""
    now = Signal(64, name="now")
    soc.sync += now.eq(now + 1)
    for path in channel_verilog:
        soc.platform.add_source(str(path))
    buses, events = [], {}
    soc.satemu_mem = []          # each channel's (64-bit port, native port), for probes
    widen = None
    ingress = {CHANNEL_FORWARD: ports["b"], CHANNEL_RETURN: ports["a"]}
    egress = {CHANNEL_FORWARD: ports["a"], CHANNEL_RETURN: ports["b"]}
    for i, (channel, pre) in enumerate(CHANNEL_MODULES.items()):
        rx, tx = ingress[channel], egress[channel]
        if mem_ports is not None:
            port = native = mem_ports[i]
        elif soc.sdram.crossbar.controller.data_width != 128:
            # 64 bits (the simulated board), or narrower (LiteDRAM converts, as on the
            # Colorlight's 32-bit SDRAM port).
            port = native = soc.sdram.crossbar.get_port(data_width=64)
        else:
            native = soc.sdram.crossbar.get_port()
            from litedram.common import LiteDRAMNativePort
            port = LiteDRAMNativePort("both", len(native.cmd.addr) + 1, 64)
            if widen is None:
                widen = write_widen_verilog(Path(channel_verilog[0]).parent, len(port.cmd.addr))
                soc.platform.add_source(str(widen))
            soc.specials += Instance("satemu_memwiden", i_clk=ClockSignal(), i_rst=ResetSignal(),
                o_merged=Signal(name=f"{pre}_merged"),
                **mem_port_pins("narrow", port, master=False),
                **mem_port_pins("wide", native, master=True))
        soc.comb += native.cmd.last.eq(1)
        soc.satemu_mem.append((port, native))
        bus = {"addr": Signal(ADDR_BITS), "w_en": Signal(), "w_data": Signal(32),
               "r_data": Signal(32)}
        buses.append(bus)
        ev = events[pre] = ChannelEvents(pre)
        soc.specials += Instance(f"satemu_channel_{pre}",
            i_clk=ClockSignal(), i_rst=ResetSignal(), i_now=now,
            i_sink__valid=rx.rx_valid, o_sink__ready=rx.rx_ready, i_sink__payload=rx.rx_payload,
            o_source__valid=tx.tx_valid, i_source__ready=tx.tx_ready,
            o_source__payload=tx.tx_payload,
            **mem_port_pins("mem", port, master=True),
            i_bus__addr=bus["addr"], i_bus__w_en=bus["w_en"], i_bus__w_data=bus["w_data"],
            o_bus__r_data=bus["r_data"],
            o_fate_valid=ev.fate_valid, o_fate=ev.fate[:3], o_fate_copy=ev.fate[3],
            o_arrived=ev.arrived, o_overrun=ev.overrun)
        # The cycle a frame starts to leave the channel: its source's valid first rises.
        started = Signal()
        soc.comb += ev.start.eq(tx.tx_valid & ~started)
        last = tx.tx_payload[beat_field("last")]
        soc.sync += If(tx.tx_valid & tx.tx_ready & last, started.eq(0)).Elif(
            tx.tx_valid, started.eq(1))
    soc.submodules.channel_bridge = bridge = ChannelBridge(buses)
    soc.bus.add_slave("satemu", bridge.bus,
                      SoCRegion(origin=CHANNEL_BASE, size=(WINDOW_BOTH + 1) * WINDOW_BYTES,
                                cached=False))
    return now, events


def build_board(soc, build_name: str, output_dir: Path, with_gateware: bool, seed: int = 1,
                pnr_args: str = "") -> Path:
    """Build a board's SoC with LiteX: without gateware, the headers and libraries the firmware
    builds against; with it, the bitstream, nextpnr (with the board's ``pnr_args``) failing the
    build if any clock misses its target. Returns the gateware directory (``build_name``.bit, nextpnr.log and
    nextpnr-report.json, which ``hw.bitstream`` reads)."""
    from litex.soc.integration.builder import Builder

    builder = Builder(soc, output_dir=str(output_dir), compile_software=not with_gateware,
                      compile_gateware=with_gateware)
    # Each board target may add nextpnr options (NEXTPNR_ARGS), such as its router.
    soc.platform.toolchain._pnr_opts += (f" {pnr_args} --log nextpnr.log"
                                         " --report nextpnr-report.json")
    # timingstrict: no --timing-allow-fail, so nextpnr exits non-zero if a clock misses.
    builder.build(build_name=build_name, timingstrict=True, seed=seed, run=False)
    gateware = Path(output_dir) / "gateware"
    if with_gateware:
        _relative_sources(gateware / f"{build_name}.ys", gateware)
        done = subprocess.run(["bash", f"build_{build_name}.sh"], cwd=gateware)
        if done.returncode:
            raise SystemExit(f"the {build_name} toolchain script failed "
                             f"(status {done.returncode}); see {gateware}")
    return gateware


def _relative_sources(script: Path, cwd: Path) -> None:
    """Make the Yosys script's sources relative to ``cwd``, where it runs. Yosys names cells
    after their source file (``$eq$<file>:<line>$<n>``), and names order its passes and nextpnr's,
    so absolute paths gave a different netlist, and different timing, in each clone of the
    repository; the build directory and the venv are inside it, so relative paths are the same."""
    def rel(m):
        return m.group(1) + os.path.relpath(m.group(2), cwd)

    script.write_text(re.sub(r"^(read_verilog(?: -\S+)* )(/\S+)$", rel, script.read_text(),
                             flags=re.M))


def board_main(doc: str, make_soc, board):
    """A board target's command line (``python -m hw.<board>``, as ``hw.bitstream`` runs it):
    ``make_soc(channel_verilog, sys_clk_freq, firmware)`` makes the SoC of ``board`` (a
    ``satemu.base.boards.Board``), which nextpnr places and routes with the options of its
    bitstream flow."""
    import argparse

    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--channel-verilog", required=True, action="append",
                    help="Verilog (or netlist) of satemu_channel_fwd and of satemu_channel_ret")
    ap.add_argument("--output-dir", required=True)
    ap.add_argument("--firmware", help="firmware.bin for the ROM; without it, only software headers")
    ap.add_argument("--sys-clk-freq", type=float, default=float(board.f_clk))
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placement seed")
    args = ap.parse_args()
    firmware = Path(args.firmware) if args.firmware else None
    soc = make_soc([Path(p) for p in args.channel_verilog], args.sys_clk_freq,
                   firmware=read_firmware(firmware))
    flow = board.bitstream
    build_board(soc, flow.build_name, Path(args.output_dir), firmware is not None, args.seed,
                flow.nextpnr_args)


def board_constraints(board):
    """A real board's pin and clock data (``constraints/<its constraints>.py``, from its
    ``satemu.base.boards`` record), as a module."""
    return load_constraints(board.bitstream.constraints)


def board_platform(board):
    """A real board for LiteX with the open toolchain (yosys, nextpnr-ecp5, ecppack), from its
    ``satemu.base.boards`` record: ``ecp5_platform`` of its constraints."""
    return ecp5_platform(board_constraints(board))


def load_constraints(name: str):
    """A board's pin and clock data, ``constraints/<name>.py``, as a module."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "constraints" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"satemu_constraints_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ecp5_platform(board):
    """A LiteX ECP5 platform for the open toolchain (yosys, nextpnr-ecp5, ecppack) from a
    constraints module (``load_constraints``): its device and IO list, and a period constraint
    on each of its input clocks. ``platform.board`` is the module."""
    from litex.build.lattice import LatticeECP5Platform

    class Platform(LatticeECP5Platform):
        def __init__(self):
            self.board = board
            LatticeECP5Platform.__init__(self, board.DEVICE, board.IO, toolchain="trellis")

        def do_finalize(self, fragment):
            LatticeECP5Platform.do_finalize(self, fragment)
            for (name, number), period in board.CLOCK_PERIODS.items():
                self.add_period_constraint(self.lookup_request(name, number, loose=True), period)

    return Platform()
