# SPDX-License-Identifier: BSD-2-Clause
"""The satemu SoC for the simulated board: VexRiscv, UART, LiteDRAM and two link channels.

LiteX (Migen) assembles the SoC around the Amaranth channel, which enters as generated Verilog
(two modules); the channels, their DRAM ports and the register bridge are ``hw.soc_common``'s,
shared with the board targets. Two LiteEth MACs, used raw at L2, are the box's ports
(hw.ethport): port B's receive side feeds the forward channel, which sends on port A; port A's
receive side feeds the return channel, which sends on port B. The CPU's UART is the only way in:
the ports never reach the CPU or the bus. In simulation the PHYs' wire is a set of pads that the
satemu_eth module (sim/modules) drives and reads at exact cycles.

``dram="versa"`` builds a variant with the Versa-5G's memory system and clock (see
``versa_phy_settings``; bench/bench_datapath.py measures the data path on it): the channels as
``hw.versa_ecp5.channel_params`` makes them, registers counting cycles of the board's system
clock, LiteDRAM with the board's MT41K64M16 at that clock on an SDRAM model set up like its
ECP5DDRPHY (DDR3, 16 data bits, two phases, a 128-bit native port behind the port widener, as
on the board; its firmware does not limit the delay line's throughput, since this variant is
what measures that limit), the board's VexRiscv variant (``hw.versa_ecp5.CPU_VARIANT``), so
that the board's firmware build runs here, and counters of the channels' memory traffic
(``PROBES``) that the simulation writes to ``probe.log``. ``dram="colorlight"`` is the same for
the Colorlight 5A-75B: its 40 MHz clock, its SDR SDRAM (M12L64322A, 32 bits, one phase) on a
model set up like its GENSDRPHY (``colorlight_phy_settings``), its 2 MiB delay lines, its
channels (no BoD block) and its CPU (SERV). The default, ``dram="sim"``, is the simulated
board the system tests and the demo run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from migen import Cat, ClockSignal, Instance, Record, Signal

from litex.build.generic_platform import Pins, Subsignal
from litex.build.io import CRG
from litex.build.sim import SimPlatform
from litex.soc.integration.soc_core import SoCCore

from litedram import modules as litedram_modules
from litedram.phy.model import SDRAMPHYModel

from hw.ethport import EthPort, SimEthClocks, SimEthPHY
from hw.soc_common import ROM_BYTES, add_channels, read_firmware, soc_core_kwargs

SIM_F_CLK = 6_250_000         # nominal clock of the simulated board (registers count these cycles)
SIM_PORT_BPS = 64 * SIM_F_CLK # its 64-bit PHYs carry a beat per cycle: 400 Mbit/s of wire per port
MEM_WORDS = 1 << 22           # delay-line words per channel (32 MiB each, the DRAM's upper half)
SIM_THREADS = 1               # Verilator threads: with 2, a busy second core slowed it ~1000x
DRAMS = ("sim", "versa", "colorlight")   # a simulated board's memory systems (see the docstring)
# The board target each variant stands for: its clock, CPU, memory and channel parameters.
VARIANT_BOARDS = {"versa": "hw.versa_ecp5", "colorlight": "hw.colorlight_5a_75b"}
PROBE_PERIOD_BITS = 16        # a board variant logs its probe counters every 2^16 cycles

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
        *[Subsignal(f"{ch}_{name}", Pins(1)) for ch in ("fwd", "ret")
          for name in ("arrived", "overrun", "start")]),
]


def board_target(dram: str):
    """The board target module a variant stands for (``VARIANT_BOARDS``)."""
    import importlib
    return importlib.import_module(VARIANT_BOARDS[dram])


def model_settings(real):
    """``SDRAMPHYModel`` settings standing for a real PHY's ``real`` settings: its memory type,
    data bits, phases, read and write phases, CAS and CAS write latencies and its read and
    write latencies in system cycles, which is all LiteDRAM's controller and crossbar read."""
    from litedram.common import PhySettings
    return PhySettings(phytype="SDRAMPHYModel", memtype=real.memtype, databits=real.databits,
                       dfi_databits=real.dfi_databits, nphases=real.nphases,
                       rdphase=real.rdphase, wrphase=real.wrphase, cl=real.cl, cwl=real.cwl,
                       read_latency=real.read_latency, write_latency=real.write_latency,
                       strobes=real.strobes, nranks=real.nranks)


