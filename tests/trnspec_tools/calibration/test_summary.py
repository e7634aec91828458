"""The calibration's summary, on its own: per arm and level the figures over rounds, a failed
arm never passing for a slow one, and the level's verdict from the A/B core, the rounds paired
by their number and each arm at its own price."""

from __future__ import annotations

import dataclasses

import pytest
from made_runs import deltas, made_run
from trnspec.plan.verdict import Verdict

from trnspec_tools.bench.run_result import AcceptanceFigures, RunResult
from trnspec_tools.calibration.summary import CalibrationRun, arm_level, summarize

C = 4
NO_PRICES = {"plain": None, "speculative": None}


def runs_of(plain: list[float], spec: list[float], c: int = C, **spec_kw) -> list[CalibrationRun]:
    """Rounds in ABBA order: round r's plain and speculative run at the given tok/s."""
    out = []
    for r, (p, s) in enumerate(zip(plain, spec, strict=True)):
        first, second = ("plain", p), ("speculative", s)
        for pos, (arm, tps) in enumerate((first, second) if r % 2 == 0 else (second, first)):
            run = made_run(output_tokens_per_s=tps, tpot_p50=1000.0 / tps, concurrency=c)
            if arm == "speculative" and spec_kw:
                run = dataclasses.replace(run, **spec_kw)
            out.append(CalibrationRun(arm, c, r, 2 * r + pos, run))  # type: ignore[arg-type]
    return out


def test_speculation_faster_in_every_round_is_cheaper_on_one_chip_each():
    s = summarize(runs_of([100, 100], [150, 160]), [C], NO_PRICES)
    [v] = s.verdicts
    assert v.verdict is Verdict.SPECULATION and v.decision == "speculation"
    assert v.speedup is not None and (v.speedup.low, v.speedup.high) == pytest.approx((1.5, 1.6))
    assert v.cost_ratio is not None and v.cost_ratio.high == pytest.approx(1 / 1.5)


def test_runs_are_paired_by_their_round_not_their_place_in_the_list():
    """The host ran plain at 100 and 200 tok/s in alternate rounds; speculation ran 1.5x plain
    in each. Paired by place after reordering, the ratios would be 0.75 and 3.0: undecided."""
    runs = runs_of([100, 200, 100, 200], [150, 300, 150, 300])
    spec = [r for r in runs if r.arm == "speculative"]
    reordered = [r for r in runs if r.arm == "plain"] + [spec[1], spec[0], spec[3], spec[2]]
    [v] = summarize(reordered, [C], NO_PRICES).verdicts
    assert v.verdict is Verdict.SPECULATION
    assert v.speedup is not None and v.speedup.values == pytest.approx((1.5,) * 4)


def test_each_arm_is_priced_at_its_own_hourly_price():
    """1.5x faster on hardware that costs twice as much per hour: 1.33x the cost per token."""
    runs = runs_of([100, 100], [150, 150])
    s = summarize(runs, [C], {"plain": 10.0, "speculative": 20.0})
    [v] = s.verdicts
    assert v.cost_ratio is not None and v.cost_ratio.median == pytest.approx(2 / 1.5)
    assert v.verdict is Verdict.PLAIN
    spec = next(a for a in s.arms if a.arm == "speculative")
    assert spec.cost_per_1m_output_tokens_usd is not None
    assert spec.cost_per_1m_output_tokens_usd.median == pytest.approx(20.0 / (150 * 3600) * 1e6)
    [cheap] = summarize(runs, [C], {"plain": 20.0, "speculative": 10.0}).verdicts
    assert cheap.verdict is Verdict.SPECULATION


def test_one_disturbed_round_of_eight_does_not_veto_the_verdict():
    runs = runs_of([100] * 8, [150, 150, 150, 150, 150, 80, 150, 150])
    [v] = summarize(runs, [C], NO_PRICES).verdicts
    assert v.verdict is Verdict.SPECULATION
    [four] = summarize(runs_of([100] * 4, [150, 80, 150, 150]), [C], NO_PRICES).verdicts
    assert four.verdict is Verdict.UNDECIDED


def test_a_failed_arm_has_no_figures_and_the_level_no_verdict():
    runs = runs_of([100, 100], [150, 150])
    broken = [
        dataclasses.replace(r, result=None, error="ConnectError: refused")
        if r.arm == "speculative" and r.round == 1
        else r
        for r in runs
    ]
    s = summarize(broken, [C], NO_PRICES)
    spec = next(a for a in s.arms if a.arm == "speculative")
    assert spec.status == "failed" and spec.output_tokens_per_s is None
    assert "round 2: ConnectError" in (spec.reason or "")
    [v] = s.verdicts
    assert v.verdict is None and v.decision == "failed" and "speculative arm failed" in v.text
    assert "no verdict (an arm failed) at concurrency 4" in s.overall()


