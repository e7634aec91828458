"""A calibration deployment's dashboard: per arm, measured TPOT and cost per 1M output tokens from
that arm's own series, beside the figures its plan predicted for it (or none, saying why)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from workload_cases import BUCKET, IMAGE, VPC_CIDR, build

from infra.serving.manifests.arm_panels import (
    COST_TITLE,
    TPOT_TITLE,
    Arm,
    arm_panels,
    arm_queries,
    calibration_arms,
    with_arm_panels,
)
from infra.serving.manifests.calibration import arm_price_per_hour, arm_spec
from infra.serving.manifests.dashboard import build_dashboard
from infra.serving.manifests.manifests import build_manifests
from infra.serving.manifests.monitoring import DASHBOARD_KEY
from infra.serving.manifests.spec import derive_workload, resolve_serving_config
from infra.settings import load_settings
from infra.settings.plan_figures import PlanFigures, PlannedVariant
from infra.settings.plan_file import read_plan
from infra.settings.serving import ServingSettings, load_serving_settings

DEFAULT_PLAN = "config/plans/default.yaml"
PLAIN = "qwen3-4b-baseline"
CALIBRATION = {
    "speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=4"]},
    "concurrency": [1, 2, 4],
}
_VECTOR = re.compile(r"^vector\(([0-9.e+-]+)\)$")


def _default_deployment() -> tuple[Any, ServingSettings, list[dict[str, Any]]]:
    """The shipped default (the committed plan, a calibration): its spec, settings, manifests."""
    settings = load_serving_settings(load_settings("default").serving)
    cfg = resolve_serving_config(settings, BUCKET)
    spec = derive_workload(
        cfg, settings, image_uri=IMAGE, bucket_name=BUCKET, region="us-east-2", vpc_cidr=VPC_CIDR
    )
    return spec, settings, build_manifests(spec, settings).all()


def _installed_dashboard(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (cm,) = [o for o in objects if o["kind"] == "ConfigMap" and DASHBOARD_KEY in o.get("data", {})]
    return json.loads(cm["data"][DASHBOARD_KEY])


def _panel(dashboard: dict[str, Any], title: str) -> dict[str, Any]:
    (panel,) = [p for p in dashboard["panels"] if p["title"] == title]
    return panel


def _predicted(panel: dict[str, Any], role: str) -> float:
    """The constant the panel draws as `role`'s prediction (not its band edges)."""
    (value,) = [
        float(_VECTOR.match(t["expr"]).group(1))  # type: ignore[union-attr]
        for t in panel["targets"]
        if t["legendFormat"].startswith(f"{role} predicted by the plan (")
    ]
    return value


def test_the_default_dashboard_shows_each_arms_predictions_from_the_plan_file() -> None:
    plan, problems = read_plan(DEFAULT_PLAN)
    assert problems == [] and plan is not None and plan.figures is not None
    chosen, spec_arm = plan.figures.chosen, plan.figures.speculative_arm
    assert spec_arm is not None
    _, _, objects = _default_deployment()
    dashboard = _installed_dashboard(objects)
    tpot, cost = _panel(dashboard, TPOT_TITLE), _panel(dashboard, COST_TITLE)
    assert _predicted(tpot, "plain") == chosen.tpot_ms
    assert _predicted(tpot, "speculative") == spec_arm.tpot_ms
    assert _predicted(cost, "plain") == chosen.cost_per_1m_output_tokens_usd
    assert _predicted(cost, "speculative") == spec_arm.cost_per_1m_output_tokens_usd
    assert tpot["fieldConfig"]["defaults"]["unit"] == "ms"
    assert cost["fieldConfig"]["defaults"]["unit"] == "currencyUSD"
    for panel in (tpot, cost):
        assert "predicted by the plan" in panel["description"]
        assert chosen.error_band_note and chosen.error_band_note in panel["description"]
        assert spec_arm.error_band_note and spec_arm.error_band_note in panel["description"]


def test_the_band_edges_are_the_plans_error_band_around_each_prediction() -> None:
    spec, settings, _ = _default_deployment()
    arm = arm_spec(spec, settings)
    plain, speculative = calibration_arms(spec, arm, settings)
    for a in (plain, speculative):
        assert a.predicted is not None and a.predicted.error_band is not None
        band = a.predicted.error_band
        edges = sorted(
            float(_VECTOR.match(q).group(1))  # type: ignore[union-attr]
            for q, legend in arm_queries((a,))[COST_TITLE]
            if "band edge" in legend
        )
        value = a.predicted.cost_per_1m_output_tokens_usd
        assert edges == pytest.approx([value * (1 - band), value * (1 + band)], abs=1e-4)


def _selector_of(query: str, metric: str) -> dict[str, str]:
    (block,) = set(re.findall(re.escape(metric) + r"\{([^}]*)\}", query))
    return dict(re.findall(r'([a-z_]+)="([^"]*)"', block))


def test_each_arms_measured_series_select_that_arms_service_only() -> None:
    spec, settings, _ = _default_deployment()
    arm = arm_spec(spec, settings)
    arms = calibration_arms(spec, arm, settings)
    queries = arm_queries(arms)
    for title, metrics in (
        (
            TPOT_TITLE,
            [
                "vllm:request_decode_time_seconds_sum",
                "vllm:request_generation_tokens_sum",
                "vllm:request_generation_tokens_count",
            ],
        ),
        (COST_TITLE, ["vllm:generation_tokens_total", "vllm:num_requests_running"]),
    ):
        measured = [(q, legend) for q, legend in queries[title] if "measured" in legend]
        assert [legend for _, legend in measured] == [
            f"plain ({spec.name}) measured",
            f"speculative ({arm.name}) measured",
        ]
        for (query, _), workload in zip(measured, (spec, arm), strict=True):
            for metric in metrics:
                assert _selector_of(query, metric) == {
                    "namespace": spec.namespace,
                    "service": workload.name,
                    "model_name": spec.served_model_name,
                }