def colorlight_phy_settings():
    """The Colorlight's SDR PHY (``GENSDRPHY`` on the board's pins at its system clock) and the
    model's settings for it: 32 data bits, one phase, CAS latency 2, read latency 3 cycles (the
    model's own default would be 4). The model has no I/O registers or clock shift; its data
    come back exactly read_latency cycles after the command, as the real PHY's do."""
    from litedram.phy import GENSDRPHY
    from hw.colorlight_5a_75b import SYS_CLK_FREQ, ColorlightPlatform

    real = GENSDRPHY(ColorlightPlatform().request("sdram"), SYS_CLK_FREQ).settings
    return real, model_settings(real)


def versa_phy_settings():
    """The Versa-5G's DDR3 PHY as an SDRAM model can stand for it: returns (real, model), the
    ``PhySettings`` of ``ECP5DDRPHY`` elaborated on the board's pins at its system clock,
    and the settings to give ``SDRAMPHYModel``.

    The model gets the PHY's memory type (DDR3), data bits (16, so a 4 x 16-bit DFI word per
    phase), phases (2: the native port is 2 x 64 = 128 bits, one BL8 burst), read and write
    phases, CAS and CAS write latencies and its read and write latencies in system cycles, which
    is all LiteDRAM's controller and crossbar read from a PHY. What the model cannot be: it
    reports itself as ``SDRAMPHYModel`` and without read leveling, bitslips or delay taps (the
    board's firmware trains the real PHY through its CSRs; the model's data are always aligned,
    so the simulated firmware has nothing to train), and it has no DQ/DQS electrical timing nor
    the PHY's start-up sequence (ECP5DDRPHYInit, which stops and resets the edge clock)."""
    from litedram.phy import ECP5DDRPHY
    from hw.versa_ecp5 import SYS_CLK_FREQ, VersaPlatform

    real = ECP5DDRPHY(VersaPlatform().request("ddram"), sys_clk_freq=SYS_CLK_FREQ).settings
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
    def __init__(self, channel_verilog: list[Path], mem_words: int | None = None,
                 firmware: list[int] | None = None, dram: str = "sim"):
        if dram not in DRAMS:
            raise ValueError(f"dram must be one of {DRAMS}, not {dram!r}")
        platform = SimPlatform("SIM", _io)
        self.crg = CRG(platform.request("sys_clk"))      # with a power-on reset, as VexRiscv needs
        f_clk, port_bps = sim_clock(dram)
        # A board variant has the board's CPU too, so its firmware runs here as on the board;
        # and the board's delay lines (their size in words).
        cpu = dict(cpu_type="vexriscv", cpu_variant="standard")
        if dram != "sim":
            target = board_target(dram)
            cpu = dict(cpu_type=getattr(target, "CPU_TYPE", "vexriscv"),
                       cpu_variant=target.CPU_VARIANT)
            mem_words = target.MEM_WORDS
        SoCCore.__init__(self, platform, clk_freq=f_clk, uart_name="sim",
                         **soc_core_kwargs("satemu simulated board", firmware, **cpu))

        if dram == "sim":
            # Delay-line memory: an SDRAM model whose native port is 64 bits, as the channels'.
            module = litedram_modules.MT48LC16M16(100e6, "1:1")
            self.sdrphy = SDRAMPHYModel(module=module, data_width=64, clk_freq=100e6)
        elif dram == "versa":
            # The Versa-5G's: its DDR3L chip at its clock (1:2), on a model set up like its PHY.
            from hw.versa_ecp5 import SYS_CLK_FREQ
            module = litedram_modules.MT41K64M16(SYS_CLK_FREQ, "1:2")
            self.sdrphy = SDRAMPHYModel(module=module, settings=versa_phy_settings()[1],
                                        clk_freq=SYS_CLK_FREQ)
        else:
            # The Colorlight's: its SDR SDRAM chip at its clock (1:1, a 32-bit native port that
            # LiteDRAM's converters give the channels as 64 bits), on a model set up like its PHY.
            from hw.colorlight_5a_75b import SDRAM_MODULE, SYS_CLK_FREQ
            module = SDRAM_MODULE(SYS_CLK_FREQ, "1:1")
            self.sdrphy = SDRAMPHYModel(module=module, settings=colorlight_phy_settings()[1],
                                        clk_freq=SYS_CLK_FREQ)
        # On the CPU bus too: the firmware runs sdram_init() from it (its own data stays in SRAM).
        self.add_sdram("sdram", phy=self.sdrphy, module=module, l2_cache_size=0)
        self.add_constant("SDRAM_TEST_DISABLE")   # no memtest at boot: it takes minutes in simulation

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
        now, events = add_channels(self, channel_verilog, ports, mem_words, f_clk, port_bps)
        if dram != "sim":
            self.add_probe(now, self.satemu_mem)
        self.comb += eth.now.eq(now)
        for pre, ev in events.items():
            self.comb += [getattr(eth, f"{pre}_{name}").eq(getattr(ev, name))
                          for name in ("arrived", "overrun", "start")]

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


