"""A plan says how sure it is: confident (with its margin at the bands' edges) only when the
cheaper of speculation and plain stays cheaper across both held-out bands; undecided, and a
calibration plan, when it flips within them or a side has no held-out data
(trnspec.plan.decision, trnspec.plan.document)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from trnspec.plan.decision import UNDECIDED_TEXT, decide
from trnspec.plan.deploy_plan import ProfilePlan, Variant
from trnspec.plan.document import (
    InputsRecord,
    calibration_section,
    concurrency_levels,
    plan_document,
)
from trnspec.plan.verdict import Verdict


def _variant(cost: float, error: float | None, *, spec: bool, speedup: float = 1.0) -> Variant:
    return Variant(
        profile="qwen3-4b-dflash" if spec else "qwen3-4b-baseline",
        speculative=spec,
        k=15 if spec else 0,
        max_num_seqs=4,
        overrides=("max_num_seqs=4",)
        + (("speculation.num_speculative_tokens=15",) if spec else ()),
        tpot_ms=10.0,
        tokens_per_s_per_replica=400.0,
        min_speedup=speedup if spec else 1.0,
        replicas_per_node=16,
        packing_reason="chips",
        replicas_at_peak=4,
        nodes_at_peak=1,
        price_per_hour_usd=35.76,
        cost_per_1m_output_tokens_usd=cost,
        idle_nodes=1,
        idle_cost_per_hour_usd=35.76,
        error=error,
        band_note=f"+/-{error:.0%} (held out)" if error is not None else "no held-out error here",
        instance_type="trn2.48xlarge",
        target="Qwen3-4B",
    )


def _plans(spec: Variant, plain: Variant) -> list[ProfilePlan]:
    return [
        ProfilePlan("qwen3-4b-dflash", spec, None, ()),
        ProfilePlan("qwen3-4b-baseline", None, plain, (), has_speculation=False),
    ]


def test_plain_cheaper_beyond_both_bands_is_confident_and_says_its_margin() -> None:
    spec = _variant(10.0, 0.10, spec=True, speedup=1.2)
    plain = _variant(6.0, 0.10, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.PLAIN and d.serving is plain
    assert d.margin == pytest.approx(10.0 * 0.9 / (6.0 * 1.1))
    assert not d.calibrate and calibration_section(d, 256) is None


def test_speculation_cheaper_beyond_both_bands_is_confident() -> None:
    spec = _variant(5.0, 0.10, spec=True, speedup=1.5)
    plain = _variant(8.0, 0.10, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.SPECULATION and d.serving is spec
    assert d.margin == pytest.approx(8.0 * 0.9 / (5.0 * 1.1))


def test_the_cheaper_side_flips_within_the_bands_so_the_plan_measures() -> None:
    """The same costs are confident with narrow bands and undecided with wide ones: the flip."""
    spec = _variant(5.0, 0.10, spec=True, speedup=1.5)
    plain = _variant(6.0, 0.10, spec=False)
    wide_spec = replace(spec, error=0.25)
    narrow = decide(_plans(replace(spec, error=0.05), plain))
    wide = decide(_plans(wide_spec, plain))
    assert narrow is not None and narrow.verdict is Verdict.SPECULATION
    assert wide is not None and wide.verdict is Verdict.UNDECIDED
    assert UNDECIDED_TEXT in wide.reason and "flips within the bands" in wide.reason
    assert wide.serving is plain and wide.speculative is wide_spec


def test_a_side_without_held_out_data_is_undecided_however_large_the_gap() -> None:
    spec = _variant(9.0, 0.12, spec=True, speedup=0.65)
    plain = _variant(6.0, None, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.UNDECIDED
    assert "no held-out error here" in d.reason


def test_speculation_slower_than_plain_even_with_both_bands_in_its_favour_is_never_chosen():
    spec = _variant(5.0, 0.10, spec=True, speedup=0.8)
    plain = _variant(5.2, 0.05, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.PLAIN and d.serving is plain
    assert d.margin == pytest.approx(0.95 / (0.8 * 1.1))


def test_a_speedup_below_one_that_both_bands_can_lift_above_one_is_undecided() -> None:
    """0.83x at +/-17 % against a plain floor at +/-13 %: speculation may be 1.12x; measure."""
    spec = _variant(9.6, 0.17, spec=True, speedup=0.83)
    plain = _variant(8.0, 0.13, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.UNDECIDED


def test_an_undecided_plan_serves_the_plain_twin_and_calibrates_the_speculative_arm() -> None:
    spec = _variant(9.0, 0.12, spec=True, speedup=0.65)
    plain = _variant(6.0, None, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None
    inputs = InputsRecord(0.5, "--acceptance-rate", 30.0, 16, 1, 512, 256, (), "plan-deploy")
    doc = plan_document(d, inputs, _plans(spec, plain))
    serving = doc["serving"]
    assert serving["profile"] == "qwen3-4b-baseline" and serving["overrides"] == ["max_num_seqs=4"]
    assert serving["calibration"] == {
        "speculative": {
            "profile": "qwen3-4b-dflash",
            "overrides": ["max_num_seqs=4", "speculation.num_speculative_tokens=15"],
        },
        "concurrency": [1, 2, 4],
        "rounds": 4,
        "prompts_key": None,
        "output_len": 256,
        "deadline_minutes": 120,
    }
    assert doc["plan"]["decision"]["verdict"] == "undecided"
    assert doc["plan"]["chosen"]["error_band"] is None
    assert doc["plan"]["speculative_arm"]["error_band"] == 0.12


def test_the_plain_twin_serves_the_speculative_arms_target() -> None:
    spec = _variant(9.0, 0.12, spec=True, speedup=0.65)
    other = replace(_variant(1.0, None, spec=False), profile="llama", target="Llama-3.1-8B")
    twin = _variant(6.0, None, spec=False)
    plans = [*_plans(spec, twin), ProfilePlan("llama", None, other, (), has_speculation=False)]
    d = decide(plans)
    assert d is not None and d.calibrate and d.serving is twin


@pytest.mark.parametrize(("top", "levels"), [(1, [1]), (4, [1, 2, 4]), (6, [1, 2, 4, 6])])
def test_calibration_levels_run_from_one_stream_up_to_max_num_seqs(top, levels) -> None:
    assert concurrency_levels(top) == levels


def test_cheaper_at_every_edge_but_slower_at_some_batch_with_bands_against_it_is_undecided():
    """Costs alone would say speculation (5 x 1.1 < 8 x 0.9), but its smallest speedup over
    plain, 1.05x, falls to 0.86x with both bands against it: a confident plan must be faster
    than plain at every batch at the band edges, so the plan measures."""
    spec = _variant(5.0, 0.10, spec=True, speedup=1.05)
    plain = _variant(8.0, 0.10, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.UNDECIDED and d.calibrate
    sure = decide(_plans(replace(spec, min_speedup=1.3), plain))
    assert sure is not None and sure.verdict is Verdict.SPECULATION


@pytest.mark.parametrize(("spec_seqs", "twin_seqs"), [(8, 4), (4, 8)])
def test_a_calibration_measures_up_to_the_smaller_max_num_seqs_of_its_two_arms(
    spec_seqs, twin_seqs
) -> None:
    """Both arms must take every level: an arm never runs a batch above its max_num_seqs."""
    spec = replace(_variant(9.0, 0.12, spec=True, speedup=0.65), max_num_seqs=spec_seqs)
    twin = replace(_variant(6.0, None, spec=False), max_num_seqs=twin_seqs)
    d = decide(_plans(spec, twin))
    assert d is not None and d.calibrate
    section = calibration_section(d, 256)
    assert section is not None and section["concurrency"] == [1, 2, 4]


def test_each_confident_verdict_names_both_sides_its_ratio_and_why() -> None:
    spec = _variant(5.0, 0.10, spec=True, speedup=1.5)
    plain = _variant(10.0, 0.10, spec=False)
    d = decide(_plans(spec, plain))
    assert d == replace(
        d,  # type: ignore[arg-type]
        verdict=Verdict.SPECULATION,
        serving=spec,
        speculative=spec,
        plain=plain,
        reason="speculation is cheaper at every edge of the bands",
        ratio=pytest.approx(2.0),
    )
    d = decide(
        _plans(_variant(10.0, 0.10, spec=True, speedup=1.5), _variant(5.0, 0.10, spec=False))
    )
    assert d is not None and (d.verdict, d.reason) == (
        Verdict.PLAIN,
        "plain is cheaper at every edge of the bands",
    )
    assert d.speculative is not None and d.plain is not None and d.ratio == pytest.approx(0.5)


def test_plain_alone_or_speculation_alone_is_its_own_verdict() -> None:
    plain = _variant(5.0, 0.10, spec=False)
    alone = decide([ProfilePlan("qwen3-4b-baseline", None, plain, (), has_speculation=False)])
    assert alone is not None and (alone.verdict, alone.serving, alone.speculative, alone.plain) == (
        Verdict.PLAIN, plain, None, plain,
    )  # fmt: skip
    assert alone.reason == "no speculative variant kept to compare (see the variants left out)"
    spec = _variant(5.0, 0.10, spec=True, speedup=1.5)
    only = decide([ProfilePlan("qwen3-4b-dflash", spec, None, ())])
    assert only is not None and (only.verdict, only.serving, only.speculative, only.plain) == (
        Verdict.SPECULATION, spec, spec, None,
    )  # fmt: skip
    assert only.reason == "no plain variant meets the target"
    slow = _variant(5.0, 0.10, spec=True, speedup=0.8)
    assert decide([ProfilePlan("qwen3-4b-dflash", slow, None, ())]) is None
    assert decide([]) is None


def test_an_undecided_plan_keeps_the_ratio_and_names_what_is_missing() -> None:
    spec = _variant(5.0, None, spec=True, speedup=1.5)
    plain = _variant(8.0, 0.10, spec=False)
    d = decide(_plans(spec, plain))
    assert d is not None and d.verdict is Verdict.UNDECIDED
    assert (d.serving, d.speculative, d.plain) == (plain, spec, plain)
    assert d.ratio == pytest.approx(8.0 / 5.0)
    assert d.reason == f"{UNDECIDED_TEXT} (no held-out error here)"
    both = decide(_plans(spec, _variant(8.0, None, spec=False)))
    assert both is not None
    assert both.reason == f"{UNDECIDED_TEXT} (no held-out error here; no held-out error here)"


@pytest.mark.parametrize(
    ("speedup", "spec_error", "plain_error", "edges"),
    [
        (1.2, 0.1, 0.2, (1.2 * 0.9 / 1.2, 1.2 * 1.1 / 0.8)),
        (1.0, 0.0, 0.0, (1.0, 1.0)),
        (1.5, 0.1, 1.0, (1.5 * 0.9 / 2.0, float("inf"))),
        (1.5, 0.1, 1.5, (1.5 * 0.9 / 2.5, float("inf"))),
    ],
)
def test_a_speedup_at_the_edges_of_both_bands(speedup, spec_error, plain_error, edges) -> None:
    from trnspec.plan.decision import speedup_edges

    assert speedup_edges(speedup, spec_error, plain_error) == pytest.approx(edges)
