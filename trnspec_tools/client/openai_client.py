"""A small, bounded, synchronous client for OpenAI-compatible servers (vLLM): what smoke checks
and the demo send.

It runs the benchmark's request path (client.http_stream, client.bench_client.StreamClient) on a
private event loop, so both tools share one HTTP implementation, one retry rule
(client.retry_rule: retry only before the first byte of an answer, Retry-After honoured with a
cap) and one per-request deadline (connect, first byte, whole request). A stream that fails after
events arrived is an error of that request: it is never re-sent and spliced.

Requests ask for `return_token_ids` (a vLLM extension) so greedy outputs can be compared token
for token; servers that ignore it still work, and `token_ids` is then None. Replies are checked
as they are read: a reply of the wrong shape is an EndpointError naming what was wrong, never an
AttributeError deep in a caller.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from trnspec.boundary import json_io
from trnspec.boundary.errors import BoundaryError
from trnspec.config.pod_contract import MODELS_PATH

from trnspec_tools.boundary.endpoint import BoundKey
from trnspec_tools.boundary.sse import EventError, sse_events
from trnspec_tools.boundary.usage import token_count
from trnspec_tools.client.bench_client import ConnectFailed, StreamClient
from trnspec_tools.client.http_stream import Deadlines, ProtocolError
from trnspec_tools.client.retry_rule import DEFAULT_RETRY_AFTER_CAP_S, retry_delay
from trnspec_tools.client.served_model import ModelListError, served_model_ids
from trnspec_tools.client.served_model import json_shape as _shape

DEFAULT_DEADLINES = Deadlines()


class EndpointError(RuntimeError):
    """A request failed for good (after retries), with what was asked and what came back."""


@dataclass(frozen=True)
class Generation:
    """One choice of a completion or chat response, streamed or not, normalised."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    token_ids: list[int] | None
    chunks: int = 1
    """How many content-carrying chunks a streamed response had (1 when not streamed)."""
    elapsed_s: float = 0.0
    chunk_sizes: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    events: list[Any] | None = None


class _Retryable(Exception):
    def __init__(self, detail: str, status: int | None, retry_after: str | None) -> None:
        super().__init__(detail)
        self.status, self.retry_after = status, retry_after


class OpenAIClient:
    """Bound to one base URL ("http://host:port", without /v1)."""

    def __init__(
        self,
        base_url: str,
        *,
        deadlines: Deadlines = DEFAULT_DEADLINES,
        retries: int = 2,
        backoff_s: float = 0.5,
        api_key: str | BoundKey | None = None,
        retry_after_cap_s: float = DEFAULT_RETRY_AFTER_CAP_S,
    ) -> None:
        self.retries = retries
        self.backoff_s = backoff_s
        self._runner = asyncio.Runner()
        self._client = StreamClient(base_url, deadlines, api_key, retry_after_cap_s)
        self.base_url = self._client.base_url

    def close(self) -> None:
        try:
            self._runner.run(self._client.pool.aclose())
        finally:
            self._runner.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- the request path -----------------------------------------------------------------

    async def _once(self, method: str, path: str, body: bytes | None, *, stream: bool) -> _Answer:
        try:
            async with self._client.opened(method, path, body) as resp:
                if resp.status != 200 or not stream:
                    data = await resp.read(16 * 1024 * 1024)
                    if resp.status >= 300:
                        detail = data.decode("utf-8", "replace")[:300]
                        raise _Retryable(
                            f"HTTP {resp.status}: {detail}",
                            resp.status,
                            resp.headers.get("retry-after"),
                        )
                    return _Answer(resp.status, resp.headers, data)
                return _Answer(200, resp.headers, b"", await _read_sse(resp))
        except ConnectFailed as exc:
            raise _Retryable(f"cannot connect: {exc}", None, None) from exc.__cause__

    async def _call(
        self, method: str, path: str, body: dict[str, Any] | None, *, stream: bool = False
    ) -> _Answer:
        data = None if body is None else json_io.strict(body).encode()
        what = f"{method} {self.base_url}{path}" + (" (stream)" if stream else "")
        start = time.monotonic()
        for attempt in range(self.retries + 1):
            try:
                return await self._once(method, path, data, stream=stream)
            except _Retryable as exc:
                delay = retry_delay(
                    attempt,
                    status=exc.status,
                    retry_after=exc.retry_after,
                    backoff_s=self.backoff_s,
                    cap_s=self._client.retry_after_cap_s,
                    now_epoch_s=time.time(),
                )
                spent = time.monotonic() - start
                if (
                    delay is None
                    or attempt >= self.retries
                    or spent + delay >= self._client.deadlines.total_s
                ):
                    suffix = f" after retries ({attempt})" if attempt else ""
                    raise EndpointError(f"{what} failed{suffix}: {exc}") from None
                await asyncio.sleep(delay)
            except TimeoutError:
                d = self._client.deadlines
                raise EndpointError(
                    f"{what}: no complete answer within the request deadline ({d.total_s:g} s"
                    f" total, {d.first_byte_s:g} s to first byte, {d.connect_s:g} s to connect);"
                    " not retried (the server may still be generating)"
                ) from None
            except (ProtocolError, OSError) as exc:
                raise EndpointError(f"{what}: the connection broke: {exc}") from None
        raise AssertionError("unreachable")

    def _run(self, method: str, path: str, body: dict[str, Any] | None, **kw: Any) -> _Answer:
        return self._runner.run(self._call(method, path, body, **kw))

    def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        answer = self._run(method, path, body)
        try:
            return json_io.loads(answer.body, f"{method} {path} reply")
        except BoundaryError as exc:
            raise EndpointError(str(exc)) from None

    # --- the API ---------------------------------------------------------------------------

    def models(self) -> list[str]:
        try:
            return served_model_ids(self._json("GET", MODELS_PATH))
        except ModelListError as exc:
            raise EndpointError(str(exc)) from None

    def metrics_text(self) -> str:
        answer = self._run("GET", "/metrics", None)
        return answer.body.decode("utf-8", "replace")

    def complete(self, model: str, prompt: str, **params: Any) -> Generation:
        body = {"model": model, "prompt": prompt, "return_token_ids": True, **params}
        return self._generate("/v1/completions", body, chat=False)

    def chat(self, model: str, message: str, **params: Any) -> Generation:
        body = {
            "model": model,
            "messages": [{"role": "user", "content": message}],
            "return_token_ids": True,
            **params,
        }
        return self._generate("/v1/chat/completions", body, chat=True)

    def _generate(self, path: str, body: dict[str, Any], *, chat: bool) -> Generation:
        start = time.perf_counter()
        if body.get("stream"):
            body = {**body, "stream_options": {"include_usage": True}}
            answer = self._run("POST", path, body, stream=True)
            return _from_events(answer.events or [], chat=chat, start=start, path=path)
        data = self._json("POST", path, body)
        choice = _first_choice(data, path)
        usage = _usage(data)
        if chat:
            message = choice.get("message")
            if not isinstance(message, dict):
                raise EndpointError(f"POST {path}: choices[0].message is {_shape(message)}")
            text = message.get("content") or ""
        else:
            text = choice.get("text") or ""
        if not isinstance(text, str):
            raise EndpointError(f"POST {path}: the generated text is {_shape(text)}")
        return Generation(
            text=text,
            finish_reason=_str_or_none(choice.get("finish_reason")),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            total_tokens=usage.get("total_tokens"),
            token_ids=_ids(choice.get("token_ids")),
            elapsed_s=time.perf_counter() - start,
        )


