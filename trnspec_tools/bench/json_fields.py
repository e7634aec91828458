"""Reading one JSON object of a written result back, field by field, checked where it enters.

`Fields(obj, where)` wraps a parsed JSON object (json_io.loads: finite numbers only) and reads
its keys as the types a run result holds: a required key that is missing, a value of the wrong
type or outside its range is a BoundaryError naming the full path of the field (`where.key`), the
value and the fix. Unknown keys are ignored (a newer writer may add some).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import finite_in, int_in

#: The fix for a result file that does not hold what the tools wrote.
REWRITE_FIX = "re-measure, or restore the file the tool wrote"


class Fields:
    """The keys of one JSON object, read as typed values (see the module docstring)."""

    def __init__(self, obj: object, where: str) -> None:
        if not isinstance(obj, Mapping):
            raise BoundaryError(where, obj, f"must be a JSON object; {REWRITE_FIX}")
        self.obj: Mapping[str, Any] = obj
        self.where = where

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def has(self, key: str) -> bool:
        return self.obj.get(key) is not None

    def raw(self, key: str) -> Any:
        """The value of a required key (which may be null)."""
        if key not in self.obj:
            raise BoundaryError(self.path(key), "(missing)", f"a required field; {REWRITE_FIX}")
        return self.obj[key]

    def item(self, key: str) -> tuple[Any, str]:
        """A required key's value and its path (for a nested reader's `from_json`)."""
        return self.raw(key), self.path(key)

    def sub(self, key: str) -> Fields:
        return Fields(self.raw(key), self.path(key))

    def number(self, key: str, lo: float | None = None, hi: float | None = None) -> float:
        return finite_in(self.raw(key), self.path(key), lo, hi)

    def opt_number(
        self, key: str, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False
    ) -> float | None:
        value = self.raw(key)
        return None if value is None else finite_in(value, self.path(key), lo, hi, lo_open=lo_open)

    def count(self, key: str, lo: int = 0) -> int:
        return int_in(self.raw(key), self.path(key), lo, None)

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, bool):
            raise BoundaryError(self.path(key), value, "must be true or false")
        return value

    def opt_text(self, key: str) -> str | None:
        value = self.raw(key)
        if value is not None and not isinstance(value, str):
            raise BoundaryError(self.path(key), value, "must be text or null")
        return value

    def text(self, key: str) -> str:
        value = self.opt_text(key)
        if value is None:
            raise BoundaryError(self.path(key), value, "must be text")
        return value

    def opt_list(self, key: str) -> list[Any] | None:
        value = self.raw(key)
        if value is not None and not isinstance(value, list):
            raise BoundaryError(self.path(key), value, "must be a JSON list or null")
        return value

    def numbers(
        self, key: str, lo: float | None = None, hi: float | None = None
    ) -> tuple[float, ...] | None:
        """A list of finite numbers in [lo, hi], or None for null."""
        values = self.opt_list(key)
        if values is None:
            return None
        return tuple(finite_in(v, f"{self.path(key)}[{i}]", lo, hi) for i, v in enumerate(values))

    def counts(self, key: str) -> tuple[int, ...]:
        values = self.opt_list(key)
        if values is None:
            raise BoundaryError(self.path(key), values, "must be a JSON list of counts")
        return tuple(int_in(v, f"{self.path(key)}[{i}]", 0, None) for i, v in enumerate(values))

    def count_map(self, key: str) -> dict[str, int]:
        """A JSON object of name -> count (e.g. error kind -> requests)."""
        sub = self.sub(key)
        return {name: sub.count(name) for name in sub.obj}
