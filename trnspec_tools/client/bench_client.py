"""Streaming OpenAI-compatible client that times every chunk, and a /metrics scraper.

Every server fault is turned into a classified RequestResult instead of an exception, because a
benchmark that dies on the first 500 measures nothing. Retries follow client.retry_rule: only
before the first byte of a real answer (retrying after tokens were streamed would double-count
work and hide the fault). Every request runs under one deadline scope (connect, first byte, whole
request: client.http_stream.Deadlines), so a server that trickles keep-alives cannot stretch it.

Requests go over client.http_stream (asyncio streams), not httpx: the client's own CPU per
streamed chunk competes with a server on the same host (client.http_stream says by how much).
Times are taken with perf_counter as each SSE event is parsed; the parse cost of each event is
accumulated so the tool can report its own overhead.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, NoReturn

from trnspec.boundary import json_io
from trnspec.serve.api_key import auth_headers

from trnspec_tools.boundary.endpoint import BoundKey
from trnspec_tools.boundary.sse import EventError, sse_events
from trnspec_tools.boundary.usage import checked_completion_tokens
from trnspec_tools.client.http_stream import ConnectionPool, Deadlines, ProtocolError, Response
from trnspec_tools.client.request_spec import RequestSpec
from trnspec_tools.client.retry_rule import DEFAULT_RETRY_AFTER_CAP_S, retry_delay

Api = Literal["completions", "chat"]

#: error kinds, as counted in the report: a TLS failure (tls_certificate: the server's
#: certificate was refused; tls: the handshake failed otherwise, e.g. https:// to a plain HTTP
#: port) and a 404 (the path does not exist there) are told apart from other connection
#: failures and 4xx answers, and are not retried (the same request would fail the same way)
ERROR_KINDS = (
    "http_5xx",
    "http_429",
    "http_404",
    "http_4xx",
    "stream_error",
    "dropped_stream",
    "timeout",
    "tls_certificate",
    "tls",
    "connect",
    "bad_response",
)


@dataclass
class RequestResult:
    """Timings of one request; `error` is None when it completed."""

    error: str | None = None
    error_detail: str = ""
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    e2e_s: float | None = None
    output_tokens: int | None = None
    usage_reported: bool = False
    content_chunks: int = 0
    retries: int = 0
    parse_overhead_s: float = 0.0
    start_s: float = 0.0
    end_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first; undefined for a single token."""
        if self.ttft_s is None or self.e2e_s is None or not self.output_tokens:
            return None
        if self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)


class ConnectFailed(OSError):
    """The connection could not be opened (the original OSError is the cause): safe to retry,
    nothing was sent."""


class StreamClient:
    """One endpoint's connection pool, deadlines and credentials, shared by a run's requests."""

    def __init__(
        self,
        base_url: str,
        deadlines: Deadlines | None = None,
        api_key: str | BoundKey | None = None,
        retry_after_cap_s: float = DEFAULT_RETRY_AFTER_CAP_S,
    ) -> None:
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.deadlines = deadlines or Deadlines()
        self.retry_after_cap_s = retry_after_cap_s
        # a bound key goes only to the origin it was given for (boundary.endpoint.BoundKey)
        key = api_key.for_url(self.base_url) if isinstance(api_key, BoundKey) else api_key
        self.pool = ConnectionPool(self.base_url, auth_headers(key or None))

    async def __aenter__(self) -> StreamClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.pool.aclose()

    @contextlib.asynccontextmanager
    async def opened(
        self, method: str, path: str, body: bytes | None = None, *, spent_s: float = 0.0
    ) -> AsyncIterator[Response]:
        """The one deadline-scoped request of the tools: the response, with its body unread,
        under one `asyncio.timeout_at` scope that moves from the connect deadline (capped by the
        whole request's) to the whole request's once connected, and whose first byte must come
        by its own deadline. `spent_s` is time a retried request already used of its total.

        Raises ConnectFailed (the OSError as its cause) when the connection cannot be opened,
        TimeoutError past a deadline; closes the response on the way out."""
        d = self.deadlines
        now = asyncio.get_running_loop().time()
        total_at = now + d.total_s - spent_s
        async with asyncio.timeout_at(min(now + d.connect_s, total_at)) as scope:
            try:
                resp = await self.pool.request(
                    method,
                    path,
                    body,
                    on_connected=scope,
                    first_byte_at=min(now + d.first_byte_s, total_at),
                )
            except OSError as exc:
                raise ConnectFailed(f"{type(exc).__name__}: {exc}") from exc
            scope.reschedule(total_at)
            try:
                yield resp
            finally:
                resp.close()

    async def get(self, path: str, limit: int = 16 * 1024 * 1024) -> tuple[int, bytes]:
        """A bounded GET: (status, body)."""
        async with self.opened("GET", path) as resp:
            return resp.status, await resp.read(limit)


