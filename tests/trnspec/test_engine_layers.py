"""The trnspec packages form layers: each imports only the packages below it (no cycle, no two-way
edge), so a reader can take them in one pass from `boundary` up to `cli`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "image" / "trnspec"
#: Bottom to top: a package may import itself and the ones before it.
LAYERS = (
    "boundary",
    "config",
    "hardware",
    "checks",
    "engine",
    "staging",
    "perf",  # the Trn2 step model, its data and fit
    "plan",  # its uses (predict, the deployment planner): above the model, never inside it
    "serve",
    "cli",
)


def imported_packages(path: Path) -> set[str]:
    """The trnspec subpackages a module imports (at any depth: lazy imports count too), and
    `infra` or `trnspec_tools` when it imports either."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "trnspec" and len(parts) > 1:
                found.add(parts[1])
            elif parts[0] in ("infra", "trnspec_tools"):
                found.add(parts[0])
    return found


def test_every_package_is_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_package_imports_only_the_layers_below_it(layer):
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    upward = {
        f"{path.relative_to(PACKAGE)} -> trnspec.{imported}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for imported in imported_packages(path)
        if imported in LAYERS and imported not in allowed
    }
    assert not upward


def test_the_engine_imports_neither_the_cdk_app_nor_the_tools() -> None:
    """The image installs trnspec alone: importing infra or trnspec_tools would fail in the pod."""
    outside = {
        f"{path.relative_to(PACKAGE)} -> {imported}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for imported in imported_packages(path)
        if imported in ("infra", "trnspec_tools")
    }
    assert not outside
