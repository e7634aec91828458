"""Every manifest of every shipped variant passes the API server's own rules at synth.

The variants: each Trn2 engine profile x weights storage x scale to zero x exposure/monitoring,
and each deployment profile (config/*.yaml: both node autoscalers, capacity kinds) x each shipped
plan file (and no plan) x weights storage x scale to zero, all through the path synth takes
(`check_serving`, then `workload_preflight`, which refuses a manifest the API server would).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from workload_cases import TRN2_PROFILES

from infra.serving.manifests.placeholders import BUCKET_PLACEHOLDER, IMAGE_PLACEHOLDER
from infra.serving.manifests.spec import ClusterWorkloadError, check_serving
from infra.serving.preflight import WorkloadPreflight, workload_preflight
from infra.settings import CONFIG_DIR, list_profiles, profile_data

PLANS = sorted(str(p.relative_to(CONFIG_DIR.parent)) for p in (CONFIG_DIR / "plans").glob("*.yaml"))
STORAGE = ("node-local", "ebs")
EXPOSURE: dict[str, dict[str, Any]] = {
    "cluster-ip": {},
    "nlb-api-key": {"internal_nlb": True, "api_key": "on"},
    "existing-prometheus": {
        "prometheus": "existing",
        "prometheus_url": "http://prometheus.observability.svc:9090",
    },
}


def _preflight(serving: dict[str, Any]) -> WorkloadPreflight:
    checked = check_serving(serving, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    return workload_preflight(checked)


def _kinds(preflights: list[WorkloadPreflight]) -> set[str]:
    return {m["kind"] for p in preflights for m in p.manifests.all()}


def test_every_engine_profile_and_setting_variant_passes() -> None:
    refused, passed = [], []
    for profile, storage, zero, (exposure, extra) in itertools.product(
        TRN2_PROFILES, STORAGE, (False, True), EXPOSURE.items()
    ):
        serving = {"profile": profile, "weights_storage": storage, "scale_to_zero": zero, **extra}
        try:
            passed.append(_preflight(serving))
        except ClusterWorkloadError as err:
            refused.append(f"{profile}/{storage}/zero={zero}/{exposure}: {err}")
    assert refused == []
    # The check saw every kind, the weights Job's volume claim and the NLB Service included.
    assert {"Job", "Deployment", "Service", "ConfigMap", "ScaledObject"} <= _kinds(passed)
    assert len(passed) == len(TRN2_PROFILES) * len(STORAGE) * 2 * len(EXPOSURE)


@pytest.mark.parametrize("profile", list_profiles())
def test_every_deployment_profile_with_every_plan_passes(profile: str) -> None:
    refused, passed = [], []
    for plan, storage, zero in itertools.product([*PLANS, "none"], STORAGE, (False, True)):
        overrides = {
            "serving.plan": plan,
            "serving.weights_storage": storage,
            "serving.scale_to_zero": str(zero).lower(),
        }
        # The serving section as synth reads it (the platform's own checks, e.g. a plan's node
        # count against the pools, are not this test's concern).
        serving = profile_data(profile, overrides).get("serving")
        try:
            passed.append(_preflight(serving))
        except ClusterWorkloadError as err:
            refused.append(f"{profile}/{plan}/{storage}/zero={zero}: {err}")
    assert refused == []
    assert len(passed) == (len(PLANS) + 1) * len(STORAGE) * 2


def test_a_planted_nonegi_is_refused_at_synth(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug that rolled back the first deploy, put back: synth refuses it, naming the Job."""
    import infra.serving.manifests.weights as weights

    real = weights.weights_job

    def planted(spec: Any, settings: Any) -> dict[str, Any]:
        job = real(spec, settings)
        pod = job["spec"]["template"]["spec"]
        (work,) = [v for v in pod["volumes"] if v["name"] == "work"]
        claim = work["ephemeral"]["volumeClaimTemplate"]["spec"]
        claim["resources"]["requests"]["storage"] = f"{settings.weights_volume_gib}Gi"
        return job

    monkeypatch.setattr("infra.serving.manifests.manifests.weights_job", planted)
    with pytest.raises(ClusterWorkloadError) as err:
        _preflight({"profile": "qwen3-4b-dflash"})
    assert "-weights-" in str(err.value)
    assert "resources.requests.storage=NoneGi: not a Kubernetes Quantity" in str(err.value)


def test_the_plans_checked_are_the_shipped_ones() -> None:
    assert PLANS and all(Path(CONFIG_DIR.parent, p).is_file() for p in PLANS)
