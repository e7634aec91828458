"""Outside text made safe to print: a model id, an endpoint, a server's log tail.

A lone surrogate (from JSON `"\\ud800"`) cannot be encoded and crashes `print`; control
characters rewrite the terminal; `[bold]` or `[/]` in a model id is read as markup by rich (and a
stray `[/]` raises). `printable` escapes the first two and bounds the length; `rich_text` wraps
the result in a rich `Text`, which rich never parses as markup, for a Console or a Table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

#: Characters of outside text shown in one place (longer text ends with "...").
MAX_SHOWN = 200


def _escape(ch: str) -> str:
    code = ord(ch)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def printable(text: object, max_chars: int = MAX_SHOWN, *, keep_newlines: bool = False) -> str:
    """The text with every non-printable character (control characters, lone surrogates, line
    separators; newlines unless kept) escaped, at most max_chars long."""
    value = text if isinstance(text, str) else str(text)
    value = value[: max_chars + 1]  # escaping only lengthens: nothing past this is shown
    value = "".join(
        ch if ch.isprintable() or (keep_newlines and ch == "\n") else _escape(ch) for ch in value
    )
    return value if len(value) <= max_chars else value[: max_chars - 3] + "..."


def rich_text(
    text: object, max_chars: int = MAX_SHOWN, *, keep_newlines: bool = False, style: str = ""
) -> Text:
    """`printable` as a rich Text: shown exactly as written, never read as markup."""
    from rich.text import Text

    return Text(printable(text, max_chars, keep_newlines=keep_newlines), style=style)
