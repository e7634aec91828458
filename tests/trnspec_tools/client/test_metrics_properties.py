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
    acceptance_between,
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


# --- reading a scrape ----------------------------------------------------------------------------


@SETTINGS
@given(st.integers(0, MAX_POSITIONS - 1), st.integers(1, 3))
def test_a_position_label_is_read_as_its_decimal_value_with_or_without_zero_padding(
    pos: int, width: int
) -> None:
    label = str(pos).zfill(width)
    got = SpecDecodeCounters.from_samples(counters({DRAFTS: 5.0}, {label: 2.0}))
    assert got.invalid is None
    assert got.accepted_per_position == {pos: 2.0}


def test_a_per_position_sample_without_a_position_label_counts_at_position_zero() -> None:
    samples = [Sample(f"{ACCEPTED_PER_POS}_total", {"model_name": "m"}, 3.0)]
    got = SpecDecodeCounters.from_samples(samples)
    assert got.invalid is None
    assert got.accepted_per_position == {0: 3.0}


other_metrics = st.lists(
    st.builds(
        Sample,
        st.sampled_from(["vllm:num_requests_running", "vllm:prompt_tokens_total", "process_cpu"]),
        st.just({"model_name": "m"}),
        st.floats(allow_nan=True),
    ),
    max_size=5,
)


@SETTINGS
@given(other_metrics, st.integers(0, 100))
def test_a_scrape_without_the_counters_reads_as_the_empty_counters(
    others: list[Sample], drafts: int
) -> None:
    """Other metrics, and another model's counters when one model is asked for, leave the
    counters absent (present False), zero and valid: the same as no scrape at all."""
    other_model = counters({DRAFTS: drafts}, {"0": 1.0}, {"model_name": "n"})
    assert SpecDecodeCounters.from_samples(others) == SpecDecodeCounters()
    assert SpecDecodeCounters.from_samples(others + other_model, "m") == SpecDecodeCounters()


spec_samples = st.lists(
    st.tuples(
        st.sampled_from([DRAFTS, DRAFT_TOKENS, ACCEPTED_TOKENS, ACCEPTED_PER_POS, "vllm:other"]),
        st.sampled_from(["0", "1", "7", "64", "x", ""]),
        st.one_of(st.integers(0, 1000).map(float), st.sampled_from([-1.0, float("nan")])),
    ).map(lambda t: Sample(f"{t[0]}_total", {"model_name": "m", "position": t[1]}, t[2])),
    max_size=10,
)


@SETTINGS
@given(spec_samples.flatmap(lambda s: st.tuples(st.just(s), st.permutations(s))))
def test_the_totals_do_not_depend_on_the_order_of_the_samples(
    pair: tuple[list[Sample], list[Sample]],
) -> None:
    """Every sample is read, also after a bad one: only which reason is kept may differ."""
    first, second = (SpecDecodeCounters.from_samples(s) for s in pair)
    assert (first.invalid is None) == (second.invalid is None)
    assert dataclasses.replace(first, invalid=None) == dataclasses.replace(second, invalid=None)


@SETTINGS
@given(st.text(min_size=1, max_size=2000).filter(lambda s: not s.isdigit()))
def test_a_hostile_position_label_gives_a_one_line_reason_of_bounded_length(label: str) -> None:
    got = SpecDecodeCounters.from_samples(counters({DRAFTS: 1.0}, {label: 1.0}))
    assert got.invalid is not None
    assert "\n" not in got.invalid
    assert len(got.invalid) <= 160


# --- deltas --------------------------------------------------------------------------------------

GOOD = {DRAFTS: 10.0, DRAFT_TOKENS: 40.0, ACCEPTED_TOKENS: 20.0}


@pytest.mark.parametrize(
    "bad",
    [
        counters({**GOOD, DRAFTS: float("nan")}, {"0": 5.0}),
        counters({**GOOD, ACCEPTED_TOKENS: -3.0}, {"0": 5.0}),
        counters(GOOD, {"0": 5.0, "abc": 1.0}),
    ],
)
@pytest.mark.parametrize("bad_first", [True, False])
def test_an_unusable_scrape_on_either_side_gives_no_figure_and_says_why(
    bad: list[Sample], bad_first: bool
) -> None:
    good = SpecDecodeCounters.from_samples(counters({k: 10 * v for k, v in GOOD.items()}, {}))
    unusable = SpecDecodeCounters.from_samples(bad)
    assert unusable.invalid is not None
    pair = (unusable, good) if bad_first else (SpecDecodeCounters(present=True), unusable)
    checked = checked_delta(*pair)
    assert checked.delta is None
    assert checked.reason is not None and unusable.invalid in checked.reason


BACKWARDS_NAMES = {
    DRAFTS: "num_drafts",
    DRAFT_TOKENS: "num_draft_tokens",
    ACCEPTED_TOKENS: "num_accepted_tokens",
}


@SETTINGS
@given(
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.lists(st.booleans(), min_size=0, max_size=4),
    st.integers(1, 20),
)
def test_the_reason_for_counters_that_went_backwards_lists_exactly_those_counters(
    down: list[bool], down_pos: list[bool], step: int
) -> None:
    if not any(down + down_pos):
        down[0] = True
    base = 1000.0
    before_values = dict.fromkeys(BACKWARDS_NAMES, base)
    after_values = {
        name: base - step if d else base + step
        for name, d in zip(BACKWARDS_NAMES, down, strict=True)
    }
    before_pos = {str(p): base for p in range(len(down_pos))}
    after_pos = {str(p): base - step if d else base for p, d in enumerate(down_pos)}
    checked = checked_delta(
        SpecDecodeCounters.from_samples(counters(before_values, before_pos)),
        SpecDecodeCounters.from_samples(counters(after_values, after_pos)),
    )
    assert checked.delta is None and checked.reason is not None
    listed = checked.reason[checked.reason.index("(") + 1 : checked.reason.index(")")]
    expected = {BACKWARDS_NAMES[n] for n, d in zip(BACKWARDS_NAMES, down, strict=True) if d}
    expected |= {f"accepted_per_pos[{p}]" for p, d in enumerate(down_pos) if d}
    assert set(listed.split(", ")) == expected


