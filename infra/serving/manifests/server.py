"""The vLLM serving Deployment on Trn2.

A Deployment, not a LeaderWorkerSet: every supported TP degree fits on one Trn2 node
(`derive_workload` rejects one that would not), so no replica spans nodes.
"""

from __future__ import annotations

import math
from typing import Any

from trnspec.config.pod_contract import READY_FILE, SERVE_COMMAND, STAGING_WAIT_SECONDS

from infra.compliance.scan_skips import NEURON_POD_SKIPS, skip_annotations
from infra.contracts import DRAIN_SECONDS, HEALTH_PATH, METRICS_PATH
from infra.serving.manifests.pod import (
    SERVE_COMPONENT,
    Manifest,
    api_key_env,
    config_path,
    container,
    labels,
    metadata,
    pod_spec,
    selector_labels,
)
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

STARTUP_PERIOD_SECONDS = 30
#: How long past the startup budget a rollout may go without progress before the Deployment
#: reports it failed (ProgressDeadlineExceeded): one probe period and the pod's scheduling.
PROGRESS_MARGIN_SECONDS = 600


def startup_budget_seconds(settings: ServingSettings) -> int:
    """The longest a serving pod may take to turn ready: every wait the engine makes before its
    staging can run (weights the weights Job has not published yet, retries of staging that
    failed for a cause time fixes: trnspec.config.pod_contract.STAGING_WAIT_SECONDS, the waits
    trnspec.serve.runner makes), then staging, load and compile (serving.max_startup_minutes).
    The startup probe and the Deployment's progress deadline are both sized from it."""
    return math.ceil(STAGING_WAIT_SECONDS) + settings.max_startup_minutes * 60


def termination_grace_seconds(settings: ServingSettings) -> int:
    """Drain delay + the longest request + a margin for vLLM's own shutdown."""
    return DRAIN_SECONDS + settings.max_request_seconds + 30


def probes(settings: ServingSettings) -> dict[str, Any]:
    """Probes sized for a load that takes tens of minutes.

    Readiness is the engine's ready file (trnspec.config.pod_contract.READY_FILE): it exists only
    while
    the model answers GET /v1/models and disappears as soon as SIGTERM arrives, so a draining pod
    leaves the Service at once. The startup probe watches the same file for the whole startup
    budget (`startup_budget_seconds`: the engine's waits for weights, then staging, load and
    compile within max_startup_minutes); liveness (vLLM's /health) only starts after it has
    passed, so a slow load is never killed as "dead".
    """

    def ready() -> dict[str, Any]:
        return {"exec": {"command": ["test", "-f", READY_FILE]}}

    return {
        "startupProbe": {
            **ready(),
            "periodSeconds": STARTUP_PERIOD_SECONDS,
            "timeoutSeconds": 5,
            "failureThreshold": math.ceil(
                startup_budget_seconds(settings) / STARTUP_PERIOD_SECONDS
            ),
        },
        "readinessProbe": {
            **ready(),
            "periodSeconds": 5,
            "timeoutSeconds": 5,
            "failureThreshold": 2,
        },
        "livenessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": "http"},
            "periodSeconds": 30,
            "timeoutSeconds": 10,
            "failureThreshold": 4,
        },
    }


def deployment(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    main = container(spec, settings, args=[SERVE_COMMAND, "--config", config_path()], name="vllm")
    main["env"].extend(api_key_env(spec))
    main["ports"] = [{"name": "http", "containerPort": spec.port, "protocol": "TCP"}]
    main.update(probes(settings))
    # Keep serving while the Service and NLB deregister the pod, then SIGTERM lets the engine
    # finish in-flight requests within the grace period.
    main["lifecycle"] = {"preStop": {"sleep": {"seconds": DRAIN_SECONDS}}}
    template_labels = labels(spec, SERVE_COMPONENT)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            **metadata(spec, spec.name, SERVE_COMPONENT),
            "annotations": skip_annotations(NEURON_POD_SKIPS),
        },
        "spec": {
            # No `replicas`: KEDA's HPA owns the count; re-applying the manifest must not reset it.
            "selector": {"matchLabels": selector_labels(spec, SERVE_COMPONENT)},
            "revisionHistoryLimit": 3,
            # A new pod needs a whole Trn2 node and a long load: surge one, never drop one.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "progressDeadlineSeconds": startup_budget_seconds(settings) + PROGRESS_MARGIN_SECONDS,
            "template": {
                "metadata": {
                    "labels": template_labels,
                    "annotations": {
                        "trnspec.io/config-sha256": spec.config_sha256,
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(spec.port),
                        "prometheus.io/path": METRICS_PATH,
                    },
                },
                "spec": pod_spec(
                    spec,
                    settings,
                    component=SERVE_COMPONENT,
                    main=main,
                    termination_grace_seconds=termination_grace_seconds(settings),
                    restart_policy="Always",
                ),
            },
        },
    }