def test_an_arm_that_stopped_early_gives_no_verdict():
    """Each speculative request stopped after a quarter of its tokens: faster-looking, less work."""
    runs = runs_of([100, 100], [150, 150])
    short = [
        dataclasses.replace(r, result=_tokens(r.result, 250)) if r.arm == "speculative" else r
        for r in runs
    ]
    [v] = summarize(short, [C], NO_PRICES).verdicts
    assert v.verdict is None and "did not do the same work" in v.text


def _tokens(run: RunResult | None, n: int) -> RunResult:
    assert run is not None
    return dataclasses.replace(run, requests=dataclasses.replace(run.requests, output_tokens=n))


def test_acceptance_is_pooled_over_the_rounds_counter_deltas():
    counted = AcceptanceFigures(
        acceptance_source="server-metrics",
        mean_accepted_length=3.0,
        spec_decode_deltas=deltas(10, 40, 20),
    )
    more = AcceptanceFigures(
        acceptance_source="server-metrics",
        mean_accepted_length=4.0,
        spec_decode_deltas=deltas(10, 40, 30),
    )
    results = [made_run(acceptance=a) for a in (counted, more)]
    runs = [CalibrationRun("speculative", C, i, i, r) for i, r in enumerate(results)]
    level = arm_level("speculative", C, runs, None)
    assert level.acceptance_rate == pytest.approx(50 / 80)
    assert level.mean_accepted_length == pytest.approx(1 + 50 / 20)
    assert level.k_used == pytest.approx(4.0)


def test_levels_are_summarized_separately_and_in_the_order_given():
    runs = runs_of([100, 100], [150, 150], c=1) + runs_of([100, 100], [60, 70], c=8)
    s = summarize(runs, [1, 8], NO_PRICES)
    assert [(v.concurrency, v.verdict) for v in s.verdicts] == [
        (1, Verdict.SPECULATION),
        (8, Verdict.PLAIN),
    ]
    assert s.overall() == (
        "speculation is cheaper per 1M output tokens at concurrency 1; "
        "plain is cheaper per 1M output tokens at concurrency 8"
    )


def test_an_arm_level_is_written_with_every_figure_over_its_rounds():
    runs = [
        CalibrationRun("plain", C, 0, 0, made_run(output_tokens_per_s=100.0, tpot_p50=10.0,
                                                  itl_p50=9.0, concurrency=C)),
        CalibrationRun("plain", C, 1, 3, made_run(output_tokens_per_s=200.0, tpot_p50=5.0,
                                                  itl_p50=4.0, concurrency=C)),
    ]  # fmt: skip
    level = arm_level("plain", C, runs, 3.6)
    doc = level.to_json()
    assert doc["arm"] == "plain" and doc["concurrency"] == C and doc["status"] == "ok"
    assert doc["reason"] is None and doc["rounds"] == 2
    assert doc["tpot_ms"]["values"] == [10.0, 5.0] and doc["tpot_ms"]["median"] == 7.5
    assert doc["itl_ms"]["values"] == [9.0, 4.0]
    assert doc["output_tokens_per_s"]["values"] == [100.0, 200.0]
    assert doc["cost_per_1m_output_tokens_usd"]["values"] == pytest.approx(
        [3.6 / (100 * 3600) * 1e6, 3.6 / (200 * 3600) * 1e6]
    )
    assert (doc["acceptance_rate"], doc["mean_accepted_length"], doc["k_used"]) == (None,) * 3
    assert doc["acceptance_note"] is None
    assert arm_level("plain", C, runs, None).cost_per_1m_output_tokens_usd is None
    assert arm_level("plain", C, [], None).to_json()["reason"] == "not measured"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"result": None, "error": None}, "round 2: the run did not complete"),
        ({"result": None, "error": "ReadTimeout: 600 s"}, "round 2: ReadTimeout: 600 s"),
        (
            {"requests": {"completed": 0, "errors": {"total": 1, "http 500": 1}}},
            "round 2: 1 of 1 requests failed (http 500 1)",
        ),
        ({"requests": {"completed": 0, "errors": {"total": 0}}},
         "round 2: 1 of 1 requests failed (no answer)"),
        ({"requests": {"output_tokens": 0}}, "round 2: no output tokens were produced"),
    ],
)  # fmt: skip
def test_a_run_that_does_not_count_fails_its_arm_with_the_reason(change, reason):
    good = made_run(output_tokens_per_s=100.0, concurrency=C)
    if "requests" in change:
        bad = dataclasses.replace(
            good, requests=dataclasses.replace(good.requests, **change["requests"])
        )
        run = CalibrationRun("speculative", C, 1, 1, bad)
    else:
        run = CalibrationRun("speculative", C, 1, 1, None, change["error"])
    level = arm_level("speculative", C, [CalibrationRun("speculative", C, 0, 0, good), run], None)
    assert (level.status, level.reason, level.rounds) == ("failed", reason, 2)
    assert level.tpot_ms is None and level.output_tokens_per_s is None


