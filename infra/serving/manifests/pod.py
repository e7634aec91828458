"""The Neuron pod template shared by the serving Deployment and the precompile Job.

One builder for both so the Job compiles exactly the graphs the Deployment will load: same image,
same config file, same devices, same LNC node, same cache location.
"""

from __future__ import annotations

from typing import Any

from trnspec.config.pod_contract import (
    ENTRYPOINT,
    ENV_API_KEY_SECRET,
    ENV_COMPILE_CACHE,
    ENV_DATA_DIR,
    ENV_DRAIN_SECONDS,
    ENV_READY_FILE,
    READY_FILE,
)

from infra.contracts import (
    APP_LABEL,
    COMPILE_CACHE_PREFIX,
    COMPONENT_LABEL,
    CONFIG_DIR,
    CONFIG_FILE,
    DATA_DIR,
    IMAGE_UID,
    INSTANCE_TYPE_LABEL,
    LNC_NODE_LABEL,
    MANAGED_BY_LABEL,
    NEURON_DEVICE_RESOURCE,
    NEURON_SCHEDULER_NAME,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    PART_OF,
    PART_OF_LABEL,
)
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

Manifest = dict[str, Any]

SERVE_COMPONENT = "server"
PRECOMPILE_COMPONENT = "precompile"
WEIGHTS_COMPONENT = "weights"
#: Every component; each runs as its own service account (the serving stack creates them all).
COMPONENTS = (SERVE_COMPONENT, PRECOMPILE_COMPONENT, WEIGHTS_COMPONENT)
_ACCOUNT_SUFFIX = {PRECOMPILE_COMPONENT: "compile", WEIGHTS_COMPONENT: "weights"}


def labels(spec: WorkloadSpec, component: str) -> dict[str, str]:
    return {
        APP_LABEL: spec.name,
        COMPONENT_LABEL: component,
        PART_OF_LABEL: PART_OF,
        MANAGED_BY_LABEL: "aws-cdk",
    }


def selector_labels(spec: WorkloadSpec, component: str) -> dict[str, str]:
    """The immutable subset used in selectors (Deployment, Service, PDB)."""
    return {APP_LABEL: spec.name, COMPONENT_LABEL: component}


def metadata(spec: WorkloadSpec, name: str, component: str) -> dict[str, Any]:
    return {"name": name, "namespace": spec.namespace, "labels": labels(spec, component)}


def config_map_name(spec: WorkloadSpec) -> str:
    # The hash makes a config change a new ConfigMap, so running pods keep the file they
    # started with and the Deployment rolls instead of pods reading a half-updated mount.
    return f"{spec.name}-config-{spec.short_hash}"


def service_account_name(spec: WorkloadSpec, component: str) -> str:
    return f"{spec.name}-{_ACCOUNT_SUFFIX.get(component, 'serve')}"


def _env(spec: WorkloadSpec, settings: ServingSettings) -> list[dict[str, Any]]:
    """Where the engine (trnspec.serve) stages models, finds the shared compile cache, and how
    long it drains: the names are the pod contract's (trnspec.config.pod_contract), which the engine
    reads too, so the two cannot drift apart."""
    env = [
        {"name": ENV_DATA_DIR, "value": DATA_DIR},
        {"name": ENV_COMPILE_CACHE, "value": f"s3://{spec.bucket_name}/{COMPILE_CACHE_PREFIX}"},
        {"name": ENV_READY_FILE, "value": READY_FILE},
        # The preStop sleep has already passed when SIGTERM arrives; the engine then waits for
        # in-flight requests at most this long (the grace period covers both, plus a margin).
        {"name": ENV_DRAIN_SECONDS, "value": str(settings.max_request_seconds)},
        # Writable locations on an otherwise read-only root filesystem.
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "XDG_CACHE_HOME", "value": "/tmp/cache"},
    ]
    if spec.region:
        env.append({"name": "AWS_REGION", "value": spec.region})
    return env


def api_key_env(spec: WorkloadSpec) -> list[dict[str, Any]]:
    """The API key secret's ARN for the serving container (the engine reads the key itself;
    trnspec.serve.api_key). The precompile Job gets none: nothing can reach its vLLM."""
    if spec.api_key_secret_arn is None:
        return []
    return [{"name": ENV_API_KEY_SECRET, "value": spec.api_key_secret_arn}]


def _resources(spec: WorkloadSpec, settings: ServingSettings) -> dict[str, Any]:
    requests: dict[str, str] = {
        "cpu": str(spec.cpu),
        "memory": f"{spec.memory_gib}Gi",
        NEURON_DEVICE_RESOURCE: str(spec.neuron_devices),
    }
    if settings.weights_storage == "node-local":
        requests["ephemeral-storage"] = f"{spec.storage_gib}Gi"
    # No CPU limit (throttling the host side of the runtime hurts latency); memory and devices
    # are limited to what is requested.
    limits = {
        "memory": requests["memory"],
        NEURON_DEVICE_RESOURCE: requests[NEURON_DEVICE_RESOURCE],
    }
    return {"requests": requests, "limits": limits}


