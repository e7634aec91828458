"""The one server-sent-events reader of the tools: each event's JSON payload and its arrival time.

Both streaming clients (bench's timing loop, client.bench_client, and the smoke/demo client,
client.openai_client) read a response body through `sse_events`, so they frame and refuse the
same things. Framing follows the HTML standard's event-stream rules where a completion stream
uses them: a line ends at LF, CRLF or CR; a line `data:VALUE` carries VALUE with one leading space
removed if there is one (`data: x` and `data:x` are the same event); comment lines (`:`) and
other fields are skipped. Each `data:` line is one event (an OpenAI-compatible server sends one
line per event); `[DONE]` ends the stream.

A stream that reached `[DONE]` is complete even if the body never closes: what follows is read
only for `tail_s` (so a keep-alive connection can be reused), then left; the caller closes the
response, which drops the connection.

Each payload is a JSON object, bounded in size and depth, with finite numbers only (`event_object`):
a line longer than MAX_EVENT_BYTES (a server that never sends a newline would grow the buffer
without end), a payload that is not UTF-8 JSON, NaN/Infinity, nesting too deep for the parser,
and a JSON value that is not an object are refused with EventError.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

#: Longest SSE line kept while waiting for its newline (a real event is under a few KB).
MAX_EVENT_BYTES = 1024 * 1024
#: How long the rest of a body is read after [DONE] before the connection is left.
DONE_TAIL_S = 0.5

_LINE_END = re.compile(rb"\r\n|\r|\n")


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


def data_value(line: bytes) -> bytes | None:
    """The value of a `data` field line (one leading space removed), None for any other line."""
    if not line.startswith(b"data"):
        return None
    rest = line[4:]
    if rest and rest[:1] != b":":
        return None  # another field whose name starts with "data"
    value = rest[1:]
    return value[1:] if value[:1] == b" " else value


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One event: its JSON object (None for the final [DONE]) and when its bytes arrived."""

    data: dict[str, Any] | None
    at: float

    @property
    def done(self) -> bool:
        return self.data is None


class Framer:
    """Bytes in, complete lines out (LF, CRLF or CR ends a line; a CR at the end of a chunk
    waits for the next one, which may start with its LF)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data if self._buf else data
        lines: list[bytes] = []
        start = 0
        for m in _LINE_END.finditer(buf):
            if m.group() == b"\r" and m.end() == len(buf):
                break  # maybe the first half of CRLF
            lines.append(buf[start : m.start()])
            start = m.end()
        self._buf = buf[start:]
        if len(self._buf) > MAX_EVENT_BYTES:
            raise EventError(f"an event line longer than {MAX_EVENT_BYTES} bytes")
        return lines


async def sse_events(
    chunks: AsyncIterator[bytes],
    clock: Callable[[], float] = time.perf_counter,
    tail_s: float = DONE_TAIL_S,
) -> AsyncIterator[SseEvent]:
    """Every event of the body, with the time its chunk arrived, up to and including the final
    [DONE] event (then the rest of the body is read for at most `tail_s`). The iteration ends
    without a [DONE] event when the body ended before it; EventError for an unusable event."""
    framer = Framer()
    it = chunks.__aiter__()
    async for data in it:
        now = clock()
        for line in framer.feed(data):
            value = data_value(line)
            if value is None:
                continue
            if value.strip() == b"[DONE]":
                await _read_tail(it, tail_s)
                yield SseEvent(None, now)
                return
            yield SseEvent(event_object(value), now)


async def _read_tail(it: AsyncIterator[bytes], tail_s: float) -> None:
    """The rest of a body after [DONE], for at most tail_s (a body that never ends is left)."""

    async def drain() -> None:
        async for _ in it:
            pass

    # Whatever goes wrong after [DONE] (no end in time, a broken chunk) cannot undo a complete
    # stream: the rest is left, the caller closes the response and its connection is dropped.
    with contextlib.suppress(Exception):
        await asyncio.wait_for(drain(), tail_s)