def sim_clock(dram: str = "sim") -> tuple[int, int]:
    """(nominal clock, port line rate) of a simulated board: the registers count the clock's
    cycles, the firmware reports both (HELLO) and budgets an unshaped channel at the line rate.
    The versa variant has the board's clock and 1 Gbit/s (the simulated wire still carries
    a beat per cycle; traffic offered to it keeps to GbE's pacing), as has the colorlight
    variant."""
    if dram != "sim":
        target = board_target(dram)
        return int(target.SYS_CLK_FREQ), target.PORT_BPS
    return SIM_F_CLK, SIM_PORT_BPS


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--channel-verilog", required=True, action="append",
                    help="Verilog of satemu_channel_fwd and of satemu_channel_ret")
    ap.add_argument("--output-dir", required=True)
    ap.add_argument("--firmware", help="firmware.bin for the ROM; without it, only software headers")
    ap.add_argument("--dram", choices=DRAMS, default="sim",
                    help="memory system: the simulated board's (default), the Versa-5G's or the "
                         "Colorlight's")
    args = ap.parse_args()
    gateware = build_sim([Path(p) for p in args.channel_verilog], Path(args.firmware) if args.firmware else None,
                         Path(args.output_dir), dram=args.dram)
    if args.firmware:
        write_rom_init(Path(args.firmware), gateware)



def build_sim(channel_verilog: list[Path], firmware_bin: Path | None, output_dir: Path,
              uart_port: int = 0, eth_port: int = 0, opt_level: str = "O3",
              dram: str = "sim") -> Path:
    """Build the simulated board; returns its gateware directory (holding obj_dir/Vsim and the
    sim_config.js that names the UART's TCP port). Without ``firmware_bin`` only the headers and
    libraries the firmware builds against are generated. ``dram`` chooses the memory system
    (``DRAMS``; see the module's docstring)."""
    from litex.build.sim.config import SimConfig
    from litex.soc.integration.builder import Builder

    # The ROM is the same size whatever the firmware (soc_core_kwargs pads it), so a new firmware
    # only needs a new sim_rom.init (write_rom_init), not a new Verilator build.
    soc = SatemuSimSoC(channel_verilog, mem_words=MEM_WORDS, firmware=read_firmware(firmware_bin),
                       dram=dram)
    if dram != "sim":
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        probe = Path(output_dir) / "satemu_probe.v"
        probe.write_text(PROBE_VERILOG)
        soc.platform.add_source(str(probe))
    builder = Builder(soc, output_dir=str(output_dir), compile_software=firmware_bin is None,
                      compile_gateware=firmware_bin is not None)
    sim_config = SimConfig()
    # Verilator's clocker counts whole picoseconds, which the board's period need not be: the
    # board variants' clocker runs at 80 MHz of simulated time, which nothing reads (the
    # registers, the firmware and every cycle the host sees count the timebase's cycles as the
    # board's).
    sim_config.add_clocker("sys_clk", freq_hz=SIM_F_CLK if dram == "sim" else 80_000_000)
    sim_config.add_module("satemu_uart", "serial", args={"port": uart_port})
    sim_config.add_module("satemu_eth", ["satemu_eth", "sys_clk"], args={"port": eth_port})
    modules = Path(__file__).resolve().parent.parent / "sim" / "modules"
    builder.build(sim_config=sim_config, run=False, interactive=False, opt_level=opt_level,
                  extra_mods=["satemu_eth", "satemu_uart"], extra_mods_path=str(modules),
                  threads=SIM_THREADS)
    gateware = Path(output_dir) / "gateware"
    if firmware_bin is not None:          # LiteX writes the Verilator script; compile it here
        import subprocess
        subprocess.run(["bash", "build_sim.sh"], cwd=gateware, check=True)
    return gateware



def write_rom_init(firmware_bin: Path, gateware: Path) -> None:
    """Load a firmware into a built board: the ROM image Verilator reads when it starts."""
    data = Path(firmware_bin).read_bytes().ljust(ROM_BYTES, b"\0")
    if len(data) > ROM_BYTES:
        raise ValueError(f"firmware of {len(data)} bytes exceeds the {ROM_BYTES}-byte ROM")
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, ROM_BYTES, 4)]
    (Path(gateware) / "sim_rom.init").write_text("".join(f"{w:08x}\n" for w in words))


if __name__ == "__main__":
    main()
