"""client.metrics: acceptance figures from vLLM's Prometheus exposition (pure, no server)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.client.metrics import (
    NO_COUNTERS,
    MetricsFormatError,
    SpecDecodeCounters,
    acceptance,
    acceptance_between,
    checked_delta,
    parse_exposition,
)


def exposition(
    drafts: float,
    draft_tokens: float,
    accepted: float,
    per_pos: list[float],
    *,
    engine: str = "0",
    model: str = "tiny-target",
    header: bool = True,
) -> str:
    """Text shaped like vLLM 0.32's /metrics for the spec-decode counters (with _created lines
    and other metrics around them, as the real exposition has)."""
    labels = f'engine="{engine}",model_name="{model}"'
    lines = []
    if header:
        lines += [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} 0.0",
        ]
    for name, value in (
        ("vllm:spec_decode_num_drafts", drafts),
        ("vllm:spec_decode_num_draft_tokens", draft_tokens),
        ("vllm:spec_decode_num_accepted_tokens", accepted),
    ):
        if header:
            lines += [f"# HELP {name} counter", f"# TYPE {name} counter"]
        lines += [f"{name}_total{{{labels}}} {value}", f"{name}_created{{{labels}}} 1.7e9"]
    name = "vllm:spec_decode_num_accepted_tokens_per_pos"
    if header:
        lines += [f"# HELP {name} per position", f"# TYPE {name} counter"]
    for pos, value in enumerate(per_pos):
        lines.append(f'{name}_total{{{labels},position="{pos}"}} {value}')
    return "\n".join(lines) + "\n"


def test_acceptance_rate_is_accepted_over_draft_tokens_between_scrapes() -> None:
    before = exposition(10, 40, 30, [9, 8, 7, 6])
    after = exposition(110, 440, 330, [99, 88, 77, 66])
    result = acceptance_between(before, after)
    assert result.acceptance_rate == pytest.approx(300 / 400)
    assert result.drafts == 100


def test_mean_accepted_length_counts_the_bonus_token() -> None:
    result = acceptance_between(exposition(0, 0, 0, []), exposition(50, 200, 150, []))
    assert result.mean_accepted_length == pytest.approx(1 + 150 / 50)


def test_k_used_is_draft_tokens_per_draft_so_a_schedule_shows_its_mean_window() -> None:
    # 30 drafts at k=4 and 70 at k=2 (a batch-aware schedule): 260 draft tokens in 100 drafts.
    result = acceptance_between(exposition(5, 20, 10, []), exposition(105, 280, 110, []))
    assert result.k_used == pytest.approx(260 / 100)
    assert acceptance_between(exposition(5, 20, 10, []), exposition(5, 20, 10, [])).k_used is None


def test_per_position_acceptance_is_accepted_at_position_over_drafts() -> None:
    result = acceptance_between(
        exposition(0, 0, 0, [0, 0, 0, 0]), exposition(100, 400, 250, [90, 70, 50, 40])
    )
    assert result.per_position == pytest.approx([0.9, 0.7, 0.5, 0.4])


def test_counters_are_summed_over_engines() -> None:
    text = exposition(10, 40, 20, [8, 6], engine="0") + exposition(
        30, 120, 60, [20, 10], engine="1", header=False
    )
    counters = SpecDecodeCounters.from_text(text)
    assert (counters.drafts, counters.draft_tokens, counters.accepted_tokens) == (40, 160, 80)
    assert counters.accepted_per_position == {0: 28, 1: 16}


def test_a_series_exported_twice_with_one_value_counts_once() -> None:
    """`_total` beside the bare name (or a repeated line): one series, not two to sum; the
    acceptance is the truth, 300 / 400 = 0.75, not 300 / 800."""
    bare = 'vllm:spec_decode_num_draft_tokens{engine="0",model_name="m"}'
    before = exposition(10, 40, 30, [], model="m") + f"{bare} 40\n"
    after = exposition(110, 440, 330, [], model="m") + f"{bare} 440\n"
    counters = SpecDecodeCounters.from_text(after)
    assert counters.invalid is None and counters.draft_tokens == 440
    assert acceptance_between(before, after).acceptance_rate == pytest.approx(0.75)


def test_a_counter_with_and_without_labels_is_refused_not_summed() -> None:
    """The unlabelled series may be the total of the labelled ones: no figure, and why."""
    name = "vllm:spec_decode_num_draft_tokens"
    before = exposition(10, 40, 30, [], model="m") + f"{name}_total 40\n"
    after = exposition(110, 440, 330, [], model="m") + f"{name}_total 440\n"
    counters = SpecDecodeCounters.from_text(after, "m")
    assert counters.invalid is not None and "different label sets" in counters.invalid
    assert counters.invalid.startswith(name)
    checked = checked_delta(SpecDecodeCounters.from_text(before, "m"), counters)
    assert checked.delta is None and "different label sets" in str(checked.reason)
    assert acceptance_between(before, after, "m").acceptance_rate is None


def test_one_series_with_two_values_is_refused() -> None:
    labels = 'engine="0",model_name="m"'
    text = exposition(10, 40, 30, [], model="m") + (f"vllm:spec_decode_num_drafts{{{labels}}} 12\n")
    counters = SpecDecodeCounters.from_text(text)
    assert counters.invalid is not None and "different values (10 to 12)" in counters.invalid
    assert counters.drafts == 0  # the series is left out, not one of its values picked


def test_counters_can_be_restricted_to_one_served_model() -> None:
    text = exposition(10, 40, 20, [], model="a") + exposition(5, 20, 1, [], model="b", header=False)
    assert SpecDecodeCounters.from_text(text, model_name="b").drafts == 5


def test_created_timestamps_are_not_counted() -> None:
    counters = SpecDecodeCounters.from_text(exposition(3, 12, 9, [3]))
    assert counters.drafts == 3  # not 3 + 1.7e9


def test_a_server_without_speculation_reports_counters_absent_and_acceptance_unknown() -> None:
    text = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0.0\n"
    counters = SpecDecodeCounters.from_text(text)
    assert not counters.present
    result = acceptance(counters.minus(counters))
    assert result.acceptance_rate is None
    assert result.mean_accepted_length is None


def test_counters_that_did_not_move_give_unknown_not_zero_acceptance() -> None:
    text = exposition(10, 40, 30, [9])
    assert acceptance_between(text, text).acceptance_rate is None


def test_text_that_is_not_an_exposition_is_a_clear_error() -> None:
    with pytest.raises(MetricsFormatError, match="not a Prometheus text exposition"):
        parse_exposition("<html><body>502 Bad Gateway</body>\n")


@given(
    drafts=st.integers(1, 10_000),
    k=st.integers(1, 8),
    data=st.data(),
)
def test_acceptance_figures_stay_within_their_bounds(drafts: int, k: int, data) -> None:
    per_pos = data.draw(st.lists(st.integers(0, drafts), min_size=k, max_size=k))
    per_pos.sort(reverse=True)  # position p is accepted only if every earlier one was
    accepted = sum(per_pos)
    result = acceptance_between(
        exposition(0, 0, 0, [0] * k), exposition(drafts, drafts * k, accepted, per_pos)
    )
    assert result.acceptance_rate is not None and 0 <= result.acceptance_rate <= 1
    assert result.mean_accepted_length is not None and 1 <= result.mean_accepted_length <= k + 1
    assert result.acceptance_rate == pytest.approx(sum(result.per_position) / k)


# --- consistency: acceptance only from deltas that can be true (issue 12) ----------------------


def counters(text: str) -> SpecDecodeCounters:
    return SpecDecodeCounters.from_text(text)


def test_a_consistent_delta_is_used() -> None:
    checked = checked_delta(
        counters(exposition(10, 40, 30, [9])), counters(exposition(20, 80, 60, [18]))
    )
    assert checked.reason is None and checked.delta is not None
    assert checked.delta.accepted_tokens == 30


def test_counters_that_went_backwards_give_no_figure_and_say_why() -> None:
    checked = checked_delta(
        counters(exposition(100, 400, 300, [90])), counters(exposition(20, 80, 60, [18]))
    )
    assert checked.delta is None and "went backwards" in str(checked.reason)
    rate = acceptance_between(exposition(100, 400, 300, [90]), exposition(20, 80, 60, [18]))
    assert rate.acceptance_rate is None  # not -1.0


def test_a_reset_is_detected_from_created_even_when_the_counters_grew_past_the_old_values() -> None:
    before = exposition(10, 40, 30, [9])
    after = exposition(20, 80, 60, [18]).replace(" 1.7e9", " 1.8e9")
    checked = checked_delta(counters(before), counters(after))
    assert checked.delta is None and "_created changed" in str(checked.reason)


def test_more_accepted_than_drafted_tokens_is_inconsistent() -> None:
    checked = checked_delta(
        counters(exposition(0, 0, 0, [0])), counters(exposition(5, 5, 100, [5]))
    )
    assert checked.delta is None and "inconsistent" in str(checked.reason)
    assert (
        acceptance_between(exposition(0, 0, 0, [0]), exposition(5, 5, 100, [5])).acceptance_rate
        is None
    )


def test_a_position_accepted_more_often_than_drafted_is_inconsistent() -> None:
    checked = checked_delta(counters(exposition(0, 0, 0, [0])), counters(exposition(5, 20, 9, [9])))
    assert checked.delta is None and "per-position" in str(checked.reason)


def test_absent_counters_and_counters_that_appeared_are_told_apart() -> None:
    none = counters("# TYPE x gauge\nx 1\n")
    some = counters(exposition(5, 20, 10, [5]))
    assert checked_delta(none, none).reason == NO_COUNTERS
    assert "appeared or vanished" in str(checked_delta(none, some).reason)
