"""Streaming OpenAI-compatible client that times every chunk, and a /metrics scraper.

Every server fault is turned into a classified RequestResult instead of an exception, because a
benchmark that dies on the first 500 measures nothing; retries are bounded and only happen before
the first token (retrying after tokens were streamed would double-count work and hide the fault).
Times are taken with perf_counter as each SSE event is read; the parse cost of each event is
accumulated so the tool can report its own overhead.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Literal

import httpx

from scripts.bench_workload import RequestSpec

Api = Literal["completions", "chat"]

#: error kinds, as counted in the report
ERROR_KINDS = (
    "http_5xx",
    "http_4xx",
    "stream_error",
    "dropped_stream",
    "timeout",
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


async def _stream_once(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, object],
    api: Api,
    result: RequestResult,
    start: float,
) -> str | None:
    """One attempt. Returns None on success, or the error kind (result holds partial timings).

    Latencies count from `start`, the first attempt, so a retried request shows its real cost.
    """
    result.start_s = start
    last: float | None = None
    done = False
    end = start
    async with client.stream("POST", url, json=body) as resp:
        if resp.status_code >= 500:
            await resp.aread()
            result.error_detail = f"HTTP {resp.status_code}"
            return "http_5xx"
        if resp.status_code >= 400:
            detail = (await resp.aread()).decode("utf-8", "replace")[:200]
            result.error_detail = f"HTTP {resp.status_code}: {detail}"
            return "http_4xx"
        # Read to the end even after [DONE]: leaving a response unread closes its connection,
        # and the next request would pay a new TCP connect inside its TTFT.
        async for line in resp.aiter_lines():
            now = time.perf_counter()
            if done or not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                end = now
                continue
            try:
                event = json.loads(payload)
            except json.JSONDecodeError:
                result.error_detail = f"unparseable event {payload[:80]!r}"
                return "bad_response"
            if isinstance(event, dict) and "error" in event:
                # vLLM reports failures after the 200 header as an error event in the stream
                result.error_detail = str(event["error"])[:200]
                return "stream_error"
            text = _chunk_text(api, event)
            usage = event.get("usage") if isinstance(event, dict) else None
            if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                result.output_tokens = usage["completion_tokens"]
                result.usage_reported = True
            if text:
                if last is None:
                    result.ttft_s = now - start
                else:
                    result.itl_s.append(now - last)
                last = now
                result.content_chunks += 1
            result.parse_overhead_s += time.perf_counter() - now
    if not done:
        end = time.perf_counter()
    result.end_s = end
    if not done:
        result.error_detail = "stream ended before [DONE]"
        return "dropped_stream"
    if result.ttft_s is None:
        result.error_detail = "no content in the stream"
        return "bad_response"
    result.e2e_s = end - start
    if result.output_tokens is None:
        # No usage from the server: fall back to one token per chunk (a lower bound).
        result.output_tokens = result.content_chunks
    return None


async def send_request(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    spec: RequestSpec,
    api: Api = "completions",
    max_retries: int = 2,
    ignore_eos: bool = True,
    retry_backoff_s: float = 0.05,
) -> RequestResult:
    """Send one streaming request, classify any fault, retry only before the first token."""
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    url = base_url.rstrip("/") + path
    body = request_body(api, model, spec, ignore_eos)
    retries = 0
    start = time.perf_counter()
    while True:
        result = RequestResult(retries=retries)
        try:
            kind = await _stream_once(client, url, body, api, result, start)
        except httpx.TimeoutException as exc:
            kind, result.error_detail = "timeout", type(exc).__name__
        except httpx.ConnectError as exc:
            kind, result.error_detail = "connect", str(exc)[:200]
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            kind, result.error_detail = "dropped_stream", f"{type(exc).__name__}: {exc}"[:200]
        except httpx.HTTPError as exc:
            kind, result.error_detail = "connect", f"{type(exc).__name__}: {exc}"[:200]
        if kind is None:
            return result
        retryable = kind in ("http_5xx", "connect") and result.ttft_s is None
        if not retryable or retries >= max_retries:
            result.error = kind
            result.start_s = start
            result.end_s = result.end_s or time.perf_counter()
            return result
        retries += 1
        await asyncio.sleep(retry_backoff_s * retries)


async def scrape_metrics(client: httpx.AsyncClient, base_url: str) -> str | None:
    """The raw Prometheus text of /metrics, or None if the server does not expose it."""
    try:
        resp = await client.get(base_url.rstrip("/") + "/metrics", timeout=10.0)
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    return resp.text
