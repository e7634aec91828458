"""A calibration deployment's dashboard panels: per arm (the plain main Deployment and the
speculative arm), the time per output token and the cost per 1M output tokens, measured from each
arm's live vLLM counters beside what the deployed plan predicted.

Measured, per arm's Service (the `service` target label its ServiceMonitor gives it, monitoring.py):
- TPOT = decode time / (output tokens - 1), over the requests finished in the rate window:
  rate(`vllm:request_decode_time_seconds_sum`) / (rate(`vllm:request_generation_tokens_sum`) -
  rate(`vllm:request_generation_tokens_count`)), the benchmark's TPOT (first token excluded).
  vLLM's inter-token latency is per engine step, so with speculation it is not per token.
- cost per 1M output tokens = the price of one replica's chips per hour (calibration.py
  arm_price_per_hour: the instance's on-demand price times its share of the node's chips, the
  price the calibration Job uses) x the replicas exporting metrics / the arm's output tokens per
  hour (`vllm:generation_tokens_total`). Idle replicas cost too: below the plan's batch the
  measured cost is above the prediction, which is at full batch.

Predicted: the plan's own figures for the engine each arm runs (serving.plan_figures: plan.chosen
for the main Deployment, plan.speculative_arm for the arm), drawn as constant series with the
plan's error band. A figure is drawn only when the plan predicted it for that arm's engine; else
the series is absent and the panel's description says why. The constants make this part of the
dashboard per deployment: the stack installs this rendering, the committed files stay generic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.serving.manifests.calibration import arm_price_per_hour
from infra.serving.manifests.dashboard import timeseries_panel
from infra.serving.manifests.monitoring import SERVICE_TARGET_LABEL
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.plan_figures import PlannedVariant
from infra.settings.serving import ServingSettings

TPOT_TITLE = "TPOT per arm: measured and predicted"
COST_TITLE = "Cost per 1M output tokens per arm: measured and predicted"
UNITS = {TPOT_TITLE: "ms", COST_TITLE: "currencyUSD"}
_RI = "[$__rate_interval]"


@dataclass(frozen=True)
class Arm:
    """One arm as the dashboard shows it."""

    role: str  # "plain" or "speculative"
    service: str  # its Service's name: the `service` label of its series
    namespace: str
    model_name: str
    profile: str
    #: The price of one replica's chips per hour, None when the pricing table has none.
    price_per_replica_hour: float | None
    #: What the plan predicted for this arm's engine, None when it predicted nothing for it.
    predicted: PlannedVariant | None
    #: Why `predicted` is None (shown in the panels' descriptions).
    no_prediction: str = ""

    @property
    def selector(self) -> str:
        return (
            f'{{namespace="{self.namespace}",{SERVICE_TARGET_LABEL}="{self.service}",'
            f'model_name="{self.model_name}"}}'
        )

    def rate(self, metric: str) -> str:
        return f"sum(rate({metric}{self.selector}{_RI}))"


def _predicted_for(
    settings: ServingSettings, which: str, profile: str, overrides: tuple[str, ...]
) -> tuple[PlannedVariant | None, str]:
    figures = settings.plan_figures
    if figures is None:
        return None, "the deployment has no plan figures (no serving.plan, or a plan without them)"
    variant: PlannedVariant | None = getattr(figures, which)
    if variant is None:
        return None, f"the plan records no plan.{which}"
    if not variant.same_engine(profile, overrides):
        return None, (
            f"the plan's plan.{which} is for {variant.profile} {list(variant.overrides)}, "
            f"this arm runs {profile} {list(overrides)}"
        )
    return variant, ""


def calibration_arms(
    spec: WorkloadSpec, arm: WorkloadSpec, settings: ServingSettings
) -> tuple[Arm, Arm]:
    """The plain main Deployment and the speculative arm of a calibration deployment."""
    assert settings.calibration is not None
    cal = settings.calibration.speculative
    out = []
    for role, workload, which, profile, overrides in (
        ("plain", spec, "chosen", settings.profile, settings.overrides),
        ("speculative", arm, "speculative_arm", cal.profile, cal.overrides),
    ):
        predicted, why = _predicted_for(settings, which, profile, overrides)
        out.append(
            Arm(
                role=role,
                service=workload.name,
                namespace=workload.namespace,
                model_name=workload.served_model_name,
                profile=profile,
                price_per_replica_hour=arm_price_per_hour(workload),
                predicted=predicted,
                no_prediction=why,
            )
        )
    return out[0], out[1]


def _number(value: float) -> str:
    return str(round(value, 4))


def _predicted_series(arm: Arm, value: float, unit: str) -> list[tuple[str, str]]:
    """The prediction and, with a known band, its edges (value x (1 -/+ band), as the plan's
    decision takes them; a band of 100 % or more puts the lower edge at 0, not below)."""
    assert arm.predicted is not None
    name = f"{arm.role} predicted by the plan"
    out = [(f"vector({_number(value)})", f"{name} ({_number(value)} {unit})")]
    band = arm.predicted.error_band
    if band is not None:
        for sign, edge in (("-", value * max(0.0, 1 - band)), ("+", value * (1 + band))):
            out.append((f"vector({_number(edge)})", f"{name}, {sign}{band:.0%} band edge"))
    return out


def tpot_queries(arm: Arm) -> list[tuple[str, str]]:
    measured = (
        f"1000 * {arm.rate('vllm:request_decode_time_seconds_sum')} / "
        f"({arm.rate('vllm:request_generation_tokens_sum')} - "
        f"{arm.rate('vllm:request_generation_tokens_count')} > 0)"
    )
    out = [(measured, f"{arm.role} ({arm.service}) measured")]
    if arm.predicted is not None:
        out += _predicted_series(arm, arm.predicted.tpot_ms, "ms")
    return out


def cost_queries(arm: Arm) -> list[tuple[str, str]]:
    out = []
    if arm.price_per_replica_hour is not None:
        replicas = f"count(count by (pod) (vllm:num_requests_running{arm.selector}))"
        measured = (
            f"{_number(arm.price_per_replica_hour)} / 3600 * 1000000 * {replicas} / "
            f"({arm.rate('vllm:generation_tokens_total')} > 0)"
        )
        out.append((measured, f"{arm.role} ({arm.service}) measured"))
    if arm.predicted is not None:
        out += _predicted_series(arm, arm.predicted.cost_per_1m_output_tokens_usd, "USD")
    return out


def arm_queries(arms: tuple[Arm, ...]) -> dict[str, list[tuple[str, str]]]:
    """PromQL of both panels, by title, each arm's series in turn (tests read this table)."""
    return {
        TPOT_TITLE: [q for arm in arms for q in tpot_queries(arm)],
        COST_TITLE: [q for arm in arms for q in cost_queries(arm)],
    }


