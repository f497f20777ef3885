# SPDX-License-Identifier: BSD-2-Clause
"""What git sees of a checkout, so that the suite can fail when it changed it (tests/conftest.py)."""

import hashlib
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tree_state(root: Path = ROOT) -> dict | None:
    """What git sees of the checkout at ``root``: the paths it lists as changed or new, and a
    digest of every tracked file's difference from HEAD (None outside a git work tree)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              timeout=120).stdout
    if git("rev-parse", "--is-inside-work-tree").strip() != b"true":
        return None
    status = git("status", "--porcelain=v1", "-z").split(b"\0")
    return {"paths": sorted(p.decode(errors="replace") for p in status if p),
            "diff": hashlib.sha256(git("diff", "HEAD", "--binary")).hexdigest()}

