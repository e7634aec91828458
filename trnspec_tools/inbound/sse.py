"""One server-sent event's payload as a JSON object, bounded in size and depth, finite numbers.

Used by both streaming readers (bench's timing loop and the smoke client), so they refuse the
same things: a line longer than MAX_EVENT_BYTES (a server that never sends a newline would grow
the buffer without end), a payload that is not UTF-8 JSON, NaN/Infinity, nesting too deep for the
parser, and a JSON value that is not an object.
"""

from __future__ import annotations

import json
from typing import Any

#: Longest SSE line kept while waiting for its newline (a real event is under a few KB).
MAX_EVENT_BYTES = 1024 * 1024


class EventError(ValueError):
    """An event that cannot be used; the message says why, with the start of the payload."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def event_object(payload: bytes) -> dict[str, Any]:
    """The event's JSON object, or EventError."""
    if len(payload) > MAX_EVENT_BYTES:
        raise EventError(f"an event of {len(payload)} bytes (limit {MAX_EVENT_BYTES})")
    try:
        event = json.loads(payload, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, NaN, or nested too deep
        raise EventError(f"unparseable event {payload[:80]!r}") from None
    if not isinstance(event, dict):
        raise EventError(f"event is a JSON {type(event).__name__}, not an object")
    return event
