"""Properties of acceptance from /metrics deltas stated on single samples and scrape pairs:
a negative or infinite count makes the scrape unusable and says which sample and value; a
per-position series that appears between two scrapes counted from zero; series without a
model label belong to every model; the figures' JSON keys are the Acceptance fields."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnspec_tools.client.metrics import (
    ACCEPTED_PER_POS,
    ACCEPTED_TOKENS,
    DRAFT_TOKENS,
    DRAFTS,
    MAX_POSITIONS,
    Acceptance,
    Sample,
    SpecDecodeCounters,
    acceptance,
    checked_delta,
)

SETTINGS = settings(max_examples=100, deadline=None)


def counters(values: dict[str, float], per_pos: dict[str, float], labels=None):
    base = {"model_name": "m"} if labels is None else labels
    samples = [Sample(f"{name}_total", base, v) for name, v in values.items()]
    samples += [
        Sample(f"{ACCEPTED_PER_POS}_total", {**base, "position": p}, v) for p, v in per_pos.items()
    ]
    return samples


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("name", [DRAFTS, DRAFT_TOKENS, ACCEPTED_TOKENS])
def test_a_count_that_is_negative_or_not_finite_makes_the_scrape_unusable(name, bad):
    values = {DRAFTS: 10.0, DRAFT_TOKENS: 40.0, ACCEPTED_TOKENS: 20.0, name: bad}
    got = SpecDecodeCounters.from_samples(counters(values, {}))
    assert got.invalid == f"{name}_total is {bad!r}, not a finite count >= 0"
    assert got.present


@pytest.mark.parametrize("label", ["64", "-1", "x", "1.5"])
def test_a_position_outside_the_window_names_the_window(label):
    got = SpecDecodeCounters.from_samples(counters({DRAFTS: 1.0}, {label: 1.0}))
    assert got.invalid is not None
    assert got.invalid.endswith(f"not an integer in 0..{MAX_POSITIONS - 1}")
    assert repr(label) in got.invalid


@SETTINGS
@given(st.integers(1, 50), st.integers(0, 7), st.integers(0, 50))
def test_a_position_series_that_appears_between_scrapes_counts_from_zero(drafts, pos, accepted):
    accepted = min(accepted, drafts)
    before = SpecDecodeCounters.from_samples(
        counters({DRAFTS: 0.0, DRAFT_TOKENS: 0.0, ACCEPTED_TOKENS: 0.0}, {})
    )
    after = SpecDecodeCounters.from_samples(
        counters(
            {DRAFTS: drafts, DRAFT_TOKENS: 8.0 * drafts, ACCEPTED_TOKENS: accepted},
            {str(pos): accepted},
        )
    )
    checked = checked_delta(before, after, 8)
    assert checked.delta is not None
    assert checked.delta.accepted_per_position == {pos: accepted}
    per_position = acceptance(checked.delta).per_position
    assert per_position[pos] == accepted / drafts
    assert all(v == 0.0 for p, v in enumerate(per_position) if p != pos)


def test_series_without_a_model_label_belong_to_every_model():
    samples = counters({DRAFTS: 3.0}, {}, labels={}) + counters(
        {DRAFTS: 4.0}, {}, {"model_name": "n"}
    )
    assert SpecDecodeCounters.from_samples(samples, "m").drafts == 3.0
    assert SpecDecodeCounters.from_samples(samples, "n").drafts == 7.0
    assert SpecDecodeCounters.from_samples(samples).drafts == 7.0


def test_the_figures_json_keys_are_the_acceptance_fields():
    acc = Acceptance(10.0, 40.0, 20.0, 0.5, 3.0, [0.9, 0.6])
    assert acc.as_dict() == {f.name: getattr(acc, f.name) for f in dataclasses.fields(acc)}
