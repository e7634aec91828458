"""Typed settings of the wake path (`serving.wake`): what a request meets while a workload that
scales to zero has no ready replica.

The KEDA HTTP add-on's interceptor sits in front of the serving Service. `hold` keeps the
request open until a replica is ready, at most `hold_seconds`, then answers 503 with
`Retry-After: retry_after_seconds` (a small responder the route falls back to); `reply` answers
that 503 at once while no replica is ready. Either way the request counts as traffic and wakes
the workload, and no client meets a refused connection.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from trnspec.boundary.user_input import Int


class WakeSettings(BaseModel):
    """How the interceptor treats a request at zero replicas (used with `scale_to_zero`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["hold", "reply"] = Field(
        "hold",
        description="hold: wait for a ready replica up to hold_seconds, then 503 + Retry-After; "
        "reply: 503 + Retry-After at once while no replica is ready.",
    )
    hold_seconds: Int = Field(
        300,
        ge=1,
        le=3600,
        description="Longest wait for a ready replica (mode hold); past it, 503 + Retry-After. "
        "Default: a pod restart on a node that is still up (docs/platform.md, cold start).",
    )
    retry_after_seconds: Int = Field(
        600,
        ge=1,
        le=7200,
        description="Retry-After of the 503: the rest of a cold start from a new node.",
    )
    response_header_seconds: Int = Field(
        900,
        ge=10,
        le=7200,
        description="Longest wait for the server's response headers once a replica is ready "
        "(a non-streaming request sends them after the whole generation).",
    )
