"""An OpenAI `usage` block, and the completion-token count checked against what was streamed.

A count is used only when it is an integer that physics allows: at least one token per streamed
content chunk, at most max_tokens, and (when k is known) at most k+1 tokens per chunk, since one
speculative step emits at most k+1 tokens. Otherwise the count is absent with the reason: a server
that reports 1,600 tokens for 16 streamed chunks would otherwise give a throughput 100x too high.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Largest token count accepted in a usage block (far beyond any context length).
MAX_TOKENS_REPORTED = 10_000_000


def token_count(value: object) -> int | None:
    """A usage count: a non-negative int (not a bool, not a float), else None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKENS_REPORTED else None


@dataclass(frozen=True)
class CheckedTokens:
    """A completion-token count that is consistent with the stream, or why it is not."""

    tokens: int | None
    reason: str | None = None


def checked_completion_tokens(
    reported: object, *, streamed_chunks: int, max_tokens: int, k: int | None = None
) -> CheckedTokens:
    """The server's completion_tokens if consistent with `streamed_chunks` content chunks and
    `max_tokens` (and k+1 tokens per chunk when k is known), else None and the reason."""
    tokens = token_count(reported)
    if tokens is None:
        return CheckedTokens(None, f"usage.completion_tokens={reported!r:.40} is not a count")
    if tokens > max_tokens:
        return CheckedTokens(
            None, f"usage says {tokens} completion tokens, more than max_tokens={max_tokens}"
        )
    if tokens < streamed_chunks:
        return CheckedTokens(
            None, f"usage says {tokens} completion tokens for {streamed_chunks} streamed chunks"
        )
    if k is not None and tokens > streamed_chunks * (k + 1):
        return CheckedTokens(
            None,
            f"usage says {tokens} completion tokens for {streamed_chunks} streamed chunks: more"
            f" than k+1={k + 1} per chunk",
        )
    return CheckedTokens(tokens)