def test_measured_tpot_is_decode_time_over_tokens_after_the_first_in_ms() -> None:
    spec, settings, _ = _default_deployment()
    plain, _ = calibration_arms(spec, arm_spec(spec, settings), settings)
    query = arm_queries((plain,))[TPOT_TITLE][0][0]
    decode, tokens, requests = (
        f"sum(rate({m}{plain.selector}[$__rate_interval]))"
        for m in (
            "vllm:request_decode_time_seconds_sum",
            "vllm:request_generation_tokens_sum",
            "vllm:request_generation_tokens_count",
        )
    )
    assert query == f"1000 * {decode} / ({tokens} - {requests} > 0)"


def test_measured_cost_prices_every_replica_at_the_calibration_jobs_price() -> None:
    spec, settings, _ = _default_deployment()
    arm = arm_spec(spec, settings)
    _, speculative = calibration_arms(spec, arm, settings)
    price = arm_price_per_hour(arm)
    assert price is not None and speculative.price_per_replica_hour == price
    query = arm_queries((speculative,))[COST_TITLE][0][0]
    replicas = f"count(count by (pod) (vllm:num_requests_running{speculative.selector}))"
    tokens = f"sum(rate(vllm:generation_tokens_total{speculative.selector}[$__rate_interval]))"
    assert query == f"{price} / 3600 * 1000000 * {replicas} / ({tokens} > 0)"


def test_without_plan_figures_no_prediction_is_drawn_and_the_panels_say_so() -> None:
    _, spec, m, settings = build(PLAIN, calibration=CALIBRATION)
    assert settings.plan_figures is None
    dashboard = _installed_dashboard(m.all())
    for title in (TPOT_TITLE, COST_TITLE):
        panel = _panel(dashboard, title)
        assert [t["legendFormat"] for t in panel["targets"]] == [
            f"plain ({spec.name}) measured",
            f"speculative ({spec.name}-spec) measured",
        ]
        assert panel["description"].count("no prediction drawn") == 2


def test_figures_predicted_for_another_engine_are_not_drawn_for_that_arm() -> None:
    plain_fig = PlannedVariant(
        profile=PLAIN,
        max_num_seqs=4,
        tpot_ms=10.0,
        output_tokens_per_s_per_replica=300.0,
        cost_per_1m_output_tokens_usd=2.5,
        error_band=0.1,
    )
    other = plain_fig.model_copy(update={"profile": "qwen3-4b-dflash", "overrides": ("k=3",)})
    figures = PlanFigures(chosen=plain_fig, speculative_arm=other)
    _, _, m, _ = build(PLAIN, calibration=CALIBRATION, plan_figures=figures.model_dump())
    tpot = _panel(_installed_dashboard(m.all()), TPOT_TITLE)
    assert _predicted(tpot, "plain") == 10.0
    assert not [t for t in tpot["targets"] if t["legendFormat"].startswith("speculative pred")]
    assert "this arm runs qwen3-4b-dflash ['max_num_seqs=4']" in tpot["description"]


def test_without_a_price_or_a_prediction_the_panel_says_why_instead_of_drawing_nothing() -> None:
    arm = Arm("plain", "svc", "ns", "m", "p", None, None, "the deployment has no plan figures")
    tpot, cost = arm_panels((arm,), 10)
    assert tpot["type"] == "timeseries" and len(tpot["targets"]) == 1
    assert cost["type"] == "text" and "targets" not in cost
    assert "no measured cost" in cost["options"]["content"]
    assert "no prediction drawn" in cost["options"]["content"]


def test_without_calibration_the_installed_dashboard_has_no_arm_panels() -> None:
    _, _, m, _ = build(PLAIN)
    titles = [p["title"] for p in _installed_dashboard(m.all())["panels"]]
    assert TPOT_TITLE not in titles and COST_TITLE not in titles


def test_arm_panels_sit_on_a_row_of_their_own_without_overlap() -> None:
    _, _, objects = _default_deployment()
    dashboard = _installed_dashboard(objects)
    base = build_dashboard()
    assert dashboard["panels"][: len(base["panels"])] == base["panels"]
    cells: set[tuple[int, int]] = set()
    for p in dashboard["panels"]:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    tpot, cost = _panel(dashboard, TPOT_TITLE), _panel(dashboard, COST_TITLE)
    assert tpot["gridPos"]["y"] == cost["gridPos"]["y"]
    assert tpot["gridPos"]["y"] >= max(p["gridPos"]["y"] + 8 for p in base["panels"])
    assert with_arm_panels(base, ())["panels"][: len(base["panels"])] == base["panels"]


def test_a_band_above_100_percent_draws_its_lower_edge_at_zero_not_below() -> None:
    """A cost or a TPOT is never negative: a band of 1.6 draws [0, value x 2.6]."""
    wide = PlannedVariant(
        profile=PLAIN,
        max_num_seqs=4,
        tpot_ms=10.0,
        output_tokens_per_s_per_replica=300.0,
        cost_per_1m_output_tokens_usd=2.5,
        error_band=1.6,
    )
    figures = PlanFigures(chosen=wide)
    _, _, m, _ = build(PLAIN, calibration=CALIBRATION, plan_figures=figures.model_dump())
    tpot = _panel(_installed_dashboard(m.all()), TPOT_TITLE)
    edges = sorted(
        float(_VECTOR.match(t["expr"]).group(1))  # type: ignore[union-attr]
        for t in tpot["targets"]
        if t["legendFormat"].startswith("plain") and "band edge" in t["legendFormat"]
    )
    assert edges == pytest.approx([0.0, 26.0])
