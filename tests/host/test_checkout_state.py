# SPDX-License-Identifier: BSD-2-Clause
"""The suite fails when it changes the checkout (tests/conftest.py): ``checkout_state.tree_state``
tells a tracked file's change and a new file from an untouched tree."""

import subprocess

from checkout_state import tree_state


def test_tree_state_sees_changes_and_new_files(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    clean = tree_state(tmp_path)
    assert clean == {"paths": [], "diff": clean["diff"]}
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.bin").write_bytes(b"x")         # ignored: not a change
    assert tree_state(tmp_path) == clean
    (tmp_path / "a.txt").write_text("two\n")
    modified = tree_state(tmp_path)
    assert modified["paths"] == [" M a.txt"] and modified != clean
    (tmp_path / "a.txt").write_text("three\n")                # changed again: the digest moves
    assert tree_state(tmp_path)["diff"] != modified["diff"]
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "crash-1234").write_bytes(b"")
    assert tree_state(tmp_path)["paths"] == ["?? crash-1234"]
    assert tree_state(tmp_path / "build") is not None           # inside the tree
    assert tree_state(tmp_path.parent / "nowhere") is None
