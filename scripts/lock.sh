#!/usr/bin/env bash
# Writes requirements.lock: the releases pyproject.toml's ranges resolve to today, in a fresh
# virtual environment, every installed package pinned (`make lock`). CI and `make` install
# exactly these (scripts/bootstrap.sh).
# SPDX-License-Identifier: BSD-2-Clause
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/lock-venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade "pip>=24"
"$venv/bin/python" -m pip install -q ".[dev]"
{
    echo "# The exact releases CI and make install: pip's constraints for pyproject.toml's ranges."
    echo "# Written by scripts/lock.sh (make lock); edit pyproject.toml, not this file."
    "$venv/bin/python" -m pip freeze --exclude satemu
} > requirements.lock
rm -rf "$venv"
echo "wrote requirements.lock ($(grep -vc '^#' requirements.lock) packages)"
