"""`python -m trnspec fit`: the Trn2 performance model's constant fit: its report, and refits.

    python -m trnspec fit                  # the report (constants, residuals, held out)
    python -m trnspec fit --write          # refit after editing the data file
    python -m trnspec fit --add runs.yaml  # refit with your own rows (`tune --rows-out`)

The fit, the validation and the stored form are trnspec.perf.trn2_fit's; this module reads the
flags and the files and prints. An --add file is read by the one bounded reader
(trnspec.boundary.files: a regular file, finite numbers, unique keys) and every row is typed
here (`rows_problems`: integers that are not booleans, positive finite figures, printable text)
before the fit sees it. Exit 2 when an --add file is refused, every problem one a line; exit 1
when --out cannot be written (the fit is kept elsewhere and the line says where).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from trnspec.boundary.args import path_arg
from trnspec.boundary.files import read_yaml
from trnspec.boundary.numbers import as_number
from trnspec.boundary.problems import InputError, Problem
from trnspec.boundary.user_input import plain
from trnspec.boundary.write import moved_lines, output_clash, write_outputs
from trnspec.perf.published import Measurement
from trnspec.perf.trn2_fit import (
    FIT_FILE,
    fit_to_json,
    refit_with,
    report_markdown,
    trn2_calibration,
    write_shipped_fit,
)

#: Longest text field of a row (a quote is a sentence or a CSV line).
MAX_TEXT = 2000
#: Integer fields of a row that may be 0 (the rest are counts >= 1).
ZERO_ALLOWED = frozenset({"k"})
#: Integer fields of a `shapes:` entry (the rest are text, and tied_embeddings a boolean).
SHAPE_INTS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab")


HELP = "fit the Trn2 model's constants to the published rows (and yours, --add); print the report"
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--write", action="store_true", help=f"refit and write trnspec/{FIT_FILE}")
    p.add_argument(
        "--add",
        action="append",
        default=[],
        metavar="FILE",
        type=path_arg(),
        help="a YAML file of your own rows in the data file's format (e.g. from tune"
        " --rows-out); refit with them and print the report",
    )
    p.add_argument(
        "--out",
        type=path_arg(),
        help="with --add: write the refitted constants to this JSON file",
    )


def _value_problem(name: str, kind: str, value: object) -> str | None:
    """Why value is not a `kind` ("int", "float", "str", "bool"; "X | None" allows null)."""
    optional = kind.endswith("| None")
    kind = kind.removesuffix("| None").strip()
    if value is None:
        return None if optional else "required; give a value"
    if kind == "int":
        lo = 0 if name in ZERO_ALLOWED else 1
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= 10**9:
            return f"must be an integer >= {lo} (not true/false, not a decimal)"
    elif kind == "float":
        number = as_number(value)
        if number is None or number <= 0:
            return "must be a finite number > 0"
    elif kind == "bool":
        if not isinstance(value, bool):
            return "must be true or false"
    elif not isinstance(value, str) or len(value) > MAX_TEXT or not value.isprintable():
        return f"must be printable text of at most {MAX_TEXT} characters"
    return None


def _entries(doc: Mapping[str, Any], key: str, field: str) -> tuple[list[Any], list[Problem]]:
    entries = doc.get(key) or []
    if not isinstance(entries, list):
        return [], [Problem(f"{field}: {key}", entries, "must be a list of mappings")]
    bad = [
        Problem(f"{field}: {key}[{i}]", e, "must be a mapping of fields")
        for i, e in enumerate(entries)
        if not isinstance(e, dict)
    ]
    return entries, bad


def rows_problems(doc: object, field: str) -> list[Problem]:
    """Every way a parsed rows document is not in the data file's format (empty: it is)."""
    if not isinstance(doc, dict):
        return [Problem(field, type(doc).__name__, "must be a mapping with measurements:")]
    types = {f.name: str(f.type) for f in fields(Measurement)}
    rows, problems = _entries(doc, "measurements", field)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        rid = row.get("id")
        where = f"{field}: measurements[{i}]"
        for name, value in row.items():
            if name not in types:
                continue  # unknown fields: the data file's own check names them
            why = _value_problem(name, types[name], value)
            if why is not None:
                problems.append(Problem(f"{where}.{name}", value, why))
        if rid is not None and not isinstance(rid, str):
            problems.append(Problem(f"{where}.id", rid, "must be text"))
    shapes, bad = _entries(doc, "shapes", field)
    problems += bad
    for i, shape in enumerate(shapes):
        if not isinstance(shape, dict):
            continue
        kinds = {**dict.fromkeys(SHAPE_INTS, "int"), "tied_embeddings": "bool"}
        for name in (*SHAPE_INTS, "tied_embeddings", "name", "source"):
            why = _value_problem(name, kinds.get(name, "str"), shape.get(name))
            if why is not None:
                problems.append(Problem(f"{field}: shapes[{i}].{name}", shape.get(name), why))
    return problems


def read_rows_file(path: str, field: str = "--add") -> str:
    """A rows file read by the bounded reader and typed (rows_problems), as the canonical YAML
    text the fit parses; InputError listing every problem."""
    doc = read_yaml(path, field)
    problems = rows_problems(doc, f"{field} {path}")
    if problems:
        raise InputError(problems)
    return yaml.safe_dump(plain(doc), sort_keys=False, allow_unicode=True)


def _refit_with_files(files: Sequence[str], out: str | None) -> int:
    if out and (clash := output_clash([("--out", Path(out))])) is not None:
        raise clash
    extra = [read_rows_file(f) for f in files]
    try:
        stored, cal, digest = refit_with(extra)
    except (ValueError, TypeError) as err:  # the data file's own rules (ids, shapes, quote)
        raise InputError([Problem("--add", " ".join(files), str(err))]) from None
    print(report_markdown(cal), end="")
    if out:
        moved = moved_lines(write_outputs("fit", [(Path(out), fit_to_json(stored, digest))]))
        for line in moved:
            print(f"fit: {line}", file=sys.stderr)
        return 1 if moved else 0
    return 0


def main(args: argparse.Namespace) -> int:
    """`python -m trnspec fit [--write] [--add FILE ...] [--out PATH]`: 0, or 1 when --out could
    not be written (bad input is raised as InputError, which the command table exits 2 on)."""
    if args.add:
        return _refit_with_files(args.add, args.out)
    if args.write:
        print(f"wrote {write_shipped_fit()}", file=sys.stderr)
    print(report_markdown(trn2_calibration()), end="")
    return 0
