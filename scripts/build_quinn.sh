#!/usr/bin/env bash
# Idempotent build of satemu_quinn (host/quinn/: quinn-proto for the virtual-time co-simulation)
# into .venv/: a wheel per content key in build/quinn/<key>/, installed once per key.
# Needs cargo and rustc >= 1.85 (on Debian, without one: the packages rustc-web cargo-web).
# SPDX-License-Identifier: BSD-2-Clause
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CRATE=host/quinn
MIN_RUST=1.85

# The content key: every file that goes into the wheel, by name and content.
key=$( (cd "$CRATE" && find Cargo.toml Cargo.lock pyproject.toml .cargo src -type f | LC_ALL=C sort |
        while read -r f; do printf '%s\0' "$f"; cat "$f"; done) | sha256sum | cut -c1-16)
out=build/quinn/$key
marker=.venv/.satemu-quinn-$key

if [ ! -x .venv/bin/python ]; then
    echo "build_quinn: .venv/ is missing: run make bootstrap (scripts/bootstrap.sh) first" >&2
    exit 1
fi
if [ -f "$marker" ] && .venv/bin/python -c 'import satemu_quinn' 2>/dev/null; then
    exit 0                                  # built and installed from this very content
fi

# ---- a Rust toolchain of at least $MIN_RUST -------------------------------------------------
version_ok() {   # $1: a "cargo X.Y.Z ..." or "rustc X.Y.Z ..." line
    local v; v=$(echo "$1" | awk '{print $2}')
    [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$MIN_RUST" "$v" | sort -V | head -n1)" = "$MIN_RUST" ]
}
toolchain_ok() {   # $1: cargo, $2: rustc
    [ -x "$(command -v "$1" 2>/dev/null)" ] && [ -x "$(command -v "$2" 2>/dev/null)" ] &&
        version_ok "$("$1" --version 2>/dev/null)" && version_ok "$("$2" --version 2>/dev/null)"
}
find_toolchain() {   # sets cargo and rustc; on Debian installs rustc-web/cargo-web if need be
    cargo=""; rustc=""
    local dir pkg need=()
    for dir in "" "$HOME/.cargo/bin/" /usr/bin/; do
        if toolchain_ok "${dir}cargo" "${dir}rustc"; then
            cargo=$(command -v "${dir}cargo"); rustc=$(command -v "${dir}rustc"); return
        fi
    done
    if command -v dpkg-query >/dev/null && command -v apt-get >/dev/null; then
        # Debian 12's own rustc/cargo are 1.63; rustc-web/cargo-web are newer and install as
        # /usr/bin/rustc and /usr/bin/cargo.
        for pkg in rustc-web cargo-web; do
            dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
                need+=("$pkg")
        done
        if [ ${#need[@]} -gt 0 ]; then
            echo "build_quinn: installing Debian packages: ${need[*]}"
            local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
            $sudo apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
        fi
        if toolchain_ok /usr/bin/cargo /usr/bin/rustc; then
            cargo=/usr/bin/cargo; rustc=/usr/bin/rustc; return
        fi
    fi
    echo "build_quinn: satemu_quinn needs cargo and rustc >= $MIN_RUST (Debian: apt-get install rustc-web cargo-web)" >&2
    exit 1
}

# ---- the wheel --------------------------------------------------------------------------------
wheel() { ls "$out"/satemu_quinn-*.whl 2>/dev/null | head -n1; }
if [ -z "$(wheel)" ]; then
    if [ ! -x .venv/bin/maturin ]; then
        echo "build_quinn: maturin is missing from .venv/ (requirements.lock pins it): run make bootstrap" >&2
        exit 1
    fi
    find_toolchain
    echo "build_quinn: building satemu_quinn ($key) with $("$cargo" --version | awk '{print $1, $2}')"
    mkdir -p "$out"
    log=$ROOT/build/quinn/$key.log
    # Cargo reads host/quinn/.cargo/config.toml (getrandom's custom backend) from the crate's
    # directory; CARGO_TARGET_DIR keeps everything built out of the source tree.
    if ! (cd "$CRATE" &&
          PATH="$(dirname "$cargo"):$PATH" RUSTC="$rustc" CARGO_TARGET_DIR="$ROOT/build/quinn/target" \
          "$ROOT/.venv/bin/maturin" build --release --locked -j 2 -o "$ROOT/$out" -m Cargo.toml \
          >"$log" 2>&1); then
        tail -n 40 "$log" >&2
        echo "build_quinn: the build failed; the whole log is $log" >&2
        rm -rf "$out"
        exit 1
    fi
    # the wheels and logs of other contents go (cargo's build/quinn/target/ stays, incremental)
    for other in build/quinn/*; do
        case "$(basename "$other")" in
            "$key"|"$key.log"|target) ;;
            *) rm -rf "$other" ;;
        esac
    done
fi
whl=$(wheel)
if [ -z "$whl" ]; then
    echo "build_quinn: maturin left no wheel in $out" >&2
    exit 1
fi
.venv/bin/python -m pip install -q --no-deps --force-reinstall "$whl"
rm -f .venv/.satemu-quinn-*
touch "$marker"
