"""The one bounded reader of input files: JSON, YAML, JSONL, plan files, rows, tune reports.

Every file a command reads by path goes through `read_bytes` (or a parser on top of it):
- regular files only: a FIFO, a device (`/dev/zero`) or a directory is refused before a byte is
  read (the file is opened non-blocking, then inspected), so a read never hangs or fills memory;
- bounded: at most `max_bytes` (MAX_FILE_BYTES unless the caller knows better);
- UTF-8 text; JSON and YAML nested at most MAX_DEPTH levels, numbers finite (NaN, Infinity,
  `.nan`, `.inf`, 1e999 refused), object keys unique; YAML under the YAML 1.2 core schema of
  trnspec.boundary.user_input (only true/false are booleans, an alias budget).
Every refusal is a BoundaryError naming the flag (`field`) and the path: exit 2, one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.json_io import MAX_DEPTH, loads
from trnspec.boundary.user_input import MAX_INPUT_BYTES, InputReadError, load_yaml, read_regular

#: Largest input file read (a tune report, a rows file or a plan is well under 1 MiB).
MAX_FILE_BYTES = 16 * 1024 * 1024


def read_bytes(path: str | Path, field: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most max_bytes (user_input.read_regular); BoundaryError
    naming the field and the path otherwise."""
    try:
        return read_regular(path, max_bytes)
    except InputReadError as err:
        raise BoundaryError(field, str(path), err.reason) from None
    except OSError as exc:
        raise BoundaryError(field, str(path), f"cannot read it ({exc.strerror or exc})") from None


def read_text(path: str | Path, field: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A regular file's UTF-8 text (read_bytes' bounds)."""
    data = read_bytes(path, field, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BoundaryError(
            field, str(path), f"not UTF-8 (byte {data[err.start]:#04x} at offset {err.start})"
        ) from None


def read_json(path: str | Path, field: str, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """One JSON document from a regular file (bounded, finite, unique keys)."""
    return loads(read_bytes(path, field, max_bytes), field, shown=str(path), max_bytes=max_bytes)


def nesting(value: Any) -> int:
    """How deep lists and mappings nest in a parsed value (a scalar is 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list) and id(item) not in seen:
            seen.add(id(item))  # a YAML alias shares one object: count it once
            level += 1
            deepest = max(deepest, level)
            stack.extend((v, level) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_yaml(text: str, field: str, shown: str) -> Any:
    """One YAML document under the core schema (finite, unique keys, aliases bounded), nested at
    most MAX_DEPTH levels; BoundaryError naming field and shown."""
    try:
        value = load_yaml(text)
    except InputReadError as err:
        raise BoundaryError(field, shown, err.reason) from None
    if nesting(value) > MAX_DEPTH:
        raise BoundaryError(field, shown, f"nested deeper than {MAX_DEPTH} levels")
    return value


def read_yaml(path: str | Path, field: str, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """One YAML document from a regular file (read_text's bounds, parse_yaml's rules)."""
    return parse_yaml(read_text(path, field, max_bytes), field, str(path))


def read_json_lines(
    path: str | Path,
    field: str,
    max_bytes: int = MAX_FILE_BYTES,
    *,
    max_depth: int = MAX_DEPTH,
    max_lines: int | None = None,
) -> list[tuple[int, Any]]:
    """Every non-blank line of a JSONL file as (its line number, its JSON value). Lines end at
    '\\n' only, as JSON Lines says (a '\\r' before it is JSON whitespace): a U+2028, U+2029 or
    NEL (U+0085), which JSON allows raw inside a string, is text there, where `str.splitlines()`
    would cut a valid line in two. Each line is read by json_io.loads (finite numbers, unique
    keys, at most max_depth deep); a bad line is a BoundaryError naming `field` and the path
    with the line's number (`PATH line N`), and so is a file of more than max_lines lines."""
    values = []
    for number, line in enumerate(read_text(path, field, max_bytes).split("\n"), start=1):
        if max_lines is not None and number > max_lines:
            raise BoundaryError(
                field, str(path), f"more than {max_lines} lines; use a smaller file"
            )
        if line.strip():
            shown = f"{path} line {number}"
            values.append((number, loads(line, field, shown=shown, max_depth=max_depth)))
    return values
