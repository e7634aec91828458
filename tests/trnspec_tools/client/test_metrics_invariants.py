"""Properties of client.metrics on hostile expositions (issue 24): any sample values (NaN, +Inf,
negative, huge) and any `position` labels give either no figure (with a reason) or figures that
physics allows: finite, acceptance in [0, 1], mean accepted length in [1, k+1], positions < k."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnspec_tools.client.metrics import (
    ACCEPTED_PER_POS,
    ACCEPTED_TOKENS,
    DRAFT_TOKENS,
    DRAFTS,
    MAX_POSITIONS,
    MetricsFormatError,
    SpecDecodeCounters,
    acceptance,
    checked_delta,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

values = st.one_of(
    st.sampled_from(["NaN", "+Inf", "-Inf", "-1", "0", "1e308", "999999999"]),
    st.integers(0, 10_000).map(str),
    st.floats(0, 1e6, allow_nan=False).map(repr),
)
positions = st.one_of(
    st.integers(0, 9).map(str),
    st.sampled_from(["999999999", "NaN", "-1", "1.5", "", "٣", "0x1", "63", "64"]),
)


def exposition(drafts: str, draft_tokens: str, accepted: str, per_pos: list[tuple[str, str]]):
    lines = []
    for name, value in (
        (DRAFTS, drafts),
        (DRAFT_TOKENS, draft_tokens),
        (ACCEPTED_TOKENS, accepted),
    ):
        lines += [f"# TYPE {name} counter", f'{name}_total{{model_name="m"}} {value}']
    lines.append(f"# TYPE {ACCEPTED_PER_POS} counter")
    lines += [f'{ACCEPTED_PER_POS}_total{{model_name="m",position="{p}"}} {v}' for p, v in per_pos]
    return "\n".join(lines) + "\n"


scrape = st.builds(
    exposition, values, values, values, st.lists(st.tuples(positions, values), max_size=4)
)


def assert_absent_or_possible(before: str, after: str, k: int | None) -> None:
    """The invariant: no figure (and a reason), or figures physics allows."""
    try:
        first = SpecDecodeCounters.from_text(before)
        second = SpecDecodeCounters.from_text(after)
    except MetricsFormatError:
        return
    for counters in (first, second):
        assert all(p < MAX_POSITIONS for p in counters.accepted_per_position)
    checked = checked_delta(first, second, k)
    if checked.delta is None:
        assert checked.reason
        return
    acc = acceptance(checked.delta)
    window = k if k is not None else MAX_POSITIONS
    assert all(
        math.isfinite(v) and v >= 0 for v in (acc.drafts, acc.draft_tokens, acc.accepted_tokens)
    )
    assert acc.acceptance_rate is not None and 0.0 <= acc.acceptance_rate <= 1.0
    assert acc.mean_accepted_length is not None
    assert 1.0 <= acc.mean_accepted_length <= window + 1
    assert len(acc.per_position) <= window
    assert all(p is not None and 0.0 <= p <= 1.0 for p in acc.per_position)


@SETTINGS
@given(scrape, scrape, st.one_of(st.none(), st.integers(1, 8)))
def test_figures_from_any_two_scrapes_are_absent_with_a_reason_or_physically_possible(
    before, after, k
):
    assert_absent_or_possible(before, after, k)


def test_a_billion_position_label_never_sizes_a_list():
    text = exposition("10", "40", "30", [("999999999", "5")])
    counters = SpecDecodeCounters.from_text(text)
    assert counters.accepted_per_position == {}
    assert counters.invalid is not None and "999999999" in counters.invalid


@st.composite
def scrape_pairs(draw):
    """Two scrapes whose increments are near the limits physics allows, on either side."""
    base = [draw(st.integers(0, 1000)) for _ in range(3)]
    d_drafts = draw(st.integers(0, 50))
    d_draft_tokens = draw(st.integers(0, 10 * d_drafts + 2))
    d_accepted = draw(st.integers(0, d_draft_tokens + 2))
    n_pos = draw(st.integers(0, 9))
    d_pos = [draw(st.integers(0, d_drafts + 1)) for _ in range(n_pos)]
    before = exposition(*map(str, base), [(str(p), "0") for p in range(n_pos)])
    after = exposition(
        str(base[0] + d_drafts),
        str(base[1] + d_draft_tokens),
        str(base[2] + d_accepted),
        [(str(p), str(v)) for p, v in enumerate(d_pos)],
    )
    return before, after


@SETTINGS
@given(scrape_pairs(), st.one_of(st.none(), st.integers(1, 8)))
def test_figures_near_the_physical_limits_are_possible_or_absent(pair, k):
    assert_absent_or_possible(*pair, k)


def test_positions_past_k_that_did_not_move_give_no_figure_beyond_k():
    """A server exports a series per position of its own k; with k=1 asked, position 1 standing
    still is consistent, and the figures still stop at position 0."""
    before = exposition("0", "0", "0", [("0", "0"), ("1", "0")])
    after = exposition("4", "4", "2", [("0", "1"), ("1", "0")])
    checked = checked_delta(
        SpecDecodeCounters.from_text(before), SpecDecodeCounters.from_text(after), 1
    )
    assert checked.delta is not None
    assert acceptance(checked.delta).per_position == [0.25]
