"""Acceptance from the user's own traffic: vLLM's spec-decode counters over a window, read from
the Prometheus HTTP API the stack deploys (`/api/v1/query`, instant queries).

Acceptance is a property of the prompts, not of the hardware, so the served figure is the one a
plan should use. Over the window: accepted = increase(vllm:spec_decode_num_accepted_tokens),
drafted = increase(vllm:spec_decode_num_draft_tokens) and drafts =
increase(vllm:spec_decode_num_drafts), summed over every series. The mean accepted length is
tau = 1 + accepted / drafts (the bonus token counts as one), at the served window
k = drafted / drafts; the per-token rate the model uses is the a whose geometric window k gives
tau ((1 - a^(k+1)) / (1 - a) = tau). accepted / drafted is printed beside it, but it is not that
rate (with k = 15 and a = 0.5 it is 0.07). No series, no drafts or a figure out of range in the
window is one error naming --acceptance-from, never a guessed number.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import finite_in
from trnspec.perf.step_time import ModelInputError, alpha_from_tokens_per_step

FLAG = "--acceptance-from"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
DRAFTS = "vllm:spec_decode_num_drafts_total"
_WINDOW = re.compile(r"^([0-9]{1,6})([smhdw])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
#: Shortest and longest window (a minute of traffic is too little; Prometheus keeps ~15 days).
MIN_WINDOW_S, MAX_WINDOW_S = 60, 30 * 86400
#: The longest speculative window read back from the counters.
MAX_K = 64


def window(text: str, flag: str = "--window") -> str:
    """A Prometheus duration such as 30m, 1h or 7d, between a minute and 30 days."""
    m = _WINDOW.match(text.strip())
    seconds = int(m.group(1)) * _SECONDS[m.group(2)] if m else None
    if seconds is None or not MIN_WINDOW_S <= seconds <= MAX_WINDOW_S:
        raise BoundaryError(flag, text, "give a duration from 1m to 30d, e.g. 1h or 7d")
    return text.strip()


@dataclass(frozen=True)
class ServedAcceptance:
    """The acceptance served over a window, and how it was derived."""

    url: str
    window: str
    accepted: float
    drafted: float
    drafts: float
    #: Mean tokens per verification step, and the served window.
    acceptance_length: float
    k: int
    #: The per-token rate of the model (geometric window k gives acceptance_length).
    rate: float

    def describe(self) -> str:
        return (
            f"served over {self.window} at {self.url}: acceptance length"
            f" {self.acceptance_length:.3f} at k={self.k} ({self.drafts:.0f} drafts;"
            f" accepted/drafted {self.accepted / self.drafted:.3f})"
        )


def _sum_query(metric: str, span: str) -> str:
    return f"sum(increase({metric}[{span}]))"


def _scalar(answer: Any, query: str, url: str) -> float | None:
    """The one value of an instant-vector answer; None when no series matched."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if (
        not isinstance(answer, dict)
        or answer.get("status") != "success"
        or not isinstance(data, dict)
    ):
        raise BoundaryError(FLAG, url, f"not a Prometheus answer to {query}")
    result = data.get("result")
    if not isinstance(result, list) or len(result) > 1:
        raise BoundaryError(FLAG, url, f"expected one sum from {query}")
    if not result:
        return None
    value = result[0].get("value") if isinstance(result[0], dict) else None
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], str):
        raise BoundaryError(FLAG, url, f"malformed sample in the answer to {query}")
    try:
        number = float(value[1])
    except ValueError:
        raise BoundaryError(FLAG, url, f"non-numeric sample in the answer to {query}") from None
    return finite_in(number, FLAG, 0.0)


Query = Callable[[str], Any]


def served_acceptance(url: str, span: str, query: Query) -> ServedAcceptance:
    """Read the three counters' increases over `span` through `query` (one instant query each,
    returning the decoded JSON answer) and derive the acceptance (see the module doc)."""
    figures = {}
    for name, metric in (("accepted", ACCEPTED), ("drafted", DRAFT_TOKENS), ("drafts", DRAFTS)):
        q = _sum_query(metric, span)
        figures[name] = _scalar(query(q), q, url)
    accepted, drafted, drafts = figures["accepted"], figures["drafted"], figures["drafts"]
    if accepted is None or drafted is None or drafts is None or drafts < 1 or drafted <= 0:
        raise BoundaryError(
            FLAG,
            url,
            f"no speculative decoding in the last {span} (no spec-decode counters or no drafts);"
            " serve a speculative profile with traffic, or give a longer --window",
        )
    k = round(drafted / drafts)
    tau = 1.0 + accepted / drafts
    if not 1 <= k <= MAX_K or accepted > drafted:
        raise BoundaryError(
            FLAG, url, f"inconsistent counters (k={drafted / drafts:.2f}, accepted > drafted?)"
        )
    try:
        rate = alpha_from_tokens_per_step(min(tau, k + 1.0), k)
    except ModelInputError as err:
        raise BoundaryError(FLAG, url, str(err)) from None
    return ServedAcceptance(url, span, accepted, drafted, drafts, tau, k, rate)
