"""The precompile Job: compile the profile's Neuron graphs once and publish them to the cache."""

from __future__ import annotations

from trnspec.config.pod_contract import SERVE_COMMAND
from trnspec.hardware.topology import instance

from infra.compliance.scan_skips import NEURON_POD_SKIPS
from infra.serving.manifests.job import job
from infra.serving.manifests.pod import (
    PRECOMPILE_COMPONENT,
    Manifest,
    config_path,
    container,
    labels,
    pod_spec,
)
from infra.serving.manifests.spec import WorkloadSpec
from infra.serving.manifests.weights import WEIGHTS_DEADLINE_SECONDS
from infra.settings.serving import ServingSettings

#: Pod retries: a pod waits for the weights itself (trnspec.serve.runner, about 2 hours), so a
#: retry is for a lost node or a failed compile, not for a bucket still being filled.
PRECOMPILE_BACKOFF_LIMIT = 3

#: Arguments of the engine's compile-only mode (engine-io: stage, compile, upload the
#: artifacts under the cache key, exit 0).
PRECOMPILE_ARGS = [SERVE_COMMAND, "--config", "{config}", "--compile-only"]


def precompile_job_name(spec: WorkloadSpec) -> str:
    # A Job's pod template is immutable: a new config must be a new Job, so the name carries
    # the config hash and the old Job is pruned by the manifest's owner.
    return f"{spec.name}-precompile-{spec.short_hash}"


def precompile_job_wanted(spec: WorkloadSpec) -> bool:
    """Whether the workload gets a precompile Job: not on a one-chip node (trn2.3xlarge), where
    the Job and the replica each need the only chip, so the Job would hold it while the
    replica, Pending, starts a second node billed for as long as the compile takes. There the
    replica compiles on a miss itself and publishes the graphs to the compile cache (the serve
    role may write it), which is what the Job would have done on the same kind of node. A
    replica that takes every chip of a larger node (the legacy TP=64 profiles, refused for
    deployment) keeps its Job, on a node of its own, as before."""
    return instance(spec.instance_type).chips > 1


def precompile_job(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    args = [a.format(config=config_path()) for a in PRECOMPILE_ARGS]
    main = container(spec, settings, args=args, name="compile")
    return job(
        spec,
        name=precompile_job_name(spec),
        component=PRECOMPILE_COMPONENT,
        skips=NEURON_POD_SKIPS,
        # Created suspended when precompile_on_deploy is off; resume it by hand
        # (docs/workload.md) before scaling out.
        suspend=not settings.precompile_on_deploy,
        backoff_limit=PRECOMPILE_BACKOFF_LIMIT,
        # The compile's own budget plus the weights Job's: on a first deploy it starts with an
        # empty bucket and waits for the copy.
        deadline_seconds=settings.precompile_timeout_hours * 3600 + WEIGHTS_DEADLINE_SECONDS,
        template={
            "metadata": {
                "labels": labels(spec, PRECOMPILE_COMPONENT),
                "annotations": {"trnspec.io/config-sha256": spec.config_sha256},
            },
            "spec": pod_spec(
                spec,
                settings,
                component=PRECOMPILE_COMPONENT,
                main=main,
                termination_grace_seconds=60,
                restart_policy="Never",
            ),
        },
    )
