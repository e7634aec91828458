"""Outside text made safe to print: a model id, an endpoint, a server's log tail.

A lone surrogate (from JSON `"\\ud800"`) cannot be encoded and crashes `print`; control
characters rewrite the terminal; `[bold]` or `[/]` in a model id is read as markup by rich (and a
stray `[/]` raises). `printable` fixes the first two and bounds the length; `markup_safe` also
escapes rich markup, for text handed to a rich Console or Table.
"""

from __future__ import annotations

import re

#: Characters of outside text shown in one place (longer text ends with "...").
MAX_SHOWN = 200

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object, max_chars: int = MAX_SHOWN, *, keep_newlines: bool = False) -> str:
    """The text with lone surrogates and control characters escaped, at most max_chars long."""
    value = text if isinstance(text, str) else str(text)
    value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    value = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
    if not keep_newlines:
        value = value.replace("\n", "\\n")
    return value if len(value) <= max_chars else value[: max_chars - 3] + "..."


def markup_safe(text: object, max_chars: int = MAX_SHOWN, *, keep_newlines: bool = False) -> str:
    """`printable`, with rich markup escaped so it prints as written."""
    from rich.markup import escape

    return escape(printable(text, max_chars, keep_newlines=keep_newlines))
