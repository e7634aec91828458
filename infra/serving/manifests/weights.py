"""The weights Job: copy the profile's models from the Hugging Face Hub into the model bucket.

On a first deploy the bucket is empty; this Job fills models/<served name>/ with what the pods
stage (`python -m trnspec stage hub`: snapshot, then the verified upload, manifest last), while
the precompile Job and the replicas wait for the manifests (trnspec.serve.runner,
`weights_wait_delays`). One container per model, in parallel. It needs no Neuron device: it runs
on the Trn2 node the replicas bring up (tolerating the taint, selecting the same node labels,
so the autoscaler scales the same pool), with its scratch on its own EBS volume so it never takes
node disk from the serving pods. That volume has the size the pods' data volume has
(`WorkloadSpec.storage_gib`: `serving.weights_volume_gib`, else sized from the model), so it
always holds the snapshots the pods later stage. A gated model's token is read at run time
from the secret whose ARN is in the environment (an empty secret: no token).
"""

from __future__ import annotations

import hashlib

from trnspec.config.pod_contract import ENTRYPOINT, ENV_HF_TOKEN_SECRET

from infra.compliance.scan_skips import WEIGHTS_POD_SKIPS
from infra.serving.manifests.job import job, node_pod_spec
from infra.serving.manifests.pod import (
    WEIGHTS_COMPONENT,
    Manifest,
    container_security_context,
    labels,
    selector_labels,
    service_account_name,
)
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

#: Scratch for the snapshots (one subdirectory per model).
WORK_DIR = "/work"
#: How long the Job may run in all (every model, every retry): 70B in bf16 is 141 GB.
WEIGHTS_DEADLINE_SECONDS = 4 * 3600
#: Pod retries before the Job fails (a rerun resumes the files already downloaded).
WEIGHTS_BACKOFF_LIMIT = 4
#: What one copy container asks for: the Hub client and the multipart upload, not the model.
#: The memory request is what fits beside a replica on a one-chip trn2.3xlarge (the replica
#: takes 90 % of the node: 115 GiB of 116.9 allocatable), so the first deploy's copy and its
#: replica share the one node instead of starting a second just for the copy; the
#: transfers' buffers are 512 MiB (TRANSFER_FLAGS) and the limit stays above the request.
CPU_REQUEST, CPU_LIMIT = "1", "2"
MEMORY_REQUEST_GIB = 1
MEMORY_LIMIT_GIB = 4
#: Parallel transfers per container: 2 files x 4 parts x 64 MiB in memory at most.
TRANSFER_FLAGS = ["--workers", "2", "--parts-in-flight", "4", "--no-progress"]


def weights_job_name(spec: WorkloadSpec, rerun: str | None) -> str:
    """New copies (another model or revision), or a new `serving.weights_rerun` token, make a
    new Job: a Job's template is immutable, and `cdk deploy` of an unchanged template changes
    nothing on the cluster."""
    key = repr(spec.hub_copies) if rerun is None else f"{spec.hub_copies!r}/{rerun}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{spec.name}-weights-{digest}"


def _env(spec: WorkloadSpec) -> list[dict[str, str]]:
    env = [
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "XDG_CACHE_HOME", "value": "/tmp/cache"},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
    ]
    if spec.region:
        env.append({"name": "AWS_REGION", "value": spec.region})
    if spec.hf_token_secret_arn:
        env.append({"name": ENV_HF_TOKEN_SECRET, "value": spec.hf_token_secret_arn})
    return env


def _copy_container(spec: WorkloadSpec, index: int) -> Manifest:
    copy = spec.hub_copies[index]
    repo = f"{copy.repo}@{copy.revision}" if copy.revision else copy.repo
    return {
        "name": f"copy-{index}",
        "image": spec.image_uri,
        "imagePullPolicy": "IfNotPresent",
        "command": list(ENTRYPOINT),
        "args": [
            "stage",
            "hub",
            repo,
            f"s3://{spec.bucket_name}/{copy.key}",
            "--work-dir",
            f"{WORK_DIR}/{index}",
            *TRANSFER_FLAGS,
        ],
        "env": _env(spec),
        "resources": {
            "requests": {"cpu": CPU_REQUEST, "memory": f"{MEMORY_REQUEST_GIB}Gi"},
            "limits": {"cpu": CPU_LIMIT, "memory": f"{MEMORY_LIMIT_GIB}Gi"},
        },
        "volumeMounts": [
            {"name": "work", "mountPath": WORK_DIR},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "securityContext": container_security_context(),
    }


def weights_job(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    """The Job, or nothing to do when no model comes from the Hub (`spec.hub_copies` empty)."""
    work = {
        "name": "work",
        "ephemeral": {
            "volumeClaimTemplate": {
                "metadata": {"labels": selector_labels(spec, WEIGHTS_COMPONENT)},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": settings.ebs_storage_class,
                    "resources": {"requests": {"storage": f"{spec.storage_gib}Gi"}},
                },
            }
        },
    }
    pod = node_pod_spec(
        spec,
        service_account=service_account_name(spec, WEIGHTS_COMPONENT),
        containers=[_copy_container(spec, i) for i in range(len(spec.hub_copies))],
        volumes=[work, {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}}],
    )
    return job(
        spec,
        name=weights_job_name(spec, settings.weights_rerun),
        component=WEIGHTS_COMPONENT,
        skips=WEIGHTS_POD_SKIPS,
        backoff_limit=WEIGHTS_BACKOFF_LIMIT,
        deadline_seconds=WEIGHTS_DEADLINE_SECONDS,
        template={"metadata": {"labels": labels(spec, WEIGHTS_COMPONENT)}, "spec": pod},
    )
