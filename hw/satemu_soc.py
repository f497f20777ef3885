# SPDX-License-Identifier: BSD-2-Clause
"""The satemu SoC for the simulated board: VexRiscv, UART, delay-line memory and two channels.

LiteX (Migen) assembles the SoC around the Amaranth channel, which enters as generated Verilog
(two modules); the channels, their DRAM ports and the register bridge are ``hw.soc_common``'s,
shared with the board targets. Two LiteEth MACs, used raw at L2, are the box's ports
(hw.ethport): port B's receive side feeds the forward channel, which sends on port A; port A's
receive side feeds the return channel, which sends on port B. The CPU's UART is the only way in:
the ports never reach the CPU or the bus. In simulation the PHYs' wire is a set of pads that the
satemu_eth module (sim/modules) drives and reads at exact cycles.

``board`` chooses the board (``satemu.base.boards``) the SoC stands for: by default the simulated
board (``"sim"``), which the system tests and the demo run, its delay lines in a behavioural
memory (``hw.simmem``) and its MACs' FCS computed through a table (``hw.simcrc``), both for the
simulation's speed; a real board's name builds a board
variant, with that board's clock, channels, CPU and memories, its DRAM chip on an SDRAM model
set up like its PHY (the target's ``dram_phy_settings``; the Versa-5G's 128-bit DDR3 port behind
the port widener, as on the board), so that the board's firmware runs here, and counters of
the channels' memory traffic (``PROBES``) that the simulation writes to ``probe.log``. A
variant's firmware does not limit the delay line's throughput, since the variant is what
bench/bench_datapath.py measures that limit on.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from migen import Cat, ClockSignal, Instance, Record, Signal

from litex.build.generic_platform import Pins, Subsignal
from litex.build.io import CRG
from litex.build.sim import SimPlatform
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore

from litedram.phy.model import SDRAMPHYModel

from hw.ethport import EthPort, SimEthClocks, SimEthPHY
from hw.simcrc import fast_fcs
from hw.simmem import SimNativeMemory
from hw.soc_common import add_channels, dram_module, read_firmware, soc_core_kwargs
from satemu.base.boards import BOARDS, DEFAULT_BOARD

# Where the simulated board's CPU reads its DRAM (the frame logs): in the CPU's uncached I/O
# space, above the channels' register bridge (hw.soc_common.CHANNEL_BASE).
FRAMELOG_BASE = 0xA000_0000

SIM_THREADS = 1               # Verilator threads: with 2, a busy second core slowed it ~1000x
PROBE_PERIOD_BITS = 16        # a board variant logs its probe counters every 2^16 cycles
# Verilator's clocker counts whole picoseconds, which a board's period need not be: a board
# variant's clocker runs at this much simulated time a second, which nothing reads (the
# registers, the firmware and every cycle the host sees count the timebase's cycles as the
# board's).
VARIANT_CLOCKER_HZ = 80_000_000

_io = [
    ("sys_clk", 0, Pins(1)),
    ("serial", 0,
        Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)),
        Subsignal("source_data", Pins(8)),
        Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)),
        Subsignal("sink_data", Pins(8))),
    # The simulated wire of ports A and B (hw.ethport.SimEthPHY), and the channels' ingress and
    # egress events, for the simulation's Ethernet module (sim/modules/satemu_eth).
    ("satemu_eth", 0, Subsignal("now", Pins(64)),
        *[Subsignal(f"{port}_{name}", Pins(width)) for port in ("a", "b") for name, width in (
            ("rx_valid", 1), ("rx_data", 64), ("rx_last", 1), ("rx_last_be", 8),
            ("tx_valid", 1), ("tx_data", 64), ("tx_last", 1), ("tx_last_be", 8))],
        *[Subsignal(f"{ch}_{name}", Pins(width)) for ch in ("fwd", "ret")
          for name, width in (("arrived", 1), ("overrun", 1), ("start", 1), ("fate_valid", 1),
                              ("fate", 4))]),
]


def board_target(board):
    """The LiteX target module of a real board (its ``Bitstream.target``)."""
    import importlib
    return importlib.import_module(board.bitstream.target)


def model_settings(real):
    """``SDRAMPHYModel`` settings standing for a real PHY's ``real`` settings: its memory type,
    data bits, phases, read and write phases, CAS and CAS write latencies and its read and
    write latencies in system cycles, which is all LiteDRAM's controller and crossbar read.
    What the model cannot be: it reports itself as ``SDRAMPHYModel`` and without read
    leveling, bitslips or delay taps (a board's firmware trains a real DDR3 PHY through its
    CSRs; the model's data are always aligned, so the simulated firmware has nothing to
    train), and it has no DQ/DQS electrical timing, no I/O registers or clock shift, nor a
    PHY's start-up sequence; its data come back exactly read_latency cycles after the
    command."""
    from litedram.common import PhySettings
    return PhySettings(phytype="SDRAMPHYModel", memtype=real.memtype, databits=real.databits,
                       dfi_databits=real.dfi_databits, nphases=real.nphases,
                       rdphase=real.rdphase, wrphase=real.wrphase, cl=real.cl, cwl=real.cwl,
                       read_latency=real.read_latency, write_latency=real.write_latency,
                       strobes=real.strobes, nranks=real.nranks)


def phy_settings(board):
    """(real, model): the ``PhySettings`` of a real board's DRAM PHY, elaborated on its pins at
    its system clock, and the settings an ``SDRAMPHYModel`` stands for it with."""
    real = board_target(board).dram_phy_settings()
    return real, model_settings(real)


# The probe counters of a board variant, in the order probe.log lists them after the cycle.
# Per channel (fwd, ret), on its 64-bit crossbar port: commands taken (writes, reads), cycles
# a command waited (valid, not ready), write and read data words moved, cycles a read was
# outstanding (taken, its data not yet back); on the crossbar's native (128-bit) port behind
# the up-converter: commands taken (writes, reads) and cycles a command waited. Then the DRAM
# commands on the DFI, all phases: activate, precharge, read, write, refresh. Then the cycles
# LiteDRAM's command multiplexer spends in its READ, WRITE, WTR (write-to-read turnaround) and
# REFRESH states, and in the first of its read-to-write turnaround states (RTW: once per
# switch; the turnaround lasts read_latency - 1 cycles, the rest of the cycles).
PROBE_PORT = ("cmd_w", "cmd_r", "cmd_wait", "wdata", "rdata", "rd_busy",
              "nat_w", "nat_r", "nat_wait")
PROBE_DFI = ("dfi_act", "dfi_pre", "dfi_rd", "dfi_wr", "dfi_ref")
PROBE_MUX = ("mux_read", "mux_write", "mux_wtr", "mux_refresh", "mux_rtw_switches")
PROBES = tuple(f"{ch}_{n}" for ch in ("fwd", "ret") for n in PROBE_PORT) + PROBE_DFI + PROBE_MUX
PROBE_BITS = 48

PROBE_VERILOG = r"""// Generated by hw.satemu_soc: prints the probe counters every 2^PERIOD_BITS cycles.
module satemu_probe #(parameter N = 1, parameter W = 48, parameter PERIOD_BITS = 16) (
    input clk, input [63:0] now, input [N*W-1:0] counts);
  integer fd, i;
  initial fd = $fopen("probe.log", "w");
  always @(posedge clk) begin
    if (now[PERIOD_BITS-1:0] == 0) begin
      $fwrite(fd, "%0d", now);
      for (i = 0; i < N; i = i + 1)
        $fwrite(fd, " %0d", counts[i*W +: W]);
      $fwrite(fd, "\n");
      $fflush(fd);
    end
  end