def request_body(api: Api, model: str, spec: RequestSpec, ignore_eos: bool) -> dict[str, object]:
    """The JSON body: greedy, streaming, with usage in the last chunk.

    Greedy because speculative decoding on the CPU build is only exact (and only fast) when greedy;
    ignore_eos (a vLLM extension, ignored elsewhere) makes every request produce max_tokens, so
    runs are comparable.
    """
    body: dict[str, object] = {
        "model": model,
        "max_tokens": spec.max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if ignore_eos:
        body["ignore_eos"] = True
    if api == "chat":
        body["messages"] = [{"role": "user", "content": spec.prompt}]
    else:
        body["prompt"] = spec.prompt
    return body


def _chunk_text(api: Api, event: dict[str, object]) -> str:
    choices = event.get("choices")
    if not isinstance(choices, list) or not choices:
        return ""
    choice = choices[0]
    if not isinstance(choice, dict):
        return ""
    if api == "chat":
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else None
    else:
        text = choice.get("text")
    return text if isinstance(text, str) else ""


class _Retry(Exception):
    def __init__(self, kind: str, status: int | None, retry_after: str | None) -> None:
        super().__init__(kind)
        self.kind, self.status, self.retry_after = kind, status, retry_after


async def _stream_once(
    client: StreamClient,
    path: str,
    body: bytes,
    api: Api,
    result: RequestResult,
    start: float,
    max_tokens: int,
) -> str | None:
    """One attempt. Returns None on success, or the error kind (result holds partial timings);
    raises _Retry for an answer that may be retried (a status before any content).

    Latencies count from `start`, the first attempt, so a retried request shows its real cost.
    """
    result.start_s = start
    try:
        async with client.opened("POST", path, body, spent_s=time.perf_counter() - start) as resp:
            return await _read_events(resp, api, result, start, max_tokens)
    except ConnectFailed as exc:
        raise _Retry(connect_kind(exc.__cause__), None, None) from exc.__cause__


def connect_kind(cause: BaseException | None) -> str:
    """The error kind of a connection that could not be opened: TLS said apart."""
    if isinstance(cause, ssl.SSLCertVerificationError):
        return "tls_certificate"
    if isinstance(cause, ssl.SSLError):
        return "tls"
    return "connect"


async def _read_events(
    resp: Response, api: Api, result: RequestResult, start: float, max_tokens: int
) -> str | None:
    if resp.status != 200:
        await _refuse(resp, result)
    last: float | None = None
    done = False
    end = start
    perf = time.perf_counter
    itl = result.itl_s
    reported: object = None
    try:
        async for ev in sse_events(resp.iter_raw(), perf):
            now = ev.at
            event = ev.data
            if event is None:
                done, end = True, now
                break
            if "error" in event:
                # vLLM reports failures after the 200 header as an error event in the stream
                result.error_detail = str(event["error"])[:200]
                return "stream_error"
            text = _chunk_text(api, event)
            usage = event.get("usage")
            if isinstance(usage, dict) and "completion_tokens" in usage:
                reported = usage["completion_tokens"]
            if text:
                if last is None:
                    result.ttft_s = now - start
                else:
                    itl.append(now - last)
                last = now
                result.content_chunks += 1
            result.parse_overhead_s += perf() - now
    except EventError as exc:
        result.error_detail = str(exc)
        return "bad_response"
    result.end_s = end if done else perf()
    if not done:
        result.error_detail = "stream ended before [DONE]"
        return "dropped_stream"
    return _finish(result, reported, max_tokens)


async def _refuse(resp: Response, result: RequestResult) -> NoReturn:
    """A status other than 200: its kind, and the start of its body as the detail."""
    status = resp.status
    detail = (await resp.read(4096)).decode("utf-8", "replace")[:200]
    result.error_detail = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    kind = (
        "http_5xx"
        if status >= 500
        else "http_429"
        if status == 429
        else "http_404"
        if status == 404
        else "http_4xx"
        if status >= 400
        else "bad_response"
    )
    raise _Retry(kind, status, resp.headers.get("retry-after"))


def _finish(result: RequestResult, reported: object, max_tokens: int) -> str | None:
    """A stream read to [DONE]: its output tokens (the usage the server reported, checked
    against the chunks, else one per chunk), or the kind of fault it shows."""
    if result.ttft_s is None:
        result.error_detail = "no content in the stream"
        return "bad_response"
    result.e2e_s = result.end_s - result.start_s
    if reported is None:
        # No usage from the server: fall back to one token per chunk (a lower bound).
        result.output_tokens = result.content_chunks
        return None
    checked = checked_completion_tokens(
        reported, streamed_chunks=result.content_chunks, max_tokens=max_tokens
    )
    if checked.tokens is None:
        result.error_detail = checked.reason or "bad usage"
        return "bad_response"
    result.output_tokens = checked.tokens
    result.usage_reported = True
    return None


async def send_request(
    client: StreamClient,
    model: str,
    spec: RequestSpec,
    api: Api = "completions",
    max_retries: int = 2,
    ignore_eos: bool = True,
    retry_backoff_s: float = 0.05,
) -> RequestResult:
    """Send one streaming request, classify any fault, retry only before the first byte."""
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    body = json_io.strict(request_body(api, model, spec, ignore_eos)).encode()
    retries = 0
    start = time.perf_counter()
    while True:
        result = RequestResult(retries=retries)
        delay: float | None = None
        try:
            kind = await _stream_once(client, path, body, api, result, start, spec.max_tokens)
        except _Retry as exc:
            kind = exc.kind
            if kind in ("connect", "tls", "tls_certificate"):
                cause = exc.__cause__
                result.error_detail = f"{type(cause).__name__}: {cause}"[:200]
            delay = (
                None
                if kind.startswith("tls")
                else retry_delay(
                    retries,
                    status=exc.status,
                    retry_after=exc.retry_after,
                    backoff_s=retry_backoff_s,
                    cap_s=client.retry_after_cap_s,
                    now_epoch_s=time.time(),
                )
            )
        except TimeoutError:
            kind = "timeout"
            result.error_detail = (
                f"no answer within the request deadline ({client.deadlines.total_s:g} s total,"
                f" {client.deadlines.first_byte_s:g} s to first byte,"
                f" {client.deadlines.connect_s:g} s to connect)"
            )
        except ProtocolError as exc:
            kind, result.error_detail = "dropped_stream", str(exc)[:200]
        except OSError as exc:
            kind, result.error_detail = "dropped_stream", f"{type(exc).__name__}: {exc}"[:200]
        if kind is None:
            return result
        elapsed = time.perf_counter() - start
        if delay is None or retries >= max_retries or elapsed + delay >= client.deadlines.total_s:
            result.error = kind
            result.start_s = start
            result.end_s = result.end_s or time.perf_counter()
            return result
        retries += 1
        await asyncio.sleep(delay)


@dataclass(frozen=True)
class MetricsScrape:
    """One GET /metrics: its text, or why there is none (said as the server answered)."""

    text: str | None
    missing: str | None = None


#: Why /metrics gave no text, by the status it answered with.
_REFUSED = {
    401: "unauthorized: it wants credentials this run did not send or that it refused",
    403: "forbidden: the credentials this run sent may not read it",
}


def metrics_missing(status: int) -> str:
    """Why a /metrics answer with this (non-200) status gives no counters, as the server said
    it: 404 is an endpoint that does not exist, 401/403 one that refused this client."""
    if status == 404:
        return "the server has no /metrics endpoint (HTTP 404)"
    if status in _REFUSED:
        return (
            f"/metrics answered HTTP {status} ({_REFUSED[status]}; pass the key it expects,"
            " --api-key)"
        )
    return f"/metrics answered HTTP {status}, not the counters"


async def scrape(client: StreamClient) -> MetricsScrape:
    """The raw Prometheus text of /metrics, or why there is none."""
    try:
        status, body = await client.get("/metrics")
    except TimeoutError:
        return MetricsScrape(None, "/metrics did not answer within the request deadline")
    except (OSError, ProtocolError) as exc:
        why = f"{type(exc).__name__}: {exc}"[:160]
        return MetricsScrape(None, f"/metrics could not be read ({why})")
    if status != 200:
        return MetricsScrape(None, metrics_missing(status))
    return MetricsScrape(body.decode("utf-8", "replace"))
