#!/usr/bin/env bash
# Idempotent set-up: Debian packages only where missing, then the locked Python packages in .venv/.
# SPDX-License-Identifier: BSD-2-Clause
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: a C++ toolchain and make for Verilator's generated model, perl for the
# verilator wrapper script, python3 with venv support, clang with its libFuzzer runtime for the
# firmware protocol's fuzz pass, and for the SoC: the RISC-V cross compiler, meson and ninja
# (LiteX builds picolibc with them) and the libraries LiteX's simulation links (libevent,
# json-c, zlib); iproute2 for the real-time QUIC mode's network namespaces; openfpgaloader
# (openFPGALoader) for `satemu flash`, which programs a board over JTAG; tshark (Wireshark's
# command line) for the tests that read the captures back.
need=()
for pkg in g++ make perl python3 python3-venv git clang libclang-rt-14-dev \
           gcc-riscv64-unknown-elf meson ninja-build libevent-dev libjson-c-dev zlib1g-dev \
           iproute2 openfpgaloader tshark; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
# A python3 that is not Debian's (pyenv, say) counts if it can make a venv with pip.
drop() {   # remove the exact name $1 from need
    need=($(printf '%s\n' "${need[@]:-}" | grep -vx -e "$1" -e '' || true))
}
if python3 -c 'import venv, ensurepip' 2>/dev/null; then drop python3-venv; fi
if command -v python3 >/dev/null; then drop python3; fi
apt_install() {
    echo "bootstrap: installing Debian packages: $*"
    local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}
if [ ${#need[@]} -gt 0 ]; then
    apt_install "${need[@]}"
fi
# Chromium, without what it recommends (a desktop's services), for the lab console's page
# tests: Playwright drives Debian's browser and downloads none of its own.
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
    apt_install --no-install-recommends chromium
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade "pip>=24"
# The package and its development tools, every release exactly as requirements.lock pins it.
.venv/bin/python -m pip install -q -c requirements.lock -e ".[dev]"
# The checkout's simulated board (sim/, which registers the host tool's ``board`` engine) and
# its SoC and build flows (hw/), each a distribution of its own, editable.
.venv/bin/python -m pip install -q --no-deps -e sim -e hw
# cocotb embeds Python in the simulator: it needs a shared libpython (Debian: libpython3-dev).
if ! .venv/bin/cocotb-config --libpython >/dev/null 2>&1; then
    apt_install libpython3-dev
fi
echo "bootstrap: ready ($(.venv/bin/python -c 'import amaranth, cocotb; print("amaranth", amaranth.__version__, "cocotb", cocotb.__version__)'))"
