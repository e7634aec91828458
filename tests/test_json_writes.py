"""Every JSON the product writes goes through trnspec.boundary.json_io (issue 50: JSON output never
carries NaN or Infinity): a walk of the product code (image/trnspec, trnspec_tools, infra, app.py)
that fails on any other way to write JSON.

Python's `json.dumps` writes `NaN`, `Infinity` and `-Infinity`, which are not JSON: a strict
reader (a browser, jq, Go, the AWS IAM API) refuses the document, and a lenient one reads a figure
that passes every comparison. json_io has the two writers: `dumps` for a document (a non-finite
float written as null) and `strict` for text that is hashed or sent (a non-finite float refused).

Refused outside image/trnspec/boundary/json_io.py, found in the syntax tree: any reference to
`json.dumps`, `json.dump` or `json.JSONEncoder` (a call, or the function passed on as a value:
`partial(json.dumps, ...)`, `default=json.dumps`), also through the file's imports (`import json as
j; j.dumps`, `from json import dumps as d`, `from json import encoder; encoder.JSONEncoder`).

`ALLOWED` lists the exceptions by (path, function), each with its reason; an entry that no longer
matches anything fails too, so the list cannot go stale.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from code_walk import (
    PRODUCT,
    ROOT,
    Violation,
    dotted,
    imports,
    not_allowed,
    product_files,
    stale_entries,
)

#: The one module that may call json.dumps.
WRITER = "image/trnspec/boundary/json_io.py"
#: Modules whose dumps/dump write NaN as a bare `NaN` (json, and the drop-in replacements).
_JSON_MODULES = {"json", "simplejson", "ujson"}
_WRITERS = {"dumps", "dump", "JSONEncoder"}


def _is_raw_write(node: ast.expr, imported: dict[str, str]) -> bool:
    if not isinstance(node, ast.Name | ast.Attribute):
        return False
    if isinstance(node, ast.Name) and node.id not in imported:
        return False  # a local `dumps` of the module's own is not json's
    name = dotted(node, imported)
    if name is None:
        return False
    parts = name.split(".")
    return len(parts) > 1 and parts[0] in _JSON_MODULES and parts[-1] in _WRITERS


def _skip(rel: str) -> bool:
    return rel == WRITER


def _references(tree: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """Every Name and Attribute with the qualified name of the function it is in ("<module>" at
    the top), outermost first (an attribute chain before its parts)."""

    def walk(node: ast.AST, where: str) -> Iterator[tuple[str, ast.expr]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = child.name if where == "<module>" else f"{where}.{child.name}"
                yield from walk(child, inner)
                continue
            if isinstance(child, ast.Name | ast.Attribute):
                yield where, child
            yield from walk(child, where)

    yield from walk(tree, "<module>")


def scan(path: Path, rel: str) -> list[Violation]:
    text = path.read_text(encoding="utf-8")
    if "json" not in text:  # every module of _JSON_MODULES is imported by a name holding it
        return []
    tree = ast.parse(text, filename=rel)
    imported = imports(tree)
    return [
        Violation(rel, where, "raw-json-write", node.lineno, ast.unparse(node))
        for where, node in _references(tree)
        if _is_raw_write(node, imported)
    ]


@cache
def raw_writes() -> list[Violation]:
    return sorted(w for path, rel in product_files(_skip) for w in scan(path, rel))


#: (path, function) -> why it may stay. Each is in a file another helper owns this round (issue
#: 50): listed so that a new raw write fails the test, not to bless these; each is to move to
#: json_io (the stale-entry test then asks for the entry's removal).
ALLOWED: dict[tuple[str, str], str] = {
    ("image/trnspec/perf/trn2_fit.py", "fit_to_json"): (
        "the stored fit (trn2_fit.json), a document: to move to json_io.dumps (owner: perf fit)"
    ),
    ("trnspec_tools/bench/versus_vllm_bench.py", "build_word_tokenizer"): (
        "a constant tokenizer_config.json (two strings) in a temporary directory: to move to"
        " json_io.dumps (owner: bench)"
    ),
    ("trnspec_tools/bench/versus_vllm_bench.py", "ReferenceRunner.run"): (
        "an argv (strings) sent to the reference runner's stdin: to move to json_io.strict"
        " (owner: bench)"
    ),
    ("trnspec_tools/bench/versus_vllm_bench.py", "compare_tools"): (
        "the prompts (strings) as a ShareGPT dataset in a temporary directory: to move to"
        " json_io.dumps (owner: bench)"
    ),
}


def _key(w: Violation) -> tuple[str, str]:
    return (w.path, w.function)


def test_no_product_module_writes_json_around_json_io() -> None:
    new = not_allowed(raw_writes(), ALLOWED, _key)
    assert not new, (
        "write JSON with trnspec.boundary.json_io: dumps (a document: non-finite -> null) or"
        " strict (hashed or sent: non-finite refused); or add a commented ALLOWED entry:\n"
        + "\n".join(new)
    )


def test_every_allowed_entry_still_matches_something() -> None:
    stale = stale_entries(raw_writes(), ALLOWED, _key)
    assert not stale, f"remove these ALLOWED entries, the code no longer has them: {stale}"


def test_the_walk_covers_every_part_of_the_product() -> None:
    """A typo in PRODUCT would make the rule pass on nothing."""
    scanned = {rel for _, rel in product_files(_skip)}
    assert "app.py" in scanned
    for top in PRODUCT[:-1]:
        assert sum(rel.startswith(f"{top}/") for rel in scanned) >= 20, top
    assert WRITER not in scanned
    assert (ROOT / WRITER).is_file()


PLANTED = """
import json
import json as j
from functools import partial
from json import dump as save, dumps
from json import encoder
from trnspec.boundary import json_io
from trnspec.boundary.json_io import dumps as io_dumps


def plain(value):
    return json.dumps(value)


def to_file(value, fh):
    json.dump(value, fh)


class Report:
    def aliased(self, value, fh):
        save(value, fh)
        return j.dumps(value) + dumps(value)


def passed_on(value):
    writer = partial(json.dumps, indent=2)
    return writer(value), json.JSONEncoder().encode(value), encoder.JSONEncoder


def through_json_io(value):
    text = json_io.dumps(value) + json_io.strict(value) + io_dumps(value)
    return json.loads(text), text.dumps()
"""


def test_the_walk_finds_each_way_of_writing_json(tmp_path: Path) -> None:
    module = tmp_path / "planted.py"
    module.write_text(PLANTED, encoding="utf-8")
    found = [(w.function, w.code) for w in scan(module, "planted.py")]
    assert sorted(found) == sorted(
        [
            ("plain", "json.dumps"),
            ("to_file", "json.dump"),
            ("Report.aliased", "save"),
            ("Report.aliased", "j.dumps"),
            ("Report.aliased", "dumps"),
            ("passed_on", "json.dumps"),
            ("passed_on", "json.JSONEncoder"),
            ("passed_on", "encoder.JSONEncoder"),
        ]
    )