@SETTINGS
@given(st.integers(0, 7), st.integers(0, 5))
def test_a_position_series_that_vanishes_reads_as_zero_so_a_counted_one_went_backwards(
    pos: int, had: int
) -> None:
    before = SpecDecodeCounters.from_samples(counters(GOOD, {str(pos): float(had)}))
    after = SpecDecodeCounters.from_samples(counters({k: 2 * v for k, v in GOOD.items()}, {}))
    checked = checked_delta(before, after, 8)
    if had:
        assert checked.delta is None
        assert f"accepted_per_pos[{pos}]" in str(checked.reason)
    else:
        assert checked.delta is not None
        assert checked.delta.accepted_per_position == {pos: 0.0}
        assert acceptance(checked.delta).per_position[pos] == 0.0


@SETTINGS
@given(st.integers(1, 8), st.integers(0, 8), st.integers(1, 10), st.integers(0, 9))
def test_acceptances_at_a_position_at_or_past_k_give_no_figure_and_name_it(
    k: int, past: int, accepted: int, extra_drafts: int
) -> None:
    pos = min(k + past, MAX_POSITIONS - 1)
    drafts = accepted + extra_drafts
    before = SpecDecodeCounters.from_samples(counters(dict.fromkeys(GOOD, 0.0), {str(pos): 0.0}))
    after = SpecDecodeCounters.from_samples(
        counters(
            {DRAFTS: drafts, DRAFT_TOKENS: k * drafts, ACCEPTED_TOKENS: accepted},
            {str(pos): float(accepted)},
        )
    )
    checked = checked_delta(before, after, k)
    assert checked.delta is None
    assert checked.reason is not None
    assert f"position {pos}" in checked.reason and f"k={k}" in checked.reason
    # Without k (the window is every position read), the same delta is consistent.
    unbounded = checked_delta(before, after)
    assert unbounded.delta is not None
    assert acceptance(unbounded.delta).per_position[pos] == accepted / drafts


@SETTINGS
@given(st.integers(1, 50), st.integers(1, 8))
def test_a_consistent_delta_is_present_counters(drafts: int, k: int) -> None:
    before = SpecDecodeCounters.from_samples(counters(dict.fromkeys(GOOD, 0.0), {}))
    after = SpecDecodeCounters.from_samples(
        counters({DRAFTS: drafts, DRAFT_TOKENS: k * drafts, ACCEPTED_TOKENS: drafts}, {})
    )
    checked = checked_delta(before, after, k)
    assert checked.delta is not None
    assert checked.delta.present is True
    assert after.minus(before).present is True


# --- figures -------------------------------------------------------------------------------------


@SETTINGS
@given(st.integers(1, 100), st.integers(0, 200))
def test_without_per_position_series_there_are_no_per_position_figures(
    drafts: int, accepted: int
) -> None:
    delta = SpecDecodeCounters(drafts, 2.0 * drafts + accepted, accepted, {}, present=True)
    assert acceptance(delta).per_position == []


@SETTINGS
@given(st.sets(st.integers(0, 7), min_size=1))
def test_per_position_figures_are_absent_when_nothing_was_drafted(positions: set[int]) -> None:
    delta = SpecDecodeCounters(0.0, 0.0, 0.0, dict.fromkeys(sorted(positions), 0.0), present=True)
    acc = acceptance(delta)
    assert acc.per_position == [None] * (max(positions) + 1)
    assert acc.acceptance_rate is None and acc.mean_accepted_length is None


def two_model_text(a: tuple[int, int, int], b: tuple[int, int, int]) -> str:
    lines = []
    for name, i in ((DRAFTS, 0), (DRAFT_TOKENS, 1), (ACCEPTED_TOKENS, 2)):
        lines += [
            f"# TYPE {name} counter",
            f'{name}_total{{model_name="a"}} {a[i]}',
            f'{name}_total{{model_name="b"}} {b[i]}',
        ]
    return "\n".join(lines) + "\n"


@st.composite
def model_counts(draw: st.DrawFn) -> tuple[int, int, int]:
    drafts = draw(st.integers(0, 1000))
    draft_tokens = draw(st.integers(drafts, 4 * drafts))
    return drafts, draft_tokens, draw(st.integers(0, draft_tokens))


@SETTINGS
@given(model_counts(), model_counts(), model_counts(), model_counts())
def test_the_figures_for_one_model_ignore_the_other_model_in_both_scrapes(
    a0: tuple[int, int, int],
    a_step: tuple[int, int, int],
    b0: tuple[int, int, int],
    b_step: tuple[int, int, int],
) -> None:
    def plus(x: tuple[int, int, int], y: tuple[int, int, int]) -> tuple[int, int, int]:
        return (x[0] + y[0], x[1] + y[1], x[2] + y[2])

    before = two_model_text(a0, b0)
    after = two_model_text(plus(a0, a_step), plus(b0, b_step))
    alone = acceptance_between(
        two_model_text(a0, (0, 0, 0)), two_model_text(plus(a0, a_step), (0, 0, 0)), "a"
    )
    assert acceptance_between(before, after, "a") == alone
    if a_step[0] and a_step[1]:
        assert alone.drafts == a_step[0] and alone.accepted_tokens == a_step[2]
