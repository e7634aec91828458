"""The infra packages form layers: each imports only the packages below it (no cycle, no two-way
edge), so the tree reads in one pass: the contracts, the settings and the compliance wiring, then
the platform (its cluster before its add-ons before its stack), the serving stack (its pure
manifest builders first), and the app that composes both."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "infra"
#: Bottom to top; "" is infra's own top-level modules (contracts.py, outputs.py: names only).
LAYERS = ("", "settings", "compliance", "platform", "serving", "app")
#: Within a layer, the subpackages in the same order.
SUBLAYERS = {
    "platform": ("cluster", "addons", ""),
    "serving": ("bundle", "manifests", ""),
}


def imports_of(path: Path) -> set[str]:
    """Every module name `path` imports, lazy imports included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def layer_of(parts: list[str], layers: tuple[str, ...]) -> str:
    return parts[0] if parts and parts[0] in layers else ""


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_package_is_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS) - {""}


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_its_layer_and_the_ones_below(path: Path) -> None:
    here = list(path.relative_to(PACKAGE).parent.parts)
    mine = layer_of(here, LAYERS)
    upward = []
    for name in sorted(imports_of(path)):
        parts = name.split(".")
        if parts[0] == "trnspec_tools":
            upward.append(f"{name} (the client tools sit above infra)")
        if parts[0] != "infra" or len(parts) < 2:
            continue
        target = layer_of(parts[1:], LAYERS)
        if LAYERS.index(target) > LAYERS.index(mine):
            upward.append(name)
        elif target == mine and mine in SUBLAYERS:
            order = SUBLAYERS[mine]
            sub_here = layer_of(here[1:], order)
            sub_target = layer_of(parts[2:-1] if len(parts) > 3 else parts[2:3], order)
            if order.index(sub_target) > order.index(sub_here):
                upward.append(name)
    assert not upward, f"{path.relative_to(ROOT)} imports upward: {upward}"
