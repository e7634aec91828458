"""tune.round_run: a schedule round is typed, written with exactly the keys the schedule and demo
files hold, and read back (tune --schedule --from-json) checked, as the same round."""

from __future__ import annotations

import json

import pytest
from made_runs import deltas, kept_run, made_run

from trnspec_tools.bench.options import UsageError
from trnspec_tools.bench.run_result import AcceptanceFigures
from trnspec_tools.tune.round_run import RUN_FIELDS, RoundPair, RoundRun
from trnspec_tools.tune.schedule_tune import load_rounds

COUNTED = AcceptanceFigures(
    acceptance_rate=0.75,
    mean_accepted_length=3.25,
    acceptance_per_position=(0.9, 0.75, 0.6),
    acceptance_source="server-metrics",
    spec_decode_deltas=deltas(40, 120, 90, (36, 30, 24)),
    k_used=3.0,
)


def test_a_kept_run_is_the_runs_schedule_fields_and_its_error_total_in_order() -> None:
    run = made_run(output_tokens_per_s=123.5, tpot_p50=4.0, acceptance=COUNTED)
    written = run.to_json()
    assert RoundRun.of(run).to_json() == {**{k: written[k] for k in RUN_FIELDS}, "errors": 0}
    assert list(RoundRun.of(run).to_json()) == [*RUN_FIELDS, "errors"]


def test_a_round_has_a_ratio_only_when_both_runs_are_clean() -> None:
    plain, cand = kept_run(100.0), kept_run(150.0, acceptance=COUNTED)
    assert RoundPair.measured(True, plain, cand).ratio == 1.5
    assert RoundPair.measured(False, plain, cand).order == "candidate-first"
    failed = RoundRun(**{**vars(cand), "errors": 2})
    assert RoundPair.measured(True, plain, failed).ratio is None
    assert RoundPair.measured(True, kept_run(0.0), cand).ratio is None


@pytest.mark.parametrize(
    "pair",
    [
        RoundPair.measured(True, kept_run(100.0, 400), kept_run(150.0, 400, COUNTED)),
        RoundPair.measured(False, kept_run(0.0), kept_run(80.0)),
    ],
)
def test_a_written_round_reads_back_as_the_same_round(pair: RoundPair) -> None:
    assert RoundPair.from_json(json.loads(json.dumps(pair.to_json())), "runs") == pair


def _schedule_file(tmp_path, pair_json: dict) -> object:
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps({"runs": {"k=2": {"1": [pair_json], "8": [pair_json]}}}))
    return path


def test_an_earlier_schedule_result_is_read_back_at_the_levels_asked(tmp_path) -> None:
    pair = RoundPair.measured(True, kept_run(100.0), kept_run(150.0, acceptance=COUNTED))
    found = load_rounds(_schedule_file(tmp_path, pair.to_json()), [1])
    assert found.rounds == {"k=2": {1: [pair]}}
    assert [c.name for c in found.candidates] == ["plain", "k=2"]


def test_a_schedule_result_with_a_bad_figure_is_refused_naming_its_path(tmp_path) -> None:
    pair = RoundPair.measured(True, kept_run(100.0), kept_run(150.0)).to_json()
    pair["plain"]["output_tokens_per_s"] = -3.0  # type: ignore[index]
    with pytest.raises(UsageError, match=r"runs\.k=2\.1\[0\]\.plain\.output_tokens_per_s=-3"):
        load_rounds(_schedule_file(tmp_path, pair), [1])
