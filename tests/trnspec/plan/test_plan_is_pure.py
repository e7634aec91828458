"""trnspec.plan keeps the decisions and reads nothing from outside: every reader of a file, S3,
HTTP or Prometheus lives in trnspec.plan.readers, which no decision module imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLAN = Path(__file__).resolve().parents[3] / "image" / "trnspec" / "plan"
#: Modules and names that read from outside (the bounded readers and the clients behind them).
READERS = (
    "trnspec.boundary.http_read",
    "httpx",
    "boto3",
    "botocore",
    "urllib.request",
    "trnspec.plan.readers",
    "trnspec.staging",
)
READ_CALLS = {"read_text_file", "read_json", "read_yaml", "read_text", "read_bytes", "open"}


def _reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            found += [f"imports {a.name}" for a in node.names if a.name in READ_CALLS]
        found += [f"imports {n}" for n in names if n.startswith(READERS)]
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            )
            if name in READ_CALLS:
                found.append(f"calls {name}() at line {node.lineno}")
    return found


@pytest.mark.parametrize("path", sorted(PLAN.glob("*.py")), ids=lambda p: p.name)
def test_a_plan_module_reads_nothing_from_outside(path: Path) -> None:
    assert _reads(path) == []


def test_the_readers_are_found_where_they_are() -> None:
    """The walk finds what it looks for (else the test above could not fail)."""
    assert any("http_read" in r for r in _reads(PLAN / "readers" / "fetch.py"))
    assert any("read_text_file" in r for r in _reads(PLAN / "readers" / "evidence.py"))
