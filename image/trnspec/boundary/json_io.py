"""JSON in and out with bounds: size, nesting depth, and no NaN or Infinity either way.

Object keys are unique (a duplicate is refused, never silently the last one).
Python's json module reads `NaN`, `Infinity` and `-Infinity` (not JSON) and writes them back, so a
NaN in a tune report would pass every comparison (all false) and print a confident figure. Here a
non-finite constant is refused on read, and every JSON the product writes is strict JSON, by one of
two writers (tests/test_json_writes.py refuses any other `json.dumps`/`json.dump`):
- `dumps`, for a document a user or a program reads (a report, a plan, a policy file, a manifest):
  a non-finite float (a bug upstream) is written as null, so a figure is right or absent;
- `strict`, for text that is hashed or sent (a cache key, a fingerprint, a request body, an argv
  value): there a null would be another key or another request, so a non-finite float is refused
  with ValueError naming where it is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from trnspec.boundary.errors import BoundaryError

#: Largest JSON document read (a tune report is well under 1 MiB).
MAX_JSON_BYTES = 64 * 1024 * 1024
#: Deepest nesting of arrays and objects accepted (real inputs use fewer than 10 levels).
MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are unique (Python's json keeps the last of two silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:80]!r}; keep one")
        out[key] = value
    return out


def depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, ignoring brackets inside strings."""
    deepest = level = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest


def loads(
    text: str | bytes,
    field: str,
    *,
    shown: str | None = None,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """A JSON value from text that is at most max_bytes long and max_depth deep, with finite
    numbers only; otherwise BoundaryError naming `field` and `shown` (e.g. the file's path;
    default: the start of the text)."""
    value_shown = shown if shown is not None else text[:40]
    if len(text) > max_bytes:
        raise BoundaryError(field, value_shown, f"larger than the {max_bytes}-byte limit")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BoundaryError(field, value_shown, f"not UTF-8 ({exc.reason})") from None
    if depth(text) > max_depth:
        raise BoundaryError(field, value_shown, f"nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise BoundaryError(field, value_shown, f"not JSON ({reason})") from None
    except RecursionError:
        raise BoundaryError(field, value_shown, "nested too deeply") from None
    if _has_non_finite(value):  # 1e999 parses as inf
        raise BoundaryError(field, value_shown, "holds a number too large to be finite (1e999?)")
    return value


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def finite_only(value: Any) -> Any:
    """A copy of a JSON-able value with every non-finite float replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_only(v) for v in value]
    return value


def dumps(
    value: Any,
    indent: int | None = 2,
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
    newline: bool = True,
) -> str:
    """Strict JSON text of a document (non-finite floats written as null), ending in a newline
    unless `newline` is False; the other arguments are json.dumps's."""
    text = json.dumps(
        finite_only(value),
        indent=indent,
        sort_keys=sort_keys,
        separators=separators,
        default=default,
        allow_nan=False,
    )
    return text + "\n" if newline else text


def non_finite_at(value: Any, where: str = "$") -> tuple[str, float] | None:
    """Where the first non-finite float of a JSON-able value is (`$.a[2].b`) and what it is, or
    None when every number is finite."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    if isinstance(value, dict):
        items: Any = ((f"{where}.{k}", v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub_where, sub in items:
        if (found := non_finite_at(sub, sub_where)) is not None:
            return found
    return None


def strict(
    value: Any,
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """One line of strict JSON for text that is hashed or sent (no trailing newline; the
    arguments are json.dumps's); a non-finite float is refused with ValueError naming where it
    is, never written as null (a null would be another cache key or another request)."""
    try:
        return json.dumps(
            value, sort_keys=sort_keys, separators=separators, default=default, allow_nan=False
        )
    except ValueError as refused:
        # allow_nan=False already refuses; the walk (paths formatted for every element) runs
        # only then, to name where: request bodies and cache keys are written on hot paths. A
        # circular value (json's own ValueError) has no end for the walk: json's error stands.
        try:
            found = non_finite_at(value)
        except RecursionError:
            raise refused from None
        if found is None:
            raise
        where, number = found
        raise ValueError(
            f"{where} is {number!r}, not a finite number: JSON has none, and null would change"
            " what is hashed or sent; fix the value upstream"
        ) from None
