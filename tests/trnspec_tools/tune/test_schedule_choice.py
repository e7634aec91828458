"""schedule_choice: bands, schedule candidates and the recommendation from alternated ratios."""

from __future__ import annotations

import shlex

import pytest
from trnspec.checks.all_checks import check
from trnspec.config.serving import apply_overrides, load_profile

from trnspec_tools.ab.comparison import ArmRound, Comparison, compare
from trnspec_tools.tune.schedule_choice import (
    PLAIN,
    Candidate,
    choose,
    deploy_line,
    level_bands,
    merge_bands,
    schedule_candidates,
    scheduled,
    set_line,
    spreads,
    static,
    zero_bands,
)

LEVELS = [1, 8, 32]
STATICS = [static(2), static(4)]
ALL = [Candidate(PLAIN), *STATICS]


def test_each_level_stands_for_the_batches_up_to_it_and_the_last_runs_to_max_num_seqs():
    assert level_bands([8, 1, 32], 32) == [(1, 1), (2, 8), (9, 32)]
    assert level_bands([1, 8], 32) == [(1, 1), (2, 32)]
    with pytest.raises(ValueError, match="exceeds max_num_seqs=16"):
        level_bands([1, 32], 16)


def test_adjacent_bands_with_one_k_are_merged():
    assert merge_bands([(9, 32, 2), (1, 1, 4), (2, 8, 2)]) == [(1, 1, 4), (2, 32, 2)]


def _compared(ratios: list[float]) -> Comparison:
    """The A/B comparison of rounds whose candidate ran `ratios` times plain's 100 tok/s."""
    return compare(
        [ArmRound(i, 100.0, 1000) for i in range(len(ratios))],
        [ArmRound(i, 100.0 * r, 1000) for i, r in enumerate(ratios)],
    )


def _comparisons(table: dict[str, list[list[float]]]):
    return {
        name: {c: _compared(r) for c, r in zip(LEVELS, rows, strict=True)}
        for name, rows in table.items()
    }


def _measured(table: dict[str, list[list[float]]]):
    return spreads(_comparisons(table))


def test_schedule_candidates_take_the_best_static_k_per_band():
    measured = _measured(
        {"k=2": [[1.3, 1.3], [1.2, 1.2], [1.1, 1.1]], "k=4": [[1.6, 1.6], [1.1, 1.1], [0.9, 0.9]]}
    )
    [cand] = schedule_candidates(measured, STATICS, LEVELS, 32)
    assert cand.schedule == ((1, 1, 4), (2, 32, 2))
    assert cand.overrides() == [
        "speculation.num_speculative_tokens=4",
        "speculation.k_schedule=[[1,1,4],[2,32,2]]",
    ]


def test_a_k0_band_is_only_a_second_candidate_where_plain_beat_every_static_k():
    measured = _measured(
        {"k=2": [[1.3, 1.3], [1.2, 1.2], [0.9, 0.9]], "k=4": [[1.6, 1.6], [1.1, 1.1], [0.8, 0.8]]}
    )
    cands = schedule_candidates(measured, STATICS, LEVELS, 32)
    assert [c.schedule for c in cands] == [
        ((1, 1, 4), (2, 32, 2)),
        ((1, 1, 4), (2, 8, 2), (9, 32, 0)),
    ]


def test_a_schedule_equal_to_one_static_k_is_not_measured_again():
    measured = _measured(
        {"k=2": [[1.3, 1.3], [1.2, 1.2], [1.1, 1.1]], "k=4": [[1.6, 1.6], [1.5, 1.5], [1.4, 1.4]]}
    )
    assert schedule_candidates(measured, STATICS, LEVELS, 32) == []


def test_the_recommendation_is_best_at_every_level_not_on_average():
    sched = scheduled([(1, 1, 4), (2, 32, 2)])
    measured = _measured(
        {
            "k=2": [[1.30, 1.32], [1.20, 1.22], [1.10, 1.12]],
            "k=4": [[1.60, 1.62], [1.10, 1.12], [0.90, 0.92]],
            sched.name: [[1.58, 1.62], [1.19, 1.23], [1.09, 1.13]],
        }
    )
    choice = choose(measured, [*ALL, sched], LEVELS)
    assert choice.candidate == sched
    assert choice.worst_relative == pytest.approx(1.60 / 1.61)  # c=1, against k=4
    assert choice.ties == ()
    at_1 = choice.per_level[1]
    assert at_1.best == "k=4" and at_1.chosen_spread.median == pytest.approx(1.60)
    assert at_1.chosen_over_best == pytest.approx(1.60 / 1.61)


def test_a_schedule_within_the_spread_of_a_static_k_everywhere_loses_to_the_static_k():
    sched = scheduled([(1, 1, 4), (2, 32, 2)])
    measured = _measured(
        {
            "k=2": [[1.30, 1.50], [1.20, 1.40], [1.10, 1.30]],
            "k=4": [[1.35, 1.55], [1.05, 1.25], [0.95, 1.15]],
            sched.name: [[1.40, 1.60], [1.25, 1.45], [1.15, 1.35]],
        }
    )
    choice = choose(measured, [*ALL, sched], LEVELS)
    assert choice.leader == sched.name
    assert choice.ties == ("k=2", "k=4")
    # the data cannot tell them apart: the simpler kind, and of the statics the best worst case
    assert choice.candidate.name == "k=2"


def test_plain_is_recommended_when_no_speculation_beats_it_anywhere():
    measured = _measured(
        {
            "k=2": [[0.9, 0.92], [0.8, 0.82], [0.7, 0.72]],
            "k=4": [[0.8, 0.82], [0.7, 0.7], [0.6, 0.6]],
        }
    )
    choice = choose(measured, ALL, LEVELS)
    assert choice.candidate.name == PLAIN
    assert choice.candidate.overrides() == ["speculation.method=none"]


def test_a_k0_band_slower_than_plain_is_reported_as_losing():
    sched = scheduled([(1, 1, 4), (2, 8, 2), (9, 32, 0)])
    measured = _comparisons({sched.name: [[1.6, 1.6], [1.2, 1.2], [0.83, 0.85]]})
    [zero] = zero_bands(measured, [sched], LEVELS, 32)
    assert zero.loses and zero.batches == (9, 32) and zero.concurrency == 32
    assert "loses to a server without speculation" in zero.note()
    fine = _comparisons({sched.name: [[1.6, 1.6], [1.2, 1.2], [0.99, 1.03]]})
    assert not zero_bands(fine, [sched], LEVELS, 32)[0].loses


def test_the_printed_lines_are_what_render_and_the_deploy_read_back():
    items = ["max_num_seqs=32", *scheduled([(1, 1, 4), (2, 32, 2)]).overrides()]
    argv = shlex.split(set_line(items))
    assert argv[::2] == ["--set"] * len(items) and argv[1::2] == items
    cfg = apply_overrides(load_profile("local-tiny"), argv[1::2])
    assert cfg.speculation.k_schedule == [(1, 1, 4), (2, 32, 2)]
    assert [p for p in check(cfg) if p.field.startswith("speculation")] == []
    deploy = shlex.split(deploy_line(items))
    assert deploy[0] == "-c" and deploy[1].startswith("serving.overrides=[")
    from trnspec.boundary.user_input import parse_value

    assert parse_value(deploy[1].split("=", 1)[1]) == items
