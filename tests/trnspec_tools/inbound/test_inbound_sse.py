"""Properties of trnspec_tools.inbound.sse: any event payload is a JSON object or an EventError,
never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnspec_tools.inbound.sse import EventError, event_object

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
