"""Speculative-decoding acceptance from vLLM's Prometheus `/metrics` text. Pure: no HTTP.

vLLM (V1) exports four counters for speculative decoding, per engine (and model) label set:
`vllm:spec_decode_num_drafts`, `vllm:spec_decode_num_draft_tokens`,
`vllm:spec_decode_num_accepted_tokens` and `vllm:spec_decode_num_accepted_tokens_per_pos`
(labelled by `position`), each with the `_total` suffix in the exposition. Counters only grow, so
a measurement is the difference of two scrapes taken around a workload:

- acceptance rate     = d(accepted_tokens) / d(draft_tokens)
- mean accepted length = 1 + d(accepted_tokens) / d(drafts)   (the bonus token counts as one)
- acceptance at position p = d(accepted_tokens_per_pos{position=p}) / d(drafts)

Both the local demo and the benchmark use this module so the figures mean the same everywhere.
Parsing uses prometheus_client's own text parser (a vLLM dependency) rather than a regex.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
SPEC_DECODE_COUNTERS = (DRAFTS, DRAFT_TOKENS, ACCEPTED_TOKENS, ACCEPTED_PER_POS)


class MetricsFormatError(ValueError):
    """The text is not a Prometheus exposition (e.g. an HTML error page was scraped)."""


@dataclass(frozen=True)
class Sample:
    """One exposition line: the sample name as written (with `_total`), its labels and value."""

    name: str
    labels: Mapping[str, str]
    value: float


def parse_exposition(text: str) -> list[Sample]:
    """Every sample in a Prometheus text exposition; raises MetricsFormatError on garbage."""
    try:
        return [
            Sample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text)
            for s in family.samples
        ]
    except (ValueError, TypeError, IndexError) as exc:
        raise MetricsFormatError(f"not a Prometheus text exposition: {exc}") from exc


def _counter_value_name(name: str) -> str:
    """`foo` for both the `foo_total` sample and a bare `foo` sample of an untyped metric."""
    return name.removesuffix("_total")


@dataclass(frozen=True)
class SpecDecodeCounters:
    """One scrape's spec-decode counters, summed over engines (and models, unless filtered)."""

    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted_tokens: float = 0.0
    accepted_per_position: Mapping[int, float] = field(default_factory=dict)
    present: bool = False
    """False when the server exported none of the counters (speculation off, or a build that
    leaves them empty): callers then report acceptance as unknown instead of zero."""

    @classmethod
    def from_samples(
        cls, samples: list[Sample], model_name: str | None = None
    ) -> SpecDecodeCounters:
        totals: dict[str, float] = defaultdict(float)
        per_pos: dict[int, float] = defaultdict(float)
        present = False
        for sample in samples:
            if sample.name.endswith("_created"):
                continue
            name = _counter_value_name(sample.name)
            if name not in SPEC_DECODE_COUNTERS:
                continue
            if model_name is not None and sample.labels.get("model_name", model_name) != model_name:
                continue
            present = True
            if name == ACCEPTED_PER_POS:
                per_pos[int(sample.labels.get("position", "0"))] += sample.value
            else:
                totals[name] += sample.value
        return cls(
            drafts=totals[DRAFTS],
            draft_tokens=totals[DRAFT_TOKENS],
            accepted_tokens=totals[ACCEPTED_TOKENS],
            accepted_per_position=dict(sorted(per_pos.items())),
            present=present,
        )

    @classmethod
    def from_text(cls, text: str, model_name: str | None = None) -> SpecDecodeCounters:
        return cls.from_samples(parse_exposition(text), model_name)

    def minus(self, earlier: SpecDecodeCounters) -> SpecDecodeCounters:
        """The increase since `earlier` (a counter reset, i.e. a restart, shows as negative)."""
        positions = set(self.accepted_per_position) | set(earlier.accepted_per_position)
        return SpecDecodeCounters(
            drafts=self.drafts - earlier.drafts,
            draft_tokens=self.draft_tokens - earlier.draft_tokens,
            accepted_tokens=self.accepted_tokens - earlier.accepted_tokens,
            accepted_per_position={
                p: self.accepted_per_position.get(p, 0.0)
                - earlier.accepted_per_position.get(p, 0.0)
                for p in sorted(positions)
            },
            present=self.present,
        )


@dataclass(frozen=True)
class Acceptance:
    """Acceptance over an interval; the ratios are None when nothing was drafted in it."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    acceptance_rate: float | None
    mean_accepted_length: float | None
    per_position: list[float | None]

    def as_dict(self) -> dict[str, object]:
        return {
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted_tokens": self.accepted_tokens,
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "per_position": self.per_position,
        }


def acceptance(delta: SpecDecodeCounters) -> Acceptance:
    """Acceptance figures from a counter increase (see the module docstring for the formulas)."""
    positions = max(delta.accepted_per_position, default=-1) + 1
    return Acceptance(
        drafts=delta.drafts,
        draft_tokens=delta.draft_tokens,
        accepted_tokens=delta.accepted_tokens,
        acceptance_rate=(
            delta.accepted_tokens / delta.draft_tokens if delta.draft_tokens > 0 else None
        ),
        mean_accepted_length=1 + delta.accepted_tokens / delta.drafts if delta.drafts > 0 else None,
        per_position=[
            delta.accepted_per_position.get(p, 0.0) / delta.drafts if delta.drafts > 0 else None
            for p in range(positions)
        ],
    )


def acceptance_between(before: str, after: str, model_name: str | None = None) -> Acceptance:
    """Acceptance over the interval between two `/metrics` scrapes."""
    first = SpecDecodeCounters.from_text(before, model_name)
    second = SpecDecodeCounters.from_text(after, model_name)
    return acceptance(second.minus(first))
