"""Properties of the SSE reader stated on its parts: a `data:` field's value with and without the
one optional space, line framing whatever the chunking, the size limits at their edge, errors
that say why, and a body read to its end after [DONE] (the connection can be reused)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnspec_tools.boundary.sse import (
    MAX_EVENT_BYTES,
    EventError,
    Framer,
    data_value,
    event_object,
    sse_events,
)

SETTINGS = settings(max_examples=150, deadline=None)

#: A line's content: any bytes but the three line ends.
line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))


@SETTINGS
@given(line_bytes)
def test_a_data_value_is_what_follows_the_colon_less_one_optional_space(value):
    assert data_value(b"data: " + value) == value
    if not value.startswith(b" "):
        assert data_value(b"data:" + value) == value
    else:  # `data:  x`: one space is the separator, the next one is the value's
        assert data_value(b"data:" + value) == value[1:]


@SETTINGS
@given(st.sampled_from([b"event", b"id", b"retry", b"dataset", b"", b"datum"]), line_bytes)
def test_a_line_of_another_field_has_no_data_value(field, value):
    assert data_value(field + b": " + value) is None


@SETTINGS
@given(
    st.lists(line_bytes, max_size=6),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.lists(st.integers(0, 300), max_size=8),
)
def test_framing_gives_the_same_lines_whatever_the_chunking(lines, newline, cuts):
    body = b"".join(line + newline for line in lines)
    points = sorted({0, *(min(c, len(body)) for c in cuts), len(body)})
    framer = Framer()
    got = [line for a, b in itertools.pairwise(points) for line in framer.feed(body[a:b])]
    if newline == b"\r":  # a CR at the very end may still be the first half of a CRLF
        got += framer.feed(b"x")
    assert got == lines


def test_a_crlf_split_between_two_chunks_is_one_line_end():
    framer = Framer()
    assert framer.feed(b"a\r") == []
    assert framer.feed(b"\nb\n") == [b"a", b"b"]


def test_an_event_of_exactly_the_limit_is_read_and_one_byte_more_is_refused():
    pad = b" " * (MAX_EVENT_BYTES - 2)
    assert event_object(b"{" + pad + b"}") == {}
    with pytest.raises(EventError, match=f"{MAX_EVENT_BYTES + 1} bytes"):
        event_object(b"{" + pad + b" }")


def test_a_pending_line_of_exactly_the_limit_waits_and_one_byte_more_is_refused():
    framer = Framer()
    assert framer.feed(b"x" * MAX_EVENT_BYTES) == []
    with pytest.raises(EventError, match="longer than"):
        Framer().feed(b"x" * (MAX_EVENT_BYTES + 1))


@pytest.mark.parametrize(
    ("payload", "says"),
    [(b"[1, 2]", "JSON list, not an object"), (b'"s"', "JSON str, not an object")],
)
def test_a_json_value_that_is_not_an_object_is_refused_naming_its_type(payload, says):
    with pytest.raises(EventError, match=says):
        event_object(payload)


def test_an_unparseable_event_is_refused_quoting_its_start():
    with pytest.raises(EventError, match=re.escape("unparseable event b'{nope")):
        event_object(b"{nope" + b"z" * 500)


def test_after_done_the_rest_of_the_body_is_read_to_its_end():
    """A complete stream whose body goes on briefly is drained (the connection stays usable)."""
    read: list[bytes] = []

    async def source():
        for piece in (b'data: {"a": 1}\n\ndata: [DONE]\n\n', b": trailer\n", b": last\n"):
            read.append(piece)
            yield piece

    async def run():
        return [e.data async for e in sse_events(source(), lambda: 0.0, tail_s=5.0)]

    assert asyncio.run(run()) == [{"a": 1}, None]
    assert read[-1] == b": last\n"


def test_events_round_trip_through_the_reader():
    events = [{"i": i, "t": "x" * i} for i in range(3)]
    body = b"".join(b"data:" + json.dumps(e).encode() + b"\n\n" for e in events)

    async def source():
        yield body + b"data:[DONE]\n\n"

    async def run():
        return [e.data async for e in sse_events(source(), lambda: 0.0, tail_s=0.01)]

    assert asyncio.run(run()) == [*events, None]
