"""Speculative-decoding acceptance from vLLM's Prometheus `/metrics` text. Pure: no HTTP.

vLLM (V1) exports four counters for speculative decoding, per engine (and model) label set:
`vllm:spec_decode_num_drafts`, `vllm:spec_decode_num_draft_tokens`,
`vllm:spec_decode_num_accepted_tokens` and `vllm:spec_decode_num_accepted_tokens_per_pos`
(labelled by `position`), each with the `_total` suffix in the exposition. Counters only grow, so
a measurement is the difference of two scrapes taken around a workload:

- acceptance rate     = d(accepted_tokens) / d(draft_tokens)
- mean accepted length = 1 + d(accepted_tokens) / d(drafts)   (the bonus token counts as one)
- acceptance at position p = d(accepted_tokens_per_pos{position=p}) / d(drafts)

A delta is used only when it is consistent (`checked_delta`): every counter non-negative over the
window, accepted <= drafted, and no reset between the scrapes (a changed `_created` timestamp,
which prometheus_client exports per series, or any counter that went down: a server restart).
Otherwise the figures are absent with the reason, never a number.

Every sample is checked as it is read (`SpecDecodeCounters.from_samples`): a counter value must be
finite and non-negative (NaN would pass every later comparison, since all are false), and a
`position` label a decimal integer of at most three digits below MAX_POSITIONS (a label of
999999999 would otherwise size a billion-entry list; vLLM never pads it). A scrape that breaks
either rule keeps the reason in `invalid`, and every figure from it is absent with that reason.
Each series (a counter's name and its full label set) is counted once, never summed with itself:
a series exported twice with one value (`foo_total` beside a bare `foo`) counts once, with two
values it is refused, and so is a counter exported under different label sets (the same counter
with and without `engine`/`model_name`: one may be the total of the others). Series with the
same label names and different values (engines) are summed.
With k known (`checked_delta(..., k=)`), positions must be below k and draft tokens at most k per
draft, so the mean accepted length is at most k+1.

Bench, smoke, tune and the demo use this module so the figures mean the same everywhere.
Parsing uses prometheus_client's own text parser (a vLLM dependency) rather than a regex.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from prometheus_client.parser import text_string_to_metric_families
from trnspec.boundary.text import printable

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
SPEC_DECODE_COUNTERS = (DRAFTS, DRAFT_TOKENS, ACCEPTED_TOKENS, ACCEPTED_PER_POS)
#: Highest speculative window whose per-position counters are read (vLLM's k is a few tokens).
MAX_POSITIONS = 64


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


def _position(label: str) -> int | None:
    """A `position` label of at most three digits as an int in 0..MAX_POSITIONS-1, else None."""
    if not (label.isascii() and label.isdigit()) or len(label) > 3:
        return None
    position = int(label)
    return position if position < MAX_POSITIONS else None


def _counter_value_name(name: str) -> str:
    """`foo` for both the `foo_total` sample and a bare `foo` sample of an untyped metric."""
    return name.removesuffix("_total")


def _series_values(
    series: Mapping[tuple[str, tuple[tuple[str, str], ...]], list[float]],
    label_sets: Mapping[str, set[tuple[str, ...]]],
) -> tuple[dict[tuple[str, tuple[tuple[str, str], ...]], float], str | None]:
    """One value per series (a counter's name and its full label set), and why the scrape
    cannot be used, if it cannot. A series exported twice with one value (`foo_total` beside a
    bare `foo`, or a line repeated) counts once; with two values it is refused. A counter whose
    series carry different label names (one with `engine` and `model_name`, one with none) is
    refused too: the one with fewer labels may be the total of the others, and summing them
    would count the same drafts twice (an acceptance of half the truth). Series of one counter
    with the same label names and different values (engines) are its parts, summed by the
    caller. Independent of the order of the samples."""
    why = None
    for name in sorted(label_sets):
        if len(sets := label_sets[name]) > 1:
            shown = " and ".join("{" + ",".join(labels) + "}" for labels in sorted(sets)[:2])
            why = why or (
                f"{name} is exported with different label sets ({shown}): an aggregate beside"
                " its parts, or two exporters; refused rather than counted twice"
            )
    values = {}
    for key, seen in series.items():
        if len(set(seen)) > 1:
            labels = ",".join(f"{k}={v!r}" for k, v in key[1])
            why = why or (
                f"{key[0]}{{{printable(labels, 120)}}} is exported {len(seen)} times with"
                f" different values ({min(seen):g} to {max(seen):g}); refused rather than summed"
            )
            continue
        values[key] = seen[0]
    return values, why


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
    created: Mapping[str, float] = field(default_factory=dict)
    """The `_created` timestamp of each counter series (name and labels): a change between two
    scrapes means the counters were reset (the process restarted)."""
    invalid: str | None = None
    """Why this scrape's counters cannot be used (a NaN, infinite or negative value, a bad
    `position` label), or None."""

    @classmethod
    def from_samples(
        cls, samples: list[Sample], model_name: str | None = None
    ) -> SpecDecodeCounters:
        """The counters of one scrape, each series counted once (see `_series_values`)."""
        series: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = defaultdict(list)
        positions: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        label_sets: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        present = False
        created: dict[str, float] = {}
        invalid: str | None = None
        for sample in samples:
            is_created = sample.name.endswith("_created")
            name = sample.name.removesuffix("_created") if is_created else sample.name
            name = _counter_value_name(name)
            if name not in SPEC_DECODE_COUNTERS:
                continue
            if model_name is not None and sample.labels.get("model_name", model_name) != model_name:
                continue
            if is_created:
                created[f"{name}{sorted(sample.labels.items())}"] = sample.value
                continue
            present = True
            if not (math.isfinite(sample.value) and sample.value >= 0):
                invalid = invalid or f"{sample.name} is {sample.value!r}, not a finite count >= 0"
                continue
            key = (name, tuple(sorted(sample.labels.items())))
            if name == ACCEPTED_PER_POS:
                position = _position(sample.labels.get("position", "0"))
                if position is None:
                    label = printable(sample.labels.get("position"), 40)
                    invalid = invalid or (
                        f"{sample.name} has position={label!r}, not an integer in"
                        f" 0..{MAX_POSITIONS - 1}"
                    )
                    continue
                positions[key] = position
            series[key].append(sample.value)
            label_sets[name].add(tuple(sorted(sample.labels)))
        values, why = _series_values(series, label_sets)
        totals: dict[str, float] = defaultdict(float)
        per_pos: dict[int, float] = defaultdict(float)
        for key, value in values.items():
            if key in positions:
                per_pos[positions[key]] += value
            else:
                totals[key[0]] += value
        return cls(
            drafts=totals[DRAFTS],
            draft_tokens=totals[DRAFT_TOKENS],
            accepted_tokens=totals[ACCEPTED_TOKENS],
            accepted_per_position=dict(sorted(per_pos.items())),
            present=present,
            created=created,
            invalid=invalid or why,
        )

    @classmethod
    def from_text(cls, text: str, model_name: str | None = None) -> SpecDecodeCounters:
        return cls.from_samples(parse_exposition(text), model_name)

    def minus(self, earlier: SpecDecodeCounters) -> SpecDecodeCounters:
        """The raw difference from `earlier` (a reset shows as negative: use checked_delta)."""
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

    @property
    def k_used(self) -> float | None:
        """Draft tokens per draft: the window the server actually ran over the interval (with a
        batch-aware schedule, the batch-weighted mean of the bands' k; a k=0 step drafts
        nothing and is not counted). None when nothing was drafted."""
        return self.draft_tokens / self.drafts if self.drafts > 0 else None

    def as_dict(self) -> dict[str, object]:
        return {
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted_tokens": self.accepted_tokens,
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "per_position": self.per_position,
        }


@dataclass(frozen=True)
class CheckedDelta:
    """A counter increase that is safe to turn into figures, or the reason it is not."""

    delta: SpecDecodeCounters | None
    reason: str | None = None


NO_COUNTERS = "the server exports no vllm:spec_decode_* counters"
#: The counters exist but did not move; a caller may estimate acceptance another way.
UNMOVED_COUNTERS = "the counters did not move (nothing was drafted in the window)"


def checked_delta(
    before: SpecDecodeCounters, after: SpecDecodeCounters, k: int | None = None
) -> CheckedDelta:
    """The increase between two scrapes if it is consistent, else None and why.

    Consistent: both scrapes valid (finite, non-negative values, bounded positions), counters
    present in both, the same `_created` timestamps (no reset), no counter went down, something
    was drafted, accepted <= drafted, no position accepted more often than there were drafts,
    and with k known: positions below k and at most k draft tokens per draft."""
    if (invalid := before.invalid or after.invalid) is not None:
        return CheckedDelta(None, f"unusable counters: {invalid}")
    if not after.present and not before.present:
        return CheckedDelta(None, NO_COUNTERS)
    if not after.present or not before.present:
        return CheckedDelta(
            None, "the counters appeared or vanished between the scrapes (a server restart?)"
        )
    changed = [
        k for k in before.created if k in after.created and after.created[k] != before.created[k]
    ]
    if changed:
        return CheckedDelta(
            None, "the counters were reset between the scrapes (_created changed: a restart)"
        )
    delta = after.minus(before)
    negative = [
        name
        for name, value in (
            ("num_drafts", delta.drafts),
            ("num_draft_tokens", delta.draft_tokens),
            ("num_accepted_tokens", delta.accepted_tokens),
            *((f"accepted_per_pos[{p}]", v) for p, v in delta.accepted_per_position.items()),
        )
        if value < 0
    ]
    if negative:
        return CheckedDelta(
            None,
            f"counters went backwards between the scrapes ({', '.join(negative)}): a reset or"
            " restart",
        )
    if delta.drafts == 0 or delta.draft_tokens == 0:
        return CheckedDelta(None, UNMOVED_COUNTERS)
    if delta.accepted_tokens > delta.draft_tokens:
        return CheckedDelta(
            None,
            f"inconsistent counters: {delta.accepted_tokens:.0f} accepted >"
            f" {delta.draft_tokens:.0f} drafted tokens",
        )
    over = [p for p, v in delta.accepted_per_position.items() if v > delta.drafts]
    if over or sum(delta.accepted_per_position.values()) > delta.accepted_tokens:
        return CheckedDelta(
            None, "inconsistent counters: per-position acceptances exceed the drafts"
        )
    window = k if k is not None else MAX_POSITIONS
    if delta.draft_tokens > delta.drafts * window:
        return CheckedDelta(
            None,
            f"inconsistent counters: {delta.draft_tokens:.0f} draft tokens in"
            f" {delta.drafts:.0f} drafts, more than k={window} per draft",
        )
    beyond = [p for p, v in delta.accepted_per_position.items() if p >= window and v > 0]
    if beyond:
        return CheckedDelta(
            None, f"inconsistent counters: acceptances at position {beyond[0]} >= k={window}"
        )
    # Series for positions past the window that did not move say nothing about it (a server
    # exports them for its own k): kept, they would size the per-position figures beyond k.
    inside = {p: v for p, v in delta.accepted_per_position.items() if p < window}
    return CheckedDelta(replace(delta, accepted_per_position=inside))


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
    """Acceptance over the interval between two `/metrics` scrapes (ratios None when the
    delta is not consistent: see checked_delta for why)."""
    first = SpecDecodeCounters.from_text(before, model_name)
    second = SpecDecodeCounters.from_text(after, model_name)
    checked = checked_delta(first, second)
    if checked.delta is None:
        return acceptance(SpecDecodeCounters())
    return acceptance(checked.delta)
