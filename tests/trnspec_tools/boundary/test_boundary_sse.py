"""Properties of trnspec_tools.boundary.sse: any event payload is a JSON object or an EventError,
never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnspec_tools.boundary.sse import EventError, event_object

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

payloads = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=60).map(str.encode),
    st.sampled_from([b"NaN", b'{"x": NaN}', b'{"u": Infinity}', b"[1]", b'"s"', b"{}"]),
    st.integers(0, 50_000).map(lambda n: b"[" * n + b"]" * n),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3).map(
        lambda d: json.dumps(d).encode()
    ),
)


@SETTINGS
@given(payloads)
def test_an_event_is_a_json_object_with_finite_numbers_or_an_event_error(payload):
    try:
        event = event_object(payload)
    except EventError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(event, dict)
    json.dumps(event, allow_nan=False)


def test_a_deeply_nested_event_is_an_event_error():
    with pytest.raises(EventError):
        event_object(b"[" * 100_000)


# --- the one reader: framing, `data:` with and without its space, [DONE], arrival times -------

import asyncio  # noqa: E402

from trnspec_tools.boundary.sse import MAX_EVENT_BYTES, sse_events  # noqa: E402

objects = st.lists(
    st.dictionaries(
        st.text(max_size=5),
        st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.none()),
        max_size=3,
    ),
    max_size=6,
)


def _body(events, spaces, newline, done=True) -> bytes:
    out = b""
    for event, space in zip(events, spaces, strict=False):
        out += b"data:" + (b" " if space else b"") + json.dumps(event).encode() + newline * 2
    if done:
        out += b"data: [DONE]" + newline * 2
    return out


def _chunked(body: bytes, cuts) -> list[bytes]:
    points = sorted({min(c, len(body)) for c in cuts})
    pieces, start = [], 0
    for p in [*points, len(body)]:
        if p > start:
            pieces.append(body[start:p])
            start = p
    return pieces


def _read(chunks: list[bytes], hang: bool = False, tail_s: float = 0.05):
    """Every event of the chunks, with the chunk index as its arrival time; `hang`: the body
    never ends after the last chunk."""

    async def source():
        for piece in chunks:
            yield piece
        if hang:
            await asyncio.Event().wait()

    async def run():
        clock = iter(range(10**6))
        return [e async for e in sse_events(source(), lambda: next(clock), tail_s)]

    return asyncio.run(run())


@SETTINGS
@given(
    objects,
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.lists(st.integers(0, 400), max_size=8),
)
def test_data_lines_parse_with_and_without_their_space_whatever_the_chunking(
    events, spaces, newline, cuts
):
    body = _body(events, spaces, newline)
    got = _read(_chunked(body, cuts))
    assert [e.data for e in got[:-1]] == events
    assert got[-1].done and all(not e.done for e in got[:-1])


def test_data_without_a_space_keeps_a_leading_space_of_its_value_only_once():
    got = _read([b'data:{"a": 1}\n\ndata:  {"a": 2}\n\ndata:[DONE]\n\n'])
    assert [e.data for e in got] == [{"a": 1}, {"a": 2}, None]


def test_comments_and_other_fields_are_skipped():
    got = _read([b': keep-alive\n\nevent: x\ndataset: y\nid: 3\ndata: {"a": 1}\n\ndata: [DONE]\n'])
    assert [e.data for e in got] == [{"a": 1}, None]


def test_each_event_carries_the_arrival_time_of_the_chunk_that_completed_it():
    got = _read([b'data: {"a"', b': 1}\n\ndata: {"b": 2}\n', b"\ndata: [DONE]\n\n"])
    assert [(e.data, e.at) for e in got] == [({"a": 1}, 1), ({"b": 2}, 1), (None, 2)]


def test_a_stream_that_reached_done_is_complete_even_if_the_body_never_ends():
    got = _read([b'data: {"a": 1}\n\ndata: [DONE]\n\n'], hang=True)
    assert [e.data for e in got] == [{"a": 1}, None]


def test_a_body_that_ends_before_done_yields_no_done_event():
    got = _read([b'data: {"a": 1}\n\n'])
    assert [e.data for e in got] == [{"a": 1}]


def test_an_endless_line_is_refused_once_it_passes_the_limit():
    with pytest.raises(EventError, match="longer than"):
        _read([b"data: " + b"x" * (MAX_EVENT_BYTES + 1)])
