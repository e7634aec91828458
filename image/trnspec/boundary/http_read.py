"""Reads over the network, bounded in TOTAL time: the one HTTP reader of outside answers, and the
one wrapper of a blocking SDK call (boto3, the Kubernetes client).

Why a total bound: a client's timeout is per read (httpx's `timeout=`, botocore's read_timeout,
urllib3's), so a server that sends one byte a second never trips it; httpx has no total timeout
(encode/httpx#1450 is open, encode/httpcore#936 was declined). Here:

- `get(url, bounds)`: one GET whose whole answer (connect, TLS, status and headers, body) comes
  within `bounds.total_s`, under one `asyncio.timeout` scope on a private event loop (a trickled
  header cannot stretch it either), and whose body holds at most `bounds.max_bytes`. The read
  loop also checks the deadline itself on every chunk (`BodyLimit`, pure, its clock injectable).
  Every failure is a `ReadFailed` with a kind (`timeout`, `too_large`, `unreachable`) and one
  line; never a traceback, never a partial answer returned.
- `within(seconds, call)`: a blocking call (an SDK's, whose timeouts are per read) run on a daemon
  thread and waited on for at most `seconds`; past it `CallTimedOut`, the thread is left to end
  with the process (nothing of it is used).
- `base_url(field, url)` / `host_problem(host)`: a URL a user gave, checked before any
  connection: http(s), a host, no credentials, no query, a port in range, an IPv6 literal that
  parses (`http://[::1` is refused, not a ValueError), and a host name DNS can look up (an empty
  label, `a..b`, or one over 63 characters fails the IDNA codec inside getaddrinfo, a
  UnicodeError no HTTP client catches).

`get` must be called outside a running event loop (the CLI tools, the supervisor's threads); the
tools' own asyncio client (trnspec_tools.client.http_stream) bounds each request the same way with
its `Deadlines` scope.
"""

from __future__ import annotations

import asyncio
import ipaddress
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar
from urllib.parse import SplitResult, urlsplit

from trnspec.boundary.errors import BoundaryError

#: Largest answer read by default (an API's JSON answer is a few KiB).
MAX_ANSWER_BYTES = 1024 * 1024
#: Longest name DNS looks up (RFC 1035: 255 octets on the wire, 253 characters written).
MAX_HOST_CHARS = 253

T = TypeVar("T")
Kind = Literal["timeout", "too_large", "unreachable"]


@dataclass(frozen=True)
class Bounds:
    """What one read may take: seconds in all, bytes of body, seconds to connect (capped by the
    total)."""

    total_s: float
    max_bytes: int = MAX_ANSWER_BYTES
    connect_s: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.total_s < 7 * 86400 or not self.connect_s > 0 or self.max_bytes < 1:
            raise ValueError(f"bounds out of range: {self}")


