# SPDX-License-Identifier: BSD-2-Clause
"""Shared pytest set-up: the repository root is importable (for ``sim``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
