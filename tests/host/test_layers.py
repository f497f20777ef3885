# SPDX-License-Identifier: BSD-2-Clause
"""The host package's layers: every import (lazy ones too) goes to the module's own layer or one
below it, the modules import no circle, nothing in the package puts a path on ``sys.path``, and
the gateware and the SoC builds import only the foundation (``satemu.base``), so that a bitstream's
key moves with the foundation alone."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "host" / "satemu"
# Lowest first: a module may import from its own layer and those before it.
LAYERS = ("base", "model", "link", "box", "quic", "report", "sweep", "api", "serve", "cli")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The satemu modules ``name`` imports anywhere in its body."""
    out = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[:len(up) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in MODULES and t != name}
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> int:
    parts = name.split(".")
    if len(parts) == 1:
        return -1                   # satemu itself: __version__, below everything
    assert parts[1] in LAYERS, f"{name}: not in a layer; the layers are {', '.join(LAYERS)}"
    return LAYERS.index(parts[1])


def test_every_module_is_in_a_layer():
    for name in MODULES:
        _layer(name)


def test_no_module_imports_upwards():
    upward = sorted(f"{name} imports {dep}" for name, deps in GRAPH.items() for dep in deps
                    if _layer(dep) > _layer(name) and not dep.startswith(name + "."))
    assert not upward


def test_the_imports_make_no_circle():
    """Depth-first search over every import, lazy ones too; a package's own ``__init__``
    importing its submodules is not a circle back from them unless they import it."""
    state, circles = {}, []

    def visit(name, trail):
        state[name] = "open"
        for dep in sorted(GRAPH[name]):
            if state.get(dep) == "open":
                circles.append(" -> ".join(trail[trail.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, trail + [dep])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert not circles


def test_the_package_puts_nothing_on_sys_path():
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and \
                    isinstance(node.value, ast.Name) and node.value.id == "sys":
                pytest.fail(f"{name} uses sys.path")


@pytest.mark.parametrize("board", ["versa-ecp5", "colorlight-5a-75b"])
def test_the_gateware_imports_only_the_foundation(board):
    from hw import bitstream
    from hw.pipeline import imported_files
    flow = bitstream.ALL_BOARDS[board].bitstream
    host = {p.relative_to(PACKAGE).as_posix() for p in imported_files(
        [flow.target, "hw.bitstream", "hw.pipeline", "sim.build"]) if PACKAGE in p.parents}
    assert host and all(p == "__init__.py" or p.startswith("base/") for p in host), sorted(host)
