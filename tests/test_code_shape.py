"""The product code stays readable by construction: no function longer than a screen and a half,
no import cycle between its modules (what runs at import time, so a cycle would be a
half-initialised module at run time, not a style matter), no reference to the project's issue
tracker, which a reader of the code does not have (a comment says the reason itself), and no
reference to a document the repository does not hold, or to a module or name it no longer has
(a dotted `trnspec.perf.step_time.tokens_per_step` in a docstring, comment or doc).

Product code is the three packages: infra (the CDK app), image/trnspec (the serving package) and
trnspec_tools (the client tools); tests and scripts are not held to it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Each package's directory, keyed by its import name.
PACKAGES = {
    "infra": ROOT / "infra",
    "trnspec": ROOT / "image" / "trnspec",
    "trnspec_tools": ROOT / "trnspec_tools",
}
#: The longest function allowed: a screen and a half.
MAX_FUNCTION_LINES = 80
#: A citation of the tracker: "issue 14", "issues 12 and 24", "issue #3".
ISSUE_CITATION = re.compile(r"\bissues? #?\d", re.IGNORECASE)
#: A document of this repository cited by its path from the root: docs/platform.md, README.md
#: (its docs folder is flat; `docs/deploy/installation.md` or `.../en/docs/x.md` is another
#: project's, cited with its repository).
#: A dotted reference into the product: `trnspec.plan.predict`, `infra.contracts.LNC_NODE_LABEL`
#: (not a label domain such as `trnspec.io/lnc`, nor a file name such as `trnspec_tools.py`).
DOTTED_REFERENCE = re.compile(r"(?<![\w./-])((?:infra|trnspec|trnspec_tools)(?:\.\w+)+)(?![\w/])")
#: What follows a module's dotted name when it is a file's, not a name in it.
FILE_SUFFIXES = frozenset({"py", "md", "yaml", "json"})
DOCUMENT_CITATION = re.compile(r"(?<![\w/.-])(?:docs/[\w-]+\.md|README\.md)\b")


def modules() -> dict[str, Path]:
    """Every product module by its dotted name (a package by its __init__.py)."""
    found: dict[str, Path] = {}
    for name, directory in PACKAGES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = [name, *path.relative_to(directory).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _runs_at_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module body that run when it is imported: branches of `if` and `try`
    included, `if TYPE_CHECKING:` and `if __name__ == "__main__":` left out."""
    for node in body:
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "TYPE_CHECKING" in test or "__main__" in test:
                continue
            yield from _runs_at_import(node.body)
            yield from _runs_at_import(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _runs_at_import(block)
            for handler in node.handlers:
                yield from _runs_at_import(handler.body)
        else:
            yield node


def imported_at_import_time(source: str, known: Mapping[str, Path]) -> set[str]:
    """The product modules a module imports when it is itself imported (absolute imports; a
    `from package import name` counts `package.name` when that is a module)."""
    names: set[str] = set()
    for node in _runs_at_import(ast.parse(source).body):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name in known}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Each cycle a depth-first walk meets, as the modules along it (first repeated last)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    found: list[list[str]] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return found


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """(name, lines) of every function or method longer than `limit` lines, decorators aside."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_no_product_module_imports_itself_back_at_import_time() -> None:
    known = modules()
    graph = {name: imported_at_import_time(path.read_text(), known) for name, path in known.items()}
    assert sum(len(v) for v in graph.values()) > len(known), "the import graph came out empty"
    assert cycles(graph) == []


def test_no_product_function_is_longer_than_80_lines() -> None:
    too_long = {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in modules().values()
        for name, lines in long_functions(path.read_text(), MAX_FUNCTION_LINES)
    }
    assert too_long == {}


def test_an_import_inside_a_main_guard_or_type_checking_block_is_not_a_cycle() -> None:
    known = {"pkg.a": Path("a.py"), "pkg.b": Path("b.py")}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import b\n"
        "if __name__ == '__main__':\n    import pkg.b\n"
    )
    assert imported_at_import_time(source, known) == set()
    assert imported_at_import_time(
        "try:\n    from pkg import b\nexcept ImportError:\n    pass\n", known
    ) == {"pkg.b"}


def test_a_cycle_through_three_modules_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_a_function_of_81_lines_is_too_long_and_one_of_80_is_not() -> None:
    def function(lines: int) -> str:
        return "def f():\n" + "    x = 1\n" * (lines - 1)

    assert long_functions(function(81), 80) == [("f", 81)]
    assert long_functions(function(80), 80) == []


def issue_citations(source: str) -> list[int]:
    """The lines (1-based) of `source` that cite an issue by number."""
    return [n for n, line in enumerate(source.splitlines(), 1) if ISSUE_CITATION.search(line)]


def test_no_product_module_cites_an_issue_by_number() -> None:
    cited = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in modules().values()
        for line in issue_citations(path.read_text())
    }
    assert cited == set()


def test_an_issue_number_is_a_citation_and_an_issue_in_prose_is_not() -> None:
    source = "# biased against it (issue 14)\n# Issues #3\nx = 1  # an issue of 2 bytes\n"
    assert issue_citations(source) == [1, 2]


def cited_documents(source: str) -> set[str]:
    """The repository documents `source` cites by path."""
    return set(DOCUMENT_CITATION.findall(source))


def test_every_document_a_product_module_cites_exists() -> None:
    cited = {doc for path in modules().values() for doc in cited_documents(path.read_text())}
    assert "docs/platform.md" in cited, "the citation pattern found nothing"
    assert {doc for doc in cited if not (ROOT / doc).is_file()} == set()


def test_a_document_is_cited_by_its_path_from_the_root() -> None:
    source = (
        '"""The rule (docs/configuration.md, "Values"); see README.md; not docs/deploy/x.md'
        ' of another repository, nor website/content/en/docs/y.md or charts/z/README.md."""'
    )
    assert cited_documents(source) == {"docs/configuration.md", "README.md"}


def top_level_names(source: str) -> set[str]:
    """What a module defines or imports at its top level."""
    found: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
    return found


def unresolved_references(text: str, known: Mapping[str, str]) -> set[str]:
    """The dotted references in `text` that name no module of `known` (name -> source), nor a
    top-level name of the longest module they start with."""
    missing: set[str] = set()
    for match in DOTTED_REFERENCE.finditer(text):
        parts = match.group(1).split(".")
        depth = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in known), 0)
        if depth == len(parts) or (depth and parts[depth] in FILE_SUFFIXES):
            continue
        module = ".".join(parts[:depth])
        if not depth or parts[depth] not in top_level_names(known[module]):
            missing.add(match.group(1))
    return missing


def test_every_dotted_reference_in_the_code_and_the_docs_resolves() -> None:
    known = {name: path.read_text() for name, path in modules().items()}
    texts = [*known.values(), *(p.read_text() for p in (ROOT / "docs").glob("*.md"))]
    texts.append((ROOT / "README.md").read_text())
    assert {r for text in texts for r in unresolved_references(text, known)} == set()


def test_a_moved_module_or_a_renamed_name_is_unresolved() -> None:
    known = {
        "trnspec": "",
        "trnspec.perf": "",
        "trnspec.perf.step_time": "def tokens_per_step(): ...",
    }
    text = (
        "trnspec.perf.step_time.tokens_per_step, trnspec.perf.step_time.py and the label"
        " trnspec.io/lnc resolve; trnspec.perf.model and trnspec.perf.step_time.alpha do not"
    )
    assert unresolved_references(text, known) == {
        "trnspec.perf.model",
        "trnspec.perf.step_time.alpha",
    }
