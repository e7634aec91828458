"""A small, bounded client for OpenAI-compatible servers (vLLM): what smoke checks and the demo
send. Bounded timeouts everywhere, and a few retries only for what is worth retrying (connection
failures and 502/503/504 from a load balancer or a server still warming up).

Requests ask for `return_token_ids` (a vLLM extension) so greedy outputs can be compared token
for token; servers that ignore it still work, and `token_ids` is then None.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

RETRY_STATUS = frozenset({502, 503, 504})
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=120.0, write=10.0, pool=5.0)


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


class OpenAIClient:
    """Bound to one base URL ("http://host:port", without /v1)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.retries = retries
        self.backoff_s = backoff_s
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        last: str = ""
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code not in RETRY_STATUS:
                    if response.is_error:
                        raise EndpointError(
                            f"{method} {path} -> HTTP {response.status_code}: {response.text[:300]}"
                        )
                    return response
                last = f"HTTP {response.status_code}"
            if attempt < self.retries:
                time.sleep(self.backoff_s * 2**attempt)
        raise EndpointError(f"{method} {self.base_url}{path} failed after retries: {last}")

    def models(self) -> list[str]:
        data = self._request("GET", "/v1/models").json()
        return [m["id"] for m in data.get("data", [])]

    def metrics_text(self) -> str:
        return self._request("GET", "/metrics").text

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
            return _from_stream(self._stream(path, body), chat=chat, start=start)
        data = self._request("POST", path, json=body).json()
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        text = (choice["message"].get("content") or "") if chat else choice.get("text", "")
        return Generation(
            text=text,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            total_tokens=usage.get("total_tokens"),
            token_ids=choice.get("token_ids"),
            elapsed_s=time.perf_counter() - start,
        )

    def _stream(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Server-sent events as parsed JSON objects; retried only before the first byte."""
        for attempt in range(self.retries + 1):
            try:
                with self._http.stream("POST", path, json=body) as response:
                    if response.status_code in RETRY_STATUS and attempt < self.retries:
                        time.sleep(self.backoff_s * 2**attempt)
                        continue
                    if response.is_error:
                        response.read()
                        raise EndpointError(
                            f"POST {path} (stream) -> HTTP {response.status_code}: "
                            f"{response.text[:300]}"
                        )
                    for line in response.iter_lines():
                        if not line.startswith("data:"):
                            continue
                        payload = line.removeprefix("data:").strip()
                        if payload == "[DONE]":
                            return
                        yield json.loads(payload)
                    return
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    raise EndpointError(f"POST {path} (stream) failed: {exc}") from exc
                time.sleep(self.backoff_s * 2**attempt)


def _from_stream(events: Iterator[dict[str, Any]], *, chat: bool, start: float) -> Generation:
    pieces: list[str] = []
    token_ids: list[int] | None = []
    sizes: list[int] = []
    finish_reason = None
    usage: dict[str, Any] = {}
    for event in events:
        if event.get("usage"):
            usage = event["usage"]
        for choice in event.get("choices") or []:
            if chat:
                piece = (choice.get("delta") or {}).get("content") or ""
            else:
                piece = choice.get("text") or ""
            if piece:
                pieces.append(piece)
            ids = choice.get("token_ids")
            if ids is None:
                token_ids = None
            elif token_ids is not None:
                token_ids.extend(ids)
                if ids:
                    sizes.append(len(ids))
            if choice.get("finish_reason"):
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