def test_acceptance_without_the_servers_counters_is_absent_with_its_note():
    estimated = AcceptanceFigures(acceptance_source="estimate-from-chunks",
                                  acceptance_note="chunks only")  # fmt: skip
    runs = [CalibrationRun("speculative", C, i, i, made_run(acceptance=estimated)) for i in (0, 1)]
    level = arm_level("speculative", C, runs, None)
    assert (level.acceptance_rate, level.acceptance_note) == (None, "chunks only")
    still = AcceptanceFigures(
        acceptance_source="server-metrics", spec_decode_deltas=deltas(0, 0, 0)
    )
    runs = [CalibrationRun("speculative", C, 0, 0, made_run(acceptance=still))]
    assert arm_level("speculative", C, runs, None).acceptance_note == (
        "the spec-decode counters did not move"
    )
    plain = arm_level(
        "plain", C, [CalibrationRun("plain", C, 0, 0, made_run(acceptance=still))], None
    )
    assert plain.acceptance_note is None


def test_a_level_verdict_is_written_with_its_word_its_spreads_and_its_text():
    s = summarize(runs_of([100, 100], [150, 160]), [C], {"plain": 2.0, "speculative": 2.0})
    doc = s.verdicts[0].to_json()
    assert doc["concurrency"] == C and doc["decision"] == "speculation"
    assert doc["speedup"]["values"] == pytest.approx([1.5, 1.6])
    assert doc["cost_ratio"]["values"] == pytest.approx([1 / 1.5, 1 / 1.6])
    assert doc["text"] == (
        "concurrency 4: speculation is cheaper: cost per 1M output tokens speculative/plain"
        " 0.65x (min-max of the rounds 0.62-0.67), throughput speculative/plain 1.55x (min-max"
        " of the rounds 1.50-1.60); $3.588 vs $5.556 per 1M; the candidate is cheaper: cost"
        " ratio 0.65 [0.62-0.67], min-max of the rounds lies below 1"
    )
    same = summarize(runs_of([100, 100], [150, 160]), [C], NO_PRICES).verdicts[0]
    assert same.text.endswith(
        "(same hardware per arm: one chip each); the candidate is cheaper:"
        " cost ratio 0.65 [0.62-0.67], min-max of the rounds lies below 1"
    )
    failed = summarize(runs_of([100], [150])[:1], [C], NO_PRICES).verdicts[0].to_json()
    assert failed["decision"] == "failed" and failed["speedup"] is None
    assert failed["cost_ratio"] is None


def test_the_overall_line_names_every_kind_of_level():
    runs = (
        runs_of([100, 100], [150, 150], c=1)
        + runs_of([100, 100], [60, 70], c=2)
        + runs_of([100, 100], [120, 90], c=4)
        + runs_of([100], [150], c=8)[:1]
    )
    assert summarize(runs, [1, 2, 4, 8], NO_PRICES).overall() == (
        "speculation is cheaper per 1M output tokens at concurrency 1; "
        "plain is cheaper per 1M output tokens at concurrency 2; "
        "undecided (within the spread) at concurrency 4; "
        "no verdict (an arm failed) at concurrency 8"
    )
    assert summarize([], [], NO_PRICES).overall() == "nothing measured"


def test_lost_requests_of_several_kinds_are_counted_and_named():
    good = made_run(output_tokens_per_s=100.0, concurrency=C)
    req = dataclasses.replace(
        good.requests,
        num_requests=4,
        completed=2,
        errors={"total": 2, "http 500": 1, "timeout": 1},
    )
    run = CalibrationRun("plain", C, 1, 1, dataclasses.replace(good, requests=req))
    level = arm_level("plain", C, [run], None)
    assert level.reason == "round 2: 2 of 4 requests failed (http 500 1, timeout 1)"


def test_one_round_without_the_servers_counters_leaves_the_arm_without_acceptance():
    counted = AcceptanceFigures(
        acceptance_source="server-metrics", spec_decode_deltas=deltas(10, 40, 20)
    )
    estimated = AcceptanceFigures(acceptance_source="estimate-from-chunks")
    runs = [
        CalibrationRun("speculative", C, 0, 0, made_run(acceptance=counted)),
        CalibrationRun("speculative", C, 1, 1, made_run(acceptance=estimated)),
    ]
    level = arm_level("speculative", C, runs, None)
    assert (level.acceptance_rate, level.acceptance_note) == (None, "no spec-decode counters")
    one_draft = AcceptanceFigures(
        acceptance_source="server-metrics", spec_decode_deltas=deltas(1, 4, 2)
    )
    runs = [CalibrationRun("speculative", C, 0, 0, made_run(acceptance=one_draft))]
    assert arm_level("speculative", C, runs, None).acceptance_rate == pytest.approx(0.5)


def test_an_arm_not_measured_at_a_level_is_failed_with_no_rounds():
    level = arm_level("speculative", 8, [], None)
    assert (level.arm, level.concurrency, level.status, level.reason, level.rounds) == (
        "speculative", 8, "failed", "not measured", 0,
    )  # fmt: skip
