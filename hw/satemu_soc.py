# SPDX-License-Identifier: BSD-2-Clause
"""The satemu SoC for the simulated board: VexRiscv, UART, LiteDRAM and two link channels.

LiteX (Migen) assembles the SoC around the Amaranth channel, which enters as generated Verilog
(two instances of one module). The channels' registers sit behind a wishbone bridge:

    0x000-0x3ff  forward channel (port B -> A), one 32-bit word per register of satemu.regmap
    0x400-0x7ff  return channel (port A -> B)
    0x800-0xbff  both channels: a write reaches both in the same cycle (COMMIT, STATS)

Each channel owns a 64-bit LiteDRAM crossbar port for its delay line. Two LiteEth MACs, used raw
at L2, are the box's ports (hw.ethport): port B's receive side feeds the forward channel, which
sends on port A; port A's receive side feeds the return channel, which sends on port B. The
CPU's UART is the only way in: the ports never reach the CPU or the bus. In simulation the PHYs'
wire is a set of pads that the satemu_eth module (sim/modules) drives and reads at exact cycles.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from migen import Cat, ClockSignal, FSM, If, Instance, Module, NextState, Record, ResetSignal, Signal

from litex.build.generic_platform import Pins, Subsignal
from litex.build.io import CRG
from litex.build.sim import SimPlatform
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore
from litex.soc.interconnect import wishbone

from litedram import modules as litedram_modules
from litedram.phy.model import SDRAMPHYModel

from hw.ethport import EthPort, SimEthClocks, SimEthPHY

SIM_F_CLK = 6_250_000         # nominal clock of the simulated board (registers count these cycles)
SIM_PORT_BPS = 64 * SIM_F_CLK # its 64-bit PHYs carry a beat per cycle: 400 Mbit/s of wire per port
ROM_BYTES = 0x10000           # firmware ROM (the firmware itself is about 10 KB)
MEM_WORDS = 1 << 22           # delay-line words per channel (32 MiB each, the DRAM's upper half)
CHANNEL_WINDOW = 0x400        # bytes of bus space per channel window
CHANNELS = ("forward", "return")
SIM_THREADS = 2               # Verilator threads for the simulated board

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


class ChannelBridge(Module):
    """Wishbone slave in front of the channels' register buses (address, write strobe, data;
    read data one cycle after the address)."""

    def __init__(self, buses):
        self.bus = wishbone.Interface(data_width=32, address_width=30, addressing="word")
        word = self.bus.adr[:8]
        window = self.bus.adr[8:10]
        # A write takes one cycle (acked at once); a read waits one cycle for the registered data.
        self.submodules.fsm = fsm = FSM()
        fsm.act("IDLE",
            If(self.bus.cyc & self.bus.stb,
                If(self.bus.we, self.bus.ack.eq(1)).Else(NextState("READ"))))
        read_data = Signal(32)
        fsm.act("READ",
            self.bus.dat_r.eq(read_data),
            self.bus.ack.eq(1),
            NextState("IDLE"))
        write = self.bus.cyc & self.bus.stb & self.bus.we & fsm.ongoing("IDLE")
        for i, b in enumerate(buses):
            self.comb += [
                b["addr"].eq(word),
                b["w_data"].eq(self.bus.dat_w),
                b["w_en"].eq(write & ((window == i) | (window == 2))),
            ]
        self.comb += read_data.eq(buses[0]["r_data"])
        self.comb += If(window == 1, read_data.eq(buses[1]["r_data"]))


class SatemuSimSoC(SoCCore):
    def __init__(self, channel_verilog: list[Path], mem_words: int,
                 firmware: list[int] | None = None):
        platform = SimPlatform("SIM", _io)
        self.crg = CRG(platform.request("sys_clk"))      # with a power-on reset, as VexRiscv needs
        kwargs = dict(cpu_type="vexriscv", uart_name="sim", integrated_rom_size=ROM_BYTES,
                      integrated_sram_size=0x4000, ident="satemu simulated board",
                      ident_version=True)
        if firmware is not None:
            kwargs["integrated_rom_init"] = firmware
        SoCCore.__init__(self, platform, clk_freq=SIM_F_CLK, **kwargs)

        # Delay-line memory: an SDRAM model whose native port is 64 bits, as the channels'.
        module = litedram_modules.MT48LC16M16(100e6, "1:1")
        self.sdrphy = SDRAMPHYModel(module=module, data_width=64, clk_freq=100e6)
        # On the CPU bus too: the firmware runs sdram_init() from it (its own data stays in SRAM).
        self.add_sdram("sdram", phy=self.sdrphy, module=module, l2_cache_size=0)
        self.add_constant("SDRAM_TEST_DISABLE")   # no memtest at boot: it takes minutes in simulation

        # The shared timebase.
        now = Signal(64)
        self.sync += now.eq(now + 1)

        # The channels' Verilog: modules satemu_channel_fwd and satemu_channel_ret (with BoD).
        for path in channel_verilog:
            platform.add_source(str(path))
        buses = []
        eth = platform.request("satemu_eth")
        self.comb += eth.now.eq(now)
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
        # forward: in on B, out on A; return: in on A, out on B.
        for index, (name, pre, rx, tx) in enumerate(
                (("forward", "fwd", ports["b"], ports["a"]), ("return", "ret", ports["a"], ports["b"]))):
            port = self.sdram.crossbar.get_port(data_width=64)
            bus = {"addr": Signal(8), "w_en": Signal(), "w_data": Signal(32), "r_data": Signal(32)}
            buses.append(bus)
            fate_valid, fate = Signal(), Signal(3)
            self.specials += Instance(f"satemu_channel_{pre}",
                i_clk=ClockSignal(), i_rst=ResetSignal(), i_now=now,
                i_sink__valid=rx.rx_valid, o_sink__ready=rx.rx_ready, i_sink__payload=rx.rx_payload,
                o_source__valid=tx.tx_valid, i_source__ready=tx.tx_ready,
                o_source__payload=tx.tx_payload,
                o_mem__cmd__valid=port.cmd.valid, i_mem__cmd__ready=port.cmd.ready,
                o_mem__cmd__payload=Cat(port.cmd.we, port.cmd.addr),
                o_mem__wdata__valid=port.wdata.valid, i_mem__wdata__ready=port.wdata.ready,
                o_mem__wdata__payload=Cat(port.wdata.data, port.wdata.we),
                i_mem__rdata__valid=port.rdata.valid, o_mem__rdata__ready=port.rdata.ready,
                i_mem__rdata__payload=port.rdata.data,
                i_bus__addr=bus["addr"], i_bus__w_en=bus["w_en"], i_bus__w_data=bus["w_data"],
                o_bus__r_data=bus["r_data"],
                o_fate_valid=fate_valid, o_fate=fate,
                o_arrived=getattr(eth, f"{pre}_arrived"), o_overrun=getattr(eth, f"{pre}_overrun"))
            self.comb += port.cmd.last.eq(1)
            # The cycle a frame starts to leave the channel: its source's valid first rises.
            started = Signal()
            self.comb += getattr(eth, f"{pre}_start").eq(tx.tx_valid & ~started)
            self.sync += If(tx.tx_valid & tx.tx_ready & tx.tx_payload[64], started.eq(0)).Elif(
                tx.tx_valid, started.eq(1))
        self.submodules.channel_bridge = bridge = ChannelBridge(buses)
        self.bus.add_slave("satemu", bridge.bus,
                           SoCRegion(origin=0x9000_0000, size=3 * CHANNEL_WINDOW, cached=False))
        # Where each channel's delay line lives, in 64-bit words of the port.
        self.add_constant("SATEMU_MEM_WORDS", mem_words)
        self.add_constant("SATEMU_F_CLK", SIM_F_CLK)
        self.add_constant("SATEMU_PORT_BPS", SIM_PORT_BPS)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--channel-verilog", required=True, action="append",
                    help="Verilog of satemu_channel_fwd and of satemu_channel_ret")
    ap.add_argument("--output-dir", required=True)
    ap.add_argument("--firmware", help="firmware.bin for the ROM; without it, only software headers")
    args = ap.parse_args()
    gateware = build_sim([Path(p) for p in args.channel_verilog], Path(args.firmware) if args.firmware else None,
                         Path(args.output_dir))
    if args.firmware:
        write_rom_init(Path(args.firmware), gateware)



def build_sim(channel_verilog: list[Path], firmware_bin: Path | None, output_dir: Path,
              uart_port: int = 0, eth_port: int = 0, opt_level: str = "O3") -> Path:
    """Build the simulated board; returns its gateware directory (holding obj_dir/Vsim and the
    sim_config.js that names the UART's TCP port). Without ``firmware_bin`` only the headers and
    libraries the firmware builds against are generated."""
    from litex.build.sim.config import SimConfig
    from litex.soc.integration.builder import Builder
    from litex.soc.integration.common import get_mem_data

    firmware = None
    if firmware_bin is not None:
        firmware = get_mem_data(str(firmware_bin), data_width=32, endianness="little")
        # Pad to the whole ROM, so its size never depends on the firmware and a new firmware only
        # needs a new sim_rom.init (write_rom_init), not a new Verilator build.
        firmware += [0] * (ROM_BYTES // 4 - len(firmware))
    soc = SatemuSimSoC(channel_verilog, mem_words=MEM_WORDS, firmware=firmware)
    builder = Builder(soc, output_dir=str(output_dir), compile_software=firmware_bin is None,
                      compile_gateware=firmware_bin is not None)
    sim_config = SimConfig()
    sim_config.add_clocker("sys_clk", freq_hz=SIM_F_CLK)
    sim_config.add_module("serial2tcp", "serial", args={"port": uart_port})
    sim_config.add_module("satemu_eth", ["satemu_eth", "sys_clk"], args={"port": eth_port})
    modules = Path(__file__).resolve().parent.parent / "sim" / "modules"
    builder.build(sim_config=sim_config, run=False, interactive=False, opt_level=opt_level,
                  extra_mods=["satemu_eth"], extra_mods_path=str(modules), threads=SIM_THREADS)
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
