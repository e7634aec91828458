"""What the code-rule tests share (test_boundary_rules, test_shell_commands, test_json_writes): the
product files they walk, a file's imports, dotted names through them, one Violation, and the
allow-list checks (a new violation fails; an entry that matches nothing fails too, so the list
cannot go stale)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The product: directories walked for *.py, and single files.
PRODUCT = ("image/trnspec", "trnspec_tools", "infra", "app.py")


@dataclass(frozen=True, order=True)
class Violation:
    path: str
    function: str
    rule: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.function}) {self.rule}: {self.code}"


def product_files(skip: Callable[[str], bool] = lambda _rel: False) -> list[tuple[Path, str]]:
    """(path, repository-relative posix path) of every product module but those `skip` names."""
    files: list[Path] = []
    for top in PRODUCT:
        path = ROOT / top
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    out = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if "/node_modules/" not in rel and not skip(rel):
            out.append((path, rel))
    return out


def imports(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it imports: `import json as j` gives {"j": "json"}, `import
    urllib.request` gives {"urllib": "urllib"}, `from json import dumps as d` gives
    {"d": "json.dumps"}."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                out[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def dotted(node: ast.expr, imported: Mapping[str, str]) -> str | None:
    """The dotted name a Name or an attribute chain on a Name resolves to through the imports
    (`j.dumps` -> "json.dumps", `urllib.request.urlopen` as written), or None otherwise."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(imported.get(node.id, node.id))
    return ".".join(reversed(parts))


def not_allowed(
    found: Iterable[Violation],
    allowed: Mapping[tuple[str, ...], str],
    key: Callable[[Violation], tuple[str, ...]],
) -> list[str]:
    """Each violation whose key the allow-list does not hold, as a line."""
    return [str(v) for v in found if key(v) not in allowed]


def stale_entries(
    found: Iterable[Violation],
    allowed: Mapping[tuple[str, ...], str],
    key: Callable[[Violation], tuple[str, ...]],
) -> list[tuple[str, ...]]:
    """The allow-list's keys that no violation has any longer."""
    return sorted(set(allowed) - {key(v) for v in found})
