"""The client tools' packages form layers: each imports only the packages below it (no cycle, no
two-way edge): what the tools accept from outside (`boundary`), the A/B measurement's pure core
(`ab`: order, spread, median round, comparison and verdict), how they talk to an endpoint
(`client`), the local engine, the benchmark, the tuner, the calibration, then the commands at
the top (`smoke.py`, `demo.py`, `capacity.py`, `cli.py`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "trnspec_tools"
#: Bottom to top; "" is the package's own top-level modules (the commands).
LAYERS = ("boundary", "ab", "client", "local_engine", "bench", "tune", "calibration", "")


def imported_layers(path: Path) -> set[str]:
    """The trnspec_tools layers `path` imports (lazy imports count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "trnspec_tools" and len(parts) > 1:
                found.add(parts[1] if parts[1] in LAYERS else "")
    return found


def test_every_package_is_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS) - {""}


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_a_module_imports_only_its_layer_and_the_ones_below(path: Path) -> None:
    here = path.relative_to(PACKAGE).parts
    mine = here[0] if len(here) > 1 and here[0] in LAYERS else ""
    allowed = set(LAYERS[: LAYERS.index(mine) + 1])
    upward = sorted(imported_layers(path) - allowed)
    assert not upward, f"{path.relative_to(ROOT)} imports the layers above it: {upward}"