endmodule
"""


class SatemuSimSoC(SoCCore):
    def __init__(self, channel_verilog: list[Path], firmware: list[int] | None = None,
                 board: str = DEFAULT_BOARD):
        self.board = board = BOARDS[board]
        platform = SimPlatform("SIM", _io)
        self.crg = CRG(platform.request("sys_clk"))      # with a power-on reset, as VexRiscv needs
        # A board variant has the board's CPU and memories too, so that its firmware runs here
        # as on the board.
        SoCCore.__init__(self, platform, clk_freq=board.f_clk, uart_name="sim",
                         **soc_core_kwargs("satemu simulated board", firmware, board.cpu))

        mem_ports = None
        if board.bitstream is None:
            # Delay-line memory: a behavioural memory (hw.simmem) with a 64-bit native port for
            # each channel, holding the DRAM's upper half, where the delay lines are
            # (Board.delay_line_base), and with the frame log the lower half too, where its
            # rings are (Board.log_base), which the CPU reads through the region "framelog"
            # (uncached; word w at byte 8 w). Nothing else uses the DRAM: no main RAM.
            words = 2 * board.mem_words
            space = 2 * words
            log = board.log_words > 0
            self.delay_lines = SimNativeMemory(words=space if log else words,
                                               base=0 if log else words,
                                               address_width=space.bit_length() - 1,
                                               nports=2, cpu_bus=log)
            mem_ports = self.delay_lines.ports
            if log:
                self.bus.add_slave("framelog", self.delay_lines.bus,
                                   SoCRegion(origin=FRAMELOG_BASE, size=8 * space,
                                             cached=False))
        else:
            # A real board's: its DRAM chip at its clock, on a model set up like its PHY (the
            # Versa's DDR3L at 1:2, a 128-bit native port; the Colorlight's SDR SDRAM at 1:1, a
            # 32-bit one that LiteDRAM's converters give the channels as 64 bits).
            module = dram_module(board, float(board.f_clk))
            self.sdrphy = SDRAMPHYModel(module=module, settings=phy_settings(board)[1],
                                        clk_freq=float(board.f_clk))
            # On the CPU bus too: the firmware runs sdram_init() from it (its own data stays in
            # SRAM).
            self.add_sdram("sdram", phy=self.sdrphy, module=module, l2_cache_size=0)
            self.add_constant("SDRAM_TEST_DISABLE")   # no memtest at boot: minutes in simulation

        eth = platform.request("satemu_eth")
        # Port A is the terminal side, port B the gateway side.
        ports = {}
        self.eth_clocks = SimEthClocks()
        for name in ("a", "b"):
            pads = Record([(f, len(getattr(eth, f"{name}_{f}"))) for f in (
                "rx_valid", "rx_data", "rx_last", "rx_last_be",
                "tx_valid", "tx_data", "tx_last", "tx_last_be")])
            self.comb += [getattr(eth, f"{name}_{f}").eq(getattr(pads, f)) for f in (
                "tx_valid", "tx_data", "tx_last", "tx_last_be")]
            self.comb += [getattr(pads, f).eq(getattr(eth, f"{name}_{f}")) for f in (
                "rx_valid", "rx_data", "rx_last", "rx_last_be")]
            phy = SimEthPHY(pads)
            # The simulated board's MACs compute the FCS through a table (hw.simcrc): the same
            # values as LiteEth's engines at a small part of their simulation cost.
            with fast_fcs() if board.bitstream is None else contextlib.nullcontext():
                port = EthPort(phy)
            setattr(self, f"ethphy_{name}", phy)
            setattr(self, f"ethmac_{name}", port)
            ports[name] = port
        # The channels (forward: in on B, out on A; return: in on A, out on B) report their
        # ingress and egress events, with the timebase, to the simulation's Ethernet module.
        # A board variant counts the traffic on each channel's 64-bit port and on the native
        # port behind it (the Versa's 128-bit one the widener drives; on the Colorlight the
        # 64-bit port is the crossbar's, which LiteDRAM narrows to 32 bits: the same counts).
        # No delay-line throughput limit in the firmware of either: the default board's 64-bit
        # memory keeps up with anything its channels carry, and a board variant is what
        # measures the board's limit (bench/bench_datapath.py offers it more than the limit).
        now, events = add_channels(self, channel_verilog, ports, mem_ports)
        if board.bitstream is not None:
            self.add_probe(now, self.satemu_mem)
        self.comb += eth.now.eq(now)
        for pre, ev in events.items():
            self.comb += [getattr(eth, f"{pre}_{name}").eq(getattr(ev, name))
                          for name in ("arrived", "overrun", "start", "fate_valid", "fate")]

    def add_probe(self, now, ports):
        """Count ``PROBES`` (see there) and print them through ``satemu_probe`` (a Verilog
        module that build_sim adds) every 2^PROBE_PERIOD_BITS cycles."""
        counts = []

        def count(event):
            c = Signal(PROBE_BITS)
            self.sync += c.eq(c + event)
            counts.append(c)

        assert len(ports) == 2                       # forward's, then return's (add_channels)
        for port, native in ports:
            cmd = port.cmd
            count(cmd.valid & cmd.ready & cmd.we)
            count(cmd.valid & cmd.ready & ~cmd.we)
            count(cmd.valid & ~cmd.ready)
            count(port.wdata.valid & port.wdata.ready)
            count(port.rdata.valid & port.rdata.ready)
            inflight = Signal(8)
            read_taken = cmd.valid & cmd.ready & ~cmd.we
            read_back = port.rdata.valid & port.rdata.ready
            self.sync += inflight.eq(inflight + read_taken - read_back)
            count(inflight != 0)
            count(native.cmd.valid & native.cmd.ready & native.cmd.we)
            count(native.cmd.valid & native.cmd.ready & ~native.cmd.we)
            count(native.cmd.valid & ~native.cmd.ready)
        phases = self.sdrphy.dfi.phases

        def dfi(ras_n, cas_n, we_n):
            hits = [~p.cs_n & (p.ras_n == ras_n) & (p.cas_n == cas_n) & (p.we_n == we_n)
                    for p in phases]
            total = Signal(2)
            self.comb += total.eq(sum(hits[1:], hits[0]))
            return total

        for ras_n, cas_n, we_n in ((0, 1, 1), (0, 1, 0), (1, 0, 1), (1, 0, 0), (0, 0, 1)):
            count(dfi(ras_n, cas_n, we_n))      # activate, precharge, read, write, refresh
        fsm = self.sdram.controller.multiplexer.fsm
        for state in ("READ", "WRITE", "WTR", "REFRESH", "RTW"):
            count(fsm.ongoing(state))
        assert len(counts) == len(PROBES)
        self.specials += Instance("satemu_probe", p_N=len(counts), p_W=PROBE_BITS,
                                  p_PERIOD_BITS=PROBE_PERIOD_BITS, i_clk=ClockSignal(),
                                  i_now=now, i_counts=Cat(*counts))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--channel-verilog", required=True, action="append",
                    help="Verilog of satemu_channel_fwd and of satemu_channel_ret")
    ap.add_argument("--output-dir", required=True)
    ap.add_argument("--firmware", help="firmware.bin for the ROM; without it, only software headers")
    ap.add_argument("--board", choices=list(BOARDS), default=DEFAULT_BOARD,
                    help="the board the SoC stands for: the simulated board (default) or a "
                         "real board's variant")
    args = ap.parse_args()
    gateware = build_sim([Path(p) for p in args.channel_verilog],
                         Path(args.firmware) if args.firmware else None,
                         Path(args.output_dir), board=args.board)
    if args.firmware:
        write_rom_init(Path(args.firmware), gateware, BOARDS[args.board].cpu.rom_bytes)


def build_sim(channel_verilog: list[Path], firmware_bin: Path | None, output_dir: Path,
              uart_port: int = 0, eth_port: int = 0, opt_level: str = "O3",
              board: str = DEFAULT_BOARD) -> Path:
    """Build the simulated board; returns its gateware directory (holding obj_dir/Vsim and the
    sim_config.js that names the UART's TCP port). Without ``firmware_bin`` only the headers and
    libraries the firmware builds against are generated. ``board`` chooses the board the SoC
    stands for (see the module's docstring)."""
    from litex.build.sim.config import SimConfig
    from litex.soc.integration.builder import Builder

    # The ROM is the same size whatever the firmware (soc_core_kwargs pads it), so a new firmware
    # only needs a new sim_rom.init (write_rom_init), not a new Verilator build.
    soc = SatemuSimSoC(channel_verilog, firmware=read_firmware(firmware_bin), board=board)
    variant = soc.board.bitstream is not None
    if variant:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        probe = Path(output_dir) / "satemu_probe.v"
        probe.write_text(PROBE_VERILOG)
        soc.platform.add_source(str(probe))
    builder = Builder(soc, output_dir=str(output_dir), compile_software=firmware_bin is None,
                      compile_gateware=firmware_bin is not None)
    sim_config = SimConfig()
    sim_config.add_clocker("sys_clk",
                           freq_hz=VARIANT_CLOCKER_HZ if variant else soc.board.f_clk)
    sim_config.add_module("satemu_uart", "serial", args={"port": uart_port})
    sim_config.add_module("satemu_eth", ["satemu_eth", "sys_clk"], args={"port": eth_port})
    modules = Path(__file__).resolve().parent.parent / "sim" / "modules"
    # LiteX's Verilator script runs ``make -j`` without a limit unless given ``jobs``: about 100
    # C++ compilers at once, which starved every other process on a 2-core machine.
    builder.build(sim_config=sim_config, run=False, interactive=False, opt_level=opt_level,
                  extra_mods=["satemu_eth", "satemu_uart"], extra_mods_path=str(modules),
                  threads=SIM_THREADS, jobs=os.cpu_count())
    gateware = Path(output_dir) / "gateware"
    if firmware_bin is not None:          # LiteX writes the Verilator script; compile it here
        import subprocess
        subprocess.run(["bash", "build_sim.sh"], cwd=gateware, check=True)
    return gateware


def write_rom_init(firmware_bin: Path, gateware: Path, rom_bytes: int) -> None:
    """Load a firmware into a built board: the ROM image (``rom_bytes``) Verilator reads when
    it starts."""
    data = Path(firmware_bin).read_bytes().ljust(rom_bytes, b"\0")
    if len(data) > rom_bytes:
        raise ValueError(f"firmware of {len(data)} bytes exceeds the {rom_bytes}-byte ROM")
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, rom_bytes, 4)]
    (Path(gateware) / "sim_rom.init").write_text("".join(f"{w:08x}\n" for w in words))


if __name__ == "__main__":
    main()