@dataclass(frozen=True)
class Answer:
    """A whole answer: its status, headers (names lower-case) and body."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


class ReadFailed(Exception):
    """No whole answer: `kind` says why, `str()` is one line (without the URL: the caller names
    the flag and the value)."""

    def __init__(self, kind: Kind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


class CallTimedOut(TimeoutError):
    """A blocking call did not return within its bound (see `within`)."""


class BodyLimit:
    """The body of one answer as its chunks arrive, refused past `bounds.max_bytes` or once
    `bounds.total_s` has passed since `started` (on `clock`). Pure apart from the clock."""

    def __init__(
        self, bounds: Bounds, started: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.bounds, self.started, self.clock = bounds, started, clock
        self._parts: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.bounds.max_bytes:
            raise ReadFailed("too_large", f"answered more than {self.bounds.max_bytes} bytes")
        if self.clock() - self.started >= self.bounds.total_s:
            raise ReadFailed("timeout", _late(self.bounds))
        self._parts.append(chunk)

    def body(self) -> bytes:
        return b"".join(self._parts)


def _late(bounds: Bounds) -> str:
    return f"no whole answer within {bounds.total_s:g} s (it answers too slowly, or never)"


def get(
    url: str,
    bounds: Bounds,
    *,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Answer:
    """GET `url` (no redirects followed): the whole answer within `bounds`, else ReadFailed.
    Any status is an Answer; the caller says what it expected."""
    if problem := host_problem(urlsplit(url).hostname or ""):
        raise ReadFailed("unreachable", problem)
    return asyncio.run(_get(url, bounds, dict(params or {}), dict(headers or {}), clock))


async def _get(
    url: str,
    bounds: Bounds,
    params: dict[str, str],
    headers: dict[str, str],
    clock: Callable[[], float],
) -> Answer:
    import httpx

    timeout = httpx.Timeout(bounds.total_s, connect=min(bounds.connect_s, bounds.total_s))
    # made before the clock starts: loading the CA bundle is this machine's time, not the server's
    client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
    limit = BodyLimit(bounds, clock(), clock)
    try:
        async with (
            client,
            asyncio.timeout(bounds.total_s),
            client.stream("GET", url, params=params, headers=headers) as response,
        ):
            async for chunk in response.aiter_bytes():
                limit.add(chunk)
            return Answer(response.status_code, limit.body(), dict(response.headers))
    except (TimeoutError, httpx.TimeoutException):
        raise ReadFailed("timeout", _late(bounds)) from None
    except httpx.HTTPError as err:
        why = f"{type(err).__name__}: {err}"[:200]
        raise ReadFailed("unreachable", f"unreachable ({why})") from None
    except (OSError, UnicodeError) as err:  # a resolver's or the IDNA codec's own refusal
        raise ReadFailed("unreachable", f"unreachable ({type(err).__name__})") from None


def within(seconds: float, call: Callable[[], T]) -> T:
    """`call()`'s result if it returns within `seconds`, its exception if it raises; else
    CallTimedOut (the call goes on in its daemon thread; its result is dropped)."""
    if not seconds > 0:
        raise CallTimedOut("no time left")
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))

    worker = threading.Thread(target=run, name="bounded call", daemon=True)
    worker.start()
    worker.join(seconds)
    if not box:
        raise CallTimedOut(f"no answer within {seconds:g} s")
    ok, value = box[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


def host_problem(host: str) -> str | None:
    """Why DNS cannot look `host` up (empty, a label empty or over 63 characters, over 253
    characters, or refused by IDNA), else None; IP literals pass."""
    if not host:
        return "no host"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    try:
        encoded = host.encode("idna")
    except UnicodeError:
        return (
            f"host {host[:80]!r} is not a name DNS can look up (an empty label, a label over"
            " 63 characters, or a character IDNA refuses)"
        )
    if len(encoded.rstrip(b".")) > MAX_HOST_CHARS:
        return f"host name longer than {MAX_HOST_CHARS} characters"
    return None


def url_parts(
    field: str,
    url: str,
    example: str = "http://127.0.0.1:9090",
    credentials_fix: str = "give the base URL without 'user:password@'",
) -> SplitResult:
    """The parts of an http(s) URL with a host DNS can look up, a valid port, no credentials,
    query or fragment; else BoundaryError naming `field` (a URL with credentials is shown
    without them, and `credentials_fix` says what to do instead). The one URL check of the
    engine and the tools (trnspec_tools.boundary.endpoint.Endpoint.parse reads its parts)."""
    if not isinstance(url, str) or not url.isprintable() or any(c.isspace() for c in url):
        raise BoundaryError(field, url, "must be a URL without spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:  # a bad port or IPv6 literal
        raise BoundaryError(field, url, f"not a valid URL ({err}); e.g. {example}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BoundaryError(
            field, url, f"give an http:// or https:// URL with a host, e.g. {example}"
        )
    if parts.username is not None or parts.password is not None:
        raise BoundaryError(field, f"{parts.scheme}://***@{parts.hostname}", credentials_fix)
    if parts.query or parts.fragment:
        raise BoundaryError(field, url, "give the base URL only (no query or fragment)")
    if port == 0:
        raise BoundaryError(field, url, "the port must be in 1..65535")
    if problem := host_problem(parts.hostname):
        raise BoundaryError(field, url, f"{problem}; e.g. {example}")
    return parts


def base_url(field: str, url: str, example: str = "http://127.0.0.1:9090") -> str:
    """`url` checked by `url_parts`, without its trailing slash."""
    url_parts(field, url, example)
    return url.rstrip("/")
