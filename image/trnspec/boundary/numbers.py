"""Finite numbers in the range a quantity allows, for files, flags and server figures.

`finite_in` and `int_in` raise BoundaryError; `parse_int_list` reads a comma-separated list. The
argparse helpers (`float_arg`, `int_arg`) turn the same rule into one-line usage errors (argparse
exits with status 2).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.problems import show

#: Largest integer any count flag accepts (concurrency, prompts, lengths): beyond it a run
#: cannot finish, and a list or task per unit would exhaust memory first.
MAX_COUNT = 100_000


def as_number(value: object) -> float | None:
    """The value as a finite float, or None (bools, text, NaN and infinities are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _range_text(lo: float | None, hi: float | None, lo_open: bool) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:g}")
    if hi is not None:
        parts.append(f"<= {hi:g}")
    return " and ".join(parts)


def in_range(
    number: float, lo: float | None = None, hi: float | None = None, lo_open: bool = False
) -> bool:
    if lo is not None and (number <= lo if lo_open else number < lo):
        return False
    return hi is None or number <= hi


def finite_in(
    value: object,
    field: str,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
) -> float:
    """The value as a finite float within [lo, hi] (lo excluded with lo_open), else
    BoundaryError naming the field."""
    number = as_number(value)
    if number is None or not in_range(number, lo, hi, lo_open):
        bounds = _range_text(lo, hi, lo_open)
        raise BoundaryError(
            field, value, "must be a finite number" + (f" {bounds}" if bounds else "")
        )
    return number


def int_in(value: object, field: str, lo: int | None = None, hi: int | None = MAX_COUNT) -> int:
    """The value as an int within [lo, hi] (bools and floats refused), else BoundaryError."""
    if isinstance(value, bool) or not isinstance(value, int) or not in_range(value, lo, hi):
        raise BoundaryError(field, value, f"must be an integer {_range_text(lo, hi, False)}")
    return value


def _argparse(check: Callable[[str], object]) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return check(text)
        except BoundaryError as exc:
            raise argparse.ArgumentTypeError(f"{show(text)}: {exc.fix}") from None

    parse.__name__ = "value"  # argparse shows "invalid value value: ..."
    return parse


def float_arg(
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    allow_inf: bool = False,
) -> Callable[[str], object]:
    """An argparse `type=` for a finite float in range (`inf` only with allow_inf)."""

    def check(text: str) -> float:
        return float_text(text, "value", lo, hi, lo_open=lo_open, allow_inf=allow_inf)

    return _argparse(check)


def float_text(
    text: str,
    field: str,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """Outside text (a flag, an environment variable) as a finite float in range (`inf` only
    with allow_inf); BoundaryError naming the field otherwise."""
    try:
        number = float(text)
    except (ValueError, TypeError):
        raise BoundaryError(field, text, "must be a number") from None
    if allow_inf and number == math.inf:
        return number
    return finite_in(number, field, lo, hi, lo_open=lo_open)


def int_text(text: str, field: str, lo: int | None = None, hi: int | None = MAX_COUNT) -> int:
    """Outside text as an integer in [lo, hi]: ASCII digits with an optional sign (not `1e9`,
    `2.5`, `true`, `²` or a 400-digit number beyond hi); BoundaryError naming the field."""
    body = text.strip()
    digits = body[1:] if body[:1] in "+-" else body
    if not digits.isascii() or not digits.isdigit() or len(digits) > 30:
        raise BoundaryError(field, text, "must be an integer, e.g. 4 (not 1e9 or 2.5)")
    return int_in(int(body), field, lo, hi)


def int_arg(lo: int | None = None, hi: int | None = MAX_COUNT) -> Callable[[str], object]:
    """An argparse `type=` for an integer in [lo, hi]."""
    return _argparse(lambda text: int_text(text, "value", lo, hi))


def parse_int_list(
    flag: str, text: str, lo: int = 1, hi: int = MAX_COUNT, max_items: int = 64
) -> list[int]:
    """`1,4,16` as integers in [lo, hi], at most max_items of them; BoundaryError otherwise."""
    parts = [x for x in text.replace(" ", "").split(",") if x]
    if not parts or len(parts) > max_items:
        raise BoundaryError(
            flag, text, f"give 1 to {max_items} integers separated by commas, e.g. 1,4,16"
        )
    values = []
    for part in parts:
        try:
            values.append(int(part))
        except ValueError:
            raise BoundaryError(flag, text, "give comma-separated integers, e.g. 1,4,16") from None
    if any(not lo <= v <= hi for v in values):
        raise BoundaryError(flag, text, f"every value must be an integer >= {lo} and <= {hi}")
    return values
