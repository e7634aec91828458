"""What one request asks for: the prompt and the token budget (sent by client.bench_client,
chosen by bench.workload)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestSpec:
    """One request: the prompt text and how many tokens to ask for."""

    prompt: str
    max_tokens: int