def _data_volume(spec: WorkloadSpec, settings: ServingSettings) -> dict[str, Any]:
    if settings.weights_storage == "node-local":
        return {"name": "data", "emptyDir": {"sizeLimit": f"{spec.storage_gib}Gi"}}
    return {
        "name": "data",
        "ephemeral": {
            "volumeClaimTemplate": {
                "metadata": {"labels": selector_labels(spec, SERVE_COMPONENT)},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": settings.ebs_storage_class,
                    "resources": {"requests": {"storage": f"{spec.storage_gib}Gi"}},
                },
            }
        },
    }


def container(
    spec: WorkloadSpec, settings: ServingSettings, *, args: list[str], name: str
) -> dict[str, Any]:
    """The engine container with devices, mounts and a locked-down security context.

    The Neuron runtime needs no privileges: the device plugin hands the container its
    /dev/neuron* nodes (mode 0666 under the Neuron driver's udev rule), so the process runs as
    the image's non-root user, with privileged mode, capabilities and privilege escalation off
    and a read-only root filesystem (scratch goes to emptyDirs: /tmp, /var/tmp where the Neuron
    compiler keeps its work cache, and the data volume).
    """
    return {
        "name": name,
        "image": spec.image_uri,
        "imagePullPolicy": "IfNotPresent",
        # The engine's entrypoint: validates, stages from S3, execs vLLM.
        "command": list(ENTRYPOINT),
        "args": args,
        "env": _env(spec, settings),
        "resources": _resources(spec, settings),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "var-tmp", "mountPath": "/var/tmp"},
        ],
        "securityContext": container_security_context(),
    }


def container_security_context() -> dict[str, Any]:
    """No privileges, no capabilities, a read-only root filesystem (every container here)."""
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security_context() -> dict[str, Any]:
    """The image's non-root user; volumes (data emptyDir, EBS claims) writable by it."""
    return {
        "runAsNonRoot": True,
        "runAsUser": IMAGE_UID,
        "runAsGroup": IMAGE_UID,
        "fsGroup": IMAGE_UID,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def trn2_placement(spec: WorkloadSpec) -> dict[str, Any]:
    """nodeSelector and tolerations of a pod that runs on the workload's Trn2 nodes."""
    return {
        "nodeSelector": {INSTANCE_TYPE_LABEL: spec.instance_type, LNC_NODE_LABEL: str(spec.lnc)},
        "tolerations": [
            {"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": NEURON_TAINT_EFFECT}
        ],
    }


def pod_spec(
    spec: WorkloadSpec,
    settings: ServingSettings,
    *,
    component: str,
    main: dict[str, Any],
    termination_grace_seconds: int,
    restart_policy: str,
) -> dict[str, Any]:
    """Pod spec that lands on a Trn2 node of the right type through the Neuron scheduler."""
    return {
        "schedulerName": NEURON_SCHEDULER_NAME,
        "serviceAccountName": service_account_name(spec, component),
        # No Kubernetes API token: the engine never calls the API server. EKS Pod Identity does
        # not need it either: its webhook adds its own projected serviceAccountToken volume
        # (audience pods.eks.amazonaws.com) and the AWS_CONTAINER_* env, and the automount flag
        # only governs the default kube-api-access volume (amazon-eks-pod-identity-webhook,
        # pkg/handler testdata/containercredentials; Kubernetes "Configure Service Accounts
        # for Pods"). Not verified on a live cluster here: see docs/workload.md, "Security".
        "automountServiceAccountToken": False,
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": termination_grace_seconds,
        **trn2_placement(spec),
        "securityContext": pod_security_context(),
        "enableServiceLinks": False,
        "containers": [main],
        "volumes": [
            {
                "name": "config",
                "configMap": {
                    "name": config_map_name(spec),
                    "items": [{"key": CONFIG_FILE, "path": CONFIG_FILE}],
                },
            },
            {
                "name": "dshm",
                "emptyDir": {"medium": "Memory", "sizeLimit": f"{settings.shm_gib}Gi"},
            },
            _data_volume(spec, settings),
            {"name": "tmp", "emptyDir": {"sizeLimit": "16Gi"}},
            {"name": "var-tmp", "emptyDir": {"sizeLimit": "64Gi"}},
        ],
    }


def config_path() -> str:
    return f"{CONFIG_DIR}/{CONFIG_FILE}"
