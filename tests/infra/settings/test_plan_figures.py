"""The figures a plan predicted reach the serving settings from the plan file, and only from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.settings import SettingsError, load_settings
from infra.settings.plan_figures import PlannedVariant, read_plan_figures
from infra.settings.serving import load_serving_settings

REPO = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = REPO / "config/plans/default.yaml"
CHOSEN = {
    "profile": "qwen3-4b-baseline",
    "max_num_seqs": 1,
    "tpot_ms": 12.5,
    "output_tokens_per_s_per_replica": 80.0,
    "cost_per_1m_output_tokens_usd": 7.75,
    "nodes_at_peak": 1,
}


def _serving(overrides: dict[str, Any]) -> Any:
    return load_serving_settings(load_settings("default", overrides).serving)


def test_the_default_deployment_carries_both_variants_figures_as_the_plan_records_them() -> None:
    record = yaml.safe_load(DEFAULT_PLAN.read_text())["plan"]
    figures = _serving({}).plan_figures
    assert figures is not None and figures.speculative_arm is not None
    for got, key in ((figures.chosen, "chosen"), (figures.speculative_arm, "speculative_arm")):
        for field in PlannedVariant.model_fields:
            want = record[key][field]
            assert getattr(got, field) == (tuple(want) if isinstance(want, list) else want)


def test_without_a_plan_there_are_no_figures() -> None:
    assert _serving({"serving.plan": "none"}).plan_figures is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"serving.plan_figures.chosen.tpot_ms": "1"},
        {"serving.plan": "none", "serving.plan_figures": "{}"},
    ],
    ids=["over-a-plan", "without-a-plan"],
)
def test_figures_set_by_hand_are_refused(overrides: dict[str, str]) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", overrides)
    assert [p.field for p in err.value.problems] == [
        next(iter(overrides.keys() - {"serving.plan"}))
    ]
    assert "plan file only" in err.value.problems[0].fix


@pytest.mark.parametrize(
    ("chosen", "message"),
    [
        ({"tpot_ms": -1.0}, "plan.chosen.tpot_ms=-1.0: input should be greater than 0"),
        ({"tpot_ms": True}, "plan.chosen.tpot_ms=True"),
        ({"cost_per_1m_output_tokens_usd": None}, "plan.chosen.cost_per_1m_output_tokens_usd"),
        ({"error_band": -0.1}, "plan.chosen.error_band=-0.1"),
        ({"error_band": 1e6}, "plan.chosen.error_band=1000000.0"),
    ],
    ids=["negative", "bool", "missing-cost", "negative-band", "band-past-any-error"],
)
def test_a_bad_figure_is_named(tmp_path: Path, chosen: dict[str, Any], message: str) -> None:
    figures, problems = read_plan_figures({"chosen": {**CHOSEN, **chosen}})
    assert figures is None
    assert len(problems) == 1 and problems[0].startswith(message), problems
    path = tmp_path / "plan.yaml"
    doc = {
        "kind": "trnspec-deployment-plan",
        "serving": {"profile": "qwen3-4b-baseline"},
        "plan": {"chosen": {**CHOSEN, **chosen}},
    }
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"serving.plan": str(path)})
    assert any(message in p.fix for p in err.value.problems), err.value.problems


def test_a_band_of_100_percent_or_more_is_read_as_plan_deploy_writes_it() -> None:
    """A model off by more than 2x has a band above 1 (a local calibration on CPU rows wrote
    1.609): the plan is still readable, its decision already said undecided."""
    figures, problems = read_plan_figures({"chosen": {**CHOSEN, "error_band": 1.609}})
    assert problems == [] and figures is not None
    assert figures.chosen.error_band == 1.609


def test_a_record_without_figures_predicted_nothing() -> None:
    assert read_plan_figures({"chosen": {"nodes_at_peak": 1}}) == (None, [])
    figures, problems = read_plan_figures({"chosen": CHOSEN})
    assert problems == [] and figures is not None and figures.speculative_arm is None
    assert figures.chosen.tpot_ms == 12.5


def test_figures_say_which_engine_they_were_predicted_for() -> None:
    figures, _ = read_plan_figures({"chosen": {**CHOSEN, "overrides": ["max_num_seqs=1"]}})
    assert figures is not None
    assert figures.chosen.same_engine("qwen3-4b-baseline", ("max_num_seqs=1",))
    assert not figures.chosen.same_engine("qwen3-4b-baseline", ("max_num_seqs=2",))
    assert not figures.chosen.same_engine("qwen3-4b-dflash", ("max_num_seqs=1",))
