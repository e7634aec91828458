"""Properties of trnspec.boundary.text: any outside text prints, and prints as written."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from trnspec.boundary.text import printable, rich_text

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

hostile = st.one_of(
    st.text(max_size=80),
    st.text(
        alphabet=st.sampled_from("[]/\\bold red\ud800\udfff\x1b\n\r\t\x00\u2028 "), max_size=40
    ),
)


@SETTINGS
@given(hostile, st.integers(10, 300))
def test_printable_text_encodes_has_only_printable_characters_and_is_bounded(text, limit):
    shown = printable(text, limit)
    shown.encode("utf-8")
    assert len(shown) <= limit
    assert shown.isprintable()


@SETTINGS
@given(hostile)
def test_printable_text_keeps_what_was_printable(text):
    if text.isprintable() and len(text) <= 1000:
        assert printable(text, 1000) == text


@SETTINGS
@given(hostile)
def test_outside_text_renders_as_written_in_a_console_and_a_table(text):
    shown = rich_text(text, 10_000)
    assert shown.plain == printable(text, 10_000)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    table = Table()
    table.add_column("x")
    table.add_row(rich_text(text))
    console.print(shown)
    console.print(table)