def _prediction_text(arm: Arm, figure: str, unit: str) -> str:
    p = arm.predicted
    if p is None:
        return f"{arm.role} ({arm.profile}): no prediction drawn: {arm.no_prediction}."
    band = p.error_band_note or "error band unknown: no band drawn"
    return (
        f"{arm.role} ({p.profile}, max_num_seqs={p.max_num_seqs}): "
        f"{_number(getattr(p, figure))} {unit}, predicted by the plan (trnspec speed model, "
        f"{_number(p.output_tokens_per_s_per_replica)} output tokens/s per replica at that "
        f"batch; {band})."
    )


def _descriptions(arms: tuple[Arm, ...]) -> dict[str, str]:
    services = ", ".join(f"{a.role} `service={a.service}`" for a in arms)
    tpot = (
        "Time per output token of each arm, ms. Measured: decode time / (output tokens - 1) of "
        f"the requests finished in the rate window ({services}). "
        + " ".join(_prediction_text(a, "tpot_ms", "ms") for a in arms)
        + " The prediction is at the plan's batch: compare it under that load."
    )
    prices = " ".join(
        f"{a.role}: ${_number(a.price_per_replica_hour)} per replica-hour (on-demand price of "
        "the node's share one replica holds)."
        if a.price_per_replica_hour is not None
        else f"{a.role}: no measured cost: the pricing table has no price for its instance."
        for a in arms
    )
    cost = (
        "Cost per 1M output tokens of each arm, USD. Measured: price per replica-hour x "
        f"replicas / output tokens per hour ({services}); idle replicas count, so below the "
        f"plan's batch it is above the prediction. {prices} "
        + " ".join(_prediction_text(a, "cost_per_1m_output_tokens_usd", "USD") for a in arms)
    )
    return {TPOT_TITLE: tpot, COST_TITLE: cost}


def arm_panels(arms: tuple[Arm, ...], first_index: int) -> list[dict[str, Any]]:
    """Both panels, side by side in the grid row of cell `first_index` (an even index)."""
    descriptions = _descriptions(arms)
    panels = []
    for offset, (title, queries) in enumerate(arm_queries(arms).items()):
        panel = timeseries_panel(first_index + offset, title, queries, UNITS[title])
        panel["description"] = descriptions[title]
        if not queries:  # nothing to draw: say why instead of an empty graph
            del panel["targets"], panel["fieldConfig"], panel["datasource"]
            panel["type"] = "text"
            panel["options"] = {"mode": "markdown", "content": descriptions[title]}
        panels.append(panel)
    return panels


def with_arm_panels(dashboard: dict[str, Any], arms: tuple[Arm, ...]) -> dict[str, Any]:
    """`dashboard` with the per-arm panels appended on a row of their own (a copy)."""
    count = len(dashboard["panels"])
    first = count + count % 2
    return {**dashboard, "panels": [*dashboard["panels"], *arm_panels(arms, first)]}