async def _read_sse(resp: Any) -> list[Any]:
    """Every event up to [DONE] (boundary.sse), parsed; a stream that ends without [DONE] or
    carries an unusable event raises (no partial result is passed on as if complete)."""
    events: list[Any] = []
    try:
        async for ev in sse_events(resp.iter_raw()):
            if ev.done:
                return events
            events.append(ev.data)
    except EventError as exc:
        raise ProtocolError(str(exc)) from None
    raise ProtocolError(f"the stream ended before [DONE] after {len(events)} events")


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ids(value: object) -> list[int] | None:
    if isinstance(value, list) and all(_int_or_none(v) is not None for v in value):
        return value
    return None


def _usage(doc: dict[str, Any]) -> dict[str, int | None]:
    """Token counts; a missing or malformed usage block gives None counts, not a crash."""
    usage = doc.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return {
        k: token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
    }


def _first_choice(doc: Any, path: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise EndpointError(f"POST {path}: the reply is {_shape(doc)}, not an object")
    if "error" in doc and "choices" not in doc:
        raise EndpointError(f"POST {path}: the server returned an error: {str(doc['error'])[:200]}")
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"POST {path}: the reply has no choice (choices is {_shape(choices)})")
    return choices[0]


def _from_events(events: list[Any], *, chat: bool, start: float, path: str) -> Generation:
    pieces: list[str] = []
    token_ids: list[int] | None = []
    sizes: list[int] = []
    finish_reason = None
    usage: dict[str, int | None] = {}
    for event in events:
        if not isinstance(event, dict):
            raise EndpointError(f"POST {path} (stream): an event is {_shape(event)}")
        if "error" in event:
            raise EndpointError(f"POST {path} (stream): error event: {str(event['error'])[:200]}")
        if isinstance(event.get("usage"), dict):
            usage = _usage(event)
        choices = event.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict):
                continue
            if chat:
                delta = choice.get("delta")
                piece = delta.get("content") if isinstance(delta, dict) else None
            else:
                piece = choice.get("text")
            if isinstance(piece, str) and piece:
                pieces.append(piece)
            ids = _ids(choice.get("token_ids"))
            if ids is None:
                token_ids = None
            elif token_ids is not None:
                token_ids.extend(ids)
                if ids:
                    sizes.append(len(ids))
            if isinstance(choice.get("finish_reason"), str):
                finish_reason = choice["finish_reason"]
    return Generation(
        text="".join(pieces),
        finish_reason=finish_reason,
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        total_tokens=usage.get("total_tokens"),
        token_ids=token_ids or None,
        chunks=len(sizes) or len(pieces),
        elapsed_s=time.perf_counter() - start,
        chunk_sizes=sizes,
    )
