"""argparse `type=` readers: every flag of every command is declared through one of these.

A reader turns the flag's text into a checked value or raises `argparse.ArgumentTypeError`, which
argparse prints as one usage line and exit 2: a number is finite and in range (`float_arg`,
`int_arg`; an integer flag refuses `true`, `1e9` and `2.5`), a path is non-empty, printable and
short enough for the file system (`path_arg`), and free text is printable and bounded
(`text_arg`). The checks live in trnspec.boundary.numbers and here; a test walks every
command's parser and refuses a numeric flag declared with plain `float` or `int`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import MAX_COUNT, float_arg, int_arg, parse_int_list
from trnspec.boundary.problems import show

__all__ = ["float_arg", "int_arg", "int_list_arg", "path_arg", "price_arg", "text_arg"]

#: Longest path a flag accepts (Linux PATH_MAX), and longest name in it (NAME_MAX, in bytes).
MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255
#: Longest free-text flag value (a model id, a label).
MAX_TEXT_CHARS = 1024


#: The hourly prices a `--price-per-hour` flag takes, USD per instance hour: a cent (a smaller
#: price rounds every cost per million tokens to $0.000) to 10,000 (above any EC2 instance's
#: on-demand price; past it a figure like 1e308 makes every cost infinite).
MIN_PRICE_PER_HOUR = 0.01
MAX_PRICE_PER_HOUR = 10_000.0


def _refuse(text: str, fix: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"{show(text)}: {fix}")


def _printable(text: str, max_chars: int) -> str:
    if not text:
        raise _refuse(text, "must not be empty")
    if len(text) > max_chars:
        raise _refuse(text, f"longer than {max_chars} characters")
    if not text.isprintable():
        bad = next(c for c in text if not c.isprintable())
        raise _refuse(text, f"holds the control character {bad!r}; use printable text")
    return text


def path_arg() -> Callable[[str], str]:
    """A `type=` for a file or directory path: non-empty, printable, at most MAX_PATH_CHARS,
    each name at most MAX_NAME_BYTES in UTF-8. What the path is (a regular file, a new file) is
    checked where it is opened: trnspec.boundary.files for inputs, write for outputs."""

    def value(text: str) -> str:
        _printable(text, MAX_PATH_CHARS)
        if any(
            len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in text.split("/")
        ):
            raise _refuse(text, f"a name in it is longer than {MAX_NAME_BYTES} bytes")
        return text

    return value


def text_arg(max_chars: int = MAX_TEXT_CHARS) -> Callable[[str], str]:
    """A `type=` for free text: non-empty, printable, at most max_chars."""

    def value(text: str) -> str:
        return _printable(text, max_chars)

    return value


def price_arg() -> Callable[[str], object]:
    """A `type=` for a price in USD per instance hour: finite, within MIN_PRICE_PER_HOUR and
    MAX_PRICE_PER_HOUR, so every cost computed from it is a finite, printable figure."""
    return float_arg(MIN_PRICE_PER_HOUR, MAX_PRICE_PER_HOUR)


def int_list_arg(
    lo: int = 1, hi: int | None = None, max_items: int = 64
) -> Callable[[str], list[int]]:
    """A `type=` for `1,4,16`: integers in [lo, hi], at most max_items of them."""

    def value(text: str) -> list[int]:
        try:
            return parse_int_list("value", text, lo, MAX_COUNT if hi is None else hi, max_items)
        except BoundaryError as exc:
            raise _refuse(text, exc.fix) from None

    return value
