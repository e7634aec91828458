"""The wake path of a workload that scales to zero: the KEDA HTTP add-on's interceptor in front of
the serving Service, so a request at zero replicas wakes the workload and waits (bounded) or gets
503 with Retry-After, never a refused connection.

What it adds (only with `serving.scale_to_zero`):
- an InterceptorRoute (http.keda.sh/v1beta1, KEDA HTTP add-on 0.16.0): requests whose Host is the
  wake Service's name go to the serving Service; while no replica is ready they are held up to
  `wake.hold_seconds` and then sent to the busy responder (mode hold), or answered 503 at once
  (mode reply, the route's cold-start placeholder);
- the wake Service `<name>-wake`: an ExternalName alias of the interceptor's proxy Service, the
  address clients use (`http://<name>-wake.<namespace>.svc.cluster.local:8080`);
- an `external-push` trigger on the workload's ScaledObject: the interceptor's count of this
  route's requests (held ones included) activates it from zero; the queue-depth trigger still
  sizes it from one replica up (KEDA scales to the larger of the two);
- the busy responder (mode hold): nginx answering every request 503 with `Retry-After`, the
  route's fallback past the bound;
- NetworkPolicies, additive to the namespace's (infra/serving/manifests/network_policy.py): the
  interceptor may reach the serving pods and the responder on their ports, the workload's
  clients may reach the interceptor's proxy port (a policy in the add-on's namespace, where the
  platform isolates the interceptor pods), and nothing else changes. The interceptor forwards
  the Authorization header unchanged, so the server's API key check still applies.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from trnspec.boundary import json_io

from infra.compliance.scan_skips import skip_annotations
from infra.contracts import (
    KEDA_HTTP_INTERCEPTOR_POD_LABELS,
    KEDA_HTTP_INTERCEPTOR_SERVICE,
    KEDA_HTTP_PROXY_PORT,
    KEDA_HTTP_SCALER_ADDRESS,
    KEDA_NAMESPACE,
    NAMESPACE_NAME_LABEL,
)
from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata, selector_labels
from infra.serving.manifests.service import SERVICE_PORT, cluster_ip_service, service
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

#: The nginx image of the busy responder (unprivileged build: UID 101, listens on 8080).
BUSY_RESPONDER_IMAGE = "public.ecr.aws/nginx/nginx-unprivileged:1.29-alpine"
BUSY_COMPONENT = "wake-responder"
BUSY_PORT = 8080
BUSY_HEALTH_PATH = "/healthz"
#: checkov findings of the responder with the reasons (it serves one static reply).
BUSY_RESPONDER_SKIPS: dict[str, str] = {
    "CKV_K8S_43": (
        "nginx-unprivileged is pinned by version tag: its digest could not be resolved offline "
        "here; record it with `crane digest` before production"
    ),
    "CKV_K8S_15": "the version tag is pinned; IfNotPresent keeps restarts off the registry",
}


def wake_service_name(spec: WorkloadSpec) -> str:
    """The address clients of a workload that scales to zero use."""
    return f"{spec.name}-wake"


def busy_name(spec: WorkloadSpec) -> str:
    return f"{spec.name}-busy"


def wake_hosts(spec: WorkloadSpec) -> list[str]:
    """Host names a client may use for the wake Service; the interceptor matches the request's
    Host without its port (kedacore/http-add-on pkg/routing/table.go, stripPort)."""
    svc = wake_service_name(spec)
    return [f"{svc}.{spec.namespace}.svc.cluster.local", f"{svc}.{spec.namespace}.svc"]


def busy_body(settings: ServingSettings) -> str:
    """The 503's body: an OpenAI-style error a client library reports as it is."""
    seconds = settings.wake.retry_after_seconds
    message = f"the model server is starting from zero replicas; retry after {seconds} s"
    return json_io.dumps(
        {"error": {"message": message, "type": "service_unavailable", "code": 503}},
        None,
        separators=(",", ":"),
        newline=False,
    )


def busy_headers(settings: ServingSettings) -> dict[str, str]:
    return {
        "Retry-After": str(settings.wake.retry_after_seconds),
        "Content-Type": "application/json",
    }


def interceptor_route(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    """Routes the wake Service's host names to the serving Service, with the cold-start rule
    of `wake.mode` and the timeouts of `serving.wake`."""
    wake = settings.wake
    timeouts: dict[str, str] = {
        # No total deadline: a streamed generation lasts as long as it lasts (the server's own
        # limits bound it); only the wait for headers is bounded.
        "request": "0s",
        "responseHeader": f"{wake.response_header_seconds}s",
    }
    cold_start: dict[str, Any]
    if wake.mode == "hold":
        timeouts["readiness"] = f"{wake.hold_seconds}s"
        cold_start = {"fallback": {"service": {"name": busy_name(spec), "port": BUSY_PORT}}}
    else:
        cold_start = {
            "placeholder": {
                "response": {
                    "statusCode": 503,
                    "headers": busy_headers(settings),
                    "body": busy_body(settings),
                }
            }
        }
    scaling: dict[str, Any] = {
        # Held requests are in flight: the same per-replica target as the queue-depth trigger.
        "concurrency": {"targetValue": spec.streams_per_replica}
    }
    if wake.mode == "reply":
        # A request answered at once is in flight for a moment only: its arrival must still
        # count, so the rate over a minute wakes the workload too.
        scaling["requestRate"] = {
            "targetValue": spec.streams_per_replica,
            "window": "1m",
            "granularity": "1s",
        }
    return {
        "apiVersion": "http.keda.sh/v1beta1",
        "kind": "InterceptorRoute",
        "metadata": metadata(spec, spec.name, SERVE_COMPONENT),
        "spec": {
            "target": {"service": spec.name, "port": SERVICE_PORT},
            "rules": [{"hosts": wake_hosts(spec)}],
            "coldStart": cold_start,
            "timeouts": timeouts,
            "scalingMetric": scaling,
        },
    }


def wake_trigger(spec: WorkloadSpec) -> dict[str, Any]:
    """The ScaledObject trigger that reads this route's requests from the add-on's scaler."""
    return {
        "type": "external-push",
        "metadata": {"interceptorRoute": spec.name, "scalerAddress": KEDA_HTTP_SCALER_ADDRESS},
    }


def with_wake_trigger(scaled_object: Manifest, spec: WorkloadSpec) -> Manifest:
    """`scaled_object` with the wake trigger added to its triggers (a copy)."""
    out = copy.deepcopy(scaled_object)
    out["spec"]["triggers"].append(wake_trigger(spec))
    return out


def wake_service(spec: WorkloadSpec) -> Manifest:
    """`<name>-wake`: an alias (ExternalName) of the interceptor's proxy Service."""
    body = {
        "type": "ExternalName",
        "externalName": (f"{KEDA_HTTP_INTERCEPTOR_SERVICE}.{KEDA_NAMESPACE}.svc.cluster.local"),
        "ports": [{"name": "http", "port": KEDA_HTTP_PROXY_PORT, "protocol": "TCP"}],
    }
    return service(spec, wake_service_name(spec), SERVE_COMPONENT, body)


def busy_config_map(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    """nginx server block: 503 + Retry-After for everything but its own health path."""
    body = busy_body(settings).replace("'", "\\'")
    conf = "\n".join(
        [
            "server {",
            f"    listen {BUSY_PORT};",
            "    default_type application/json;",
            f'    location = {BUSY_HEALTH_PATH} {{ access_log off; return 200 "ok"; }}',
            "    location / {",
            f"        add_header Retry-After {settings.wake.retry_after_seconds} always;",
            f"        return 503 '{body}';",
            "    }",
            "}",
            "",
        ]
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(spec, busy_name(spec), BUSY_COMPONENT),
        "data": {"default.conf": conf},
    }


def busy_deployment(spec: WorkloadSpec) -> Manifest:
    """Two nginx replicas on the untainted (system) nodes, hardened, no API access."""
    probe = {"httpGet": {"path": BUSY_HEALTH_PATH, "port": BUSY_PORT}, "periodSeconds": 10}
    container = {
        "name": "nginx",
        "image": BUSY_RESPONDER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": BUSY_PORT, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi"},
        },
        "readinessProbe": probe,
        "livenessProbe": {**probe, "initialDelaySeconds": 5},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 101,
            "runAsGroup": 101,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "conf", "mountPath": "/etc/nginx/conf.d", "readOnly": True},
            # nginx-unprivileged keeps its pid file and temp paths under /tmp.
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    meta = metadata(spec, busy_name(spec), BUSY_COMPONENT)
    meta["annotations"] = skip_annotations(BUSY_RESPONDER_SKIPS)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": selector_labels(spec, BUSY_COMPONENT)},
            "template": {
                "metadata": {"labels": metadata(spec, busy_name(spec), BUSY_COMPONENT)["labels"]},
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [
                        {"name": "conf", "configMap": {"name": busy_name(spec)}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                },
            },
        },
    }


def busy_service(spec: WorkloadSpec) -> Manifest:
    return cluster_ip_service(spec, busy_name(spec), BUSY_COMPONENT, BUSY_PORT)


def _interceptor_peer() -> dict[str, Any]:
    return {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: KEDA_NAMESPACE}},
        "podSelector": {"matchLabels": dict(KEDA_HTTP_INTERCEPTOR_POD_LABELS)},
    }


def _client_peers(spec: WorkloadSpec, settings: ServingSettings) -> list[dict[str, Any]]:
    """The workload's clients, named from any namespace (the serving namespace by default)."""
    pods = {"matchLabels": dict(settings.client_pod_labels)}
    namespaces = settings.client_namespaces or (spec.namespace,)
    return [
        {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: ns}}, "podSelector": pods}
        for ns in namespaces
    ]


def _policy(meta: dict[str, Any], spec: dict[str, Any]) -> Manifest:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": spec,
    }


def wake_policies(spec: WorkloadSpec, settings: ServingSettings) -> list[Manifest]:
    """The wake path's NetworkPolicies (each adds to what the namespace's policies allow)."""
    proxy_port = [{"protocol": "TCP", "port": KEDA_HTTP_PROXY_PORT}]
    serve_from_interceptor = _policy(
        metadata(spec, f"{spec.name}-from-interceptor", SERVE_COMPONENT),
        {
            "podSelector": {"matchLabels": selector_labels(spec, SERVE_COMPONENT)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [_interceptor_peer()], "ports": [{"protocol": "TCP", "port": spec.port}]}
            ],
        },
    )
    clients_to_interceptor = _policy(
        metadata(spec, f"{spec.name}-clients-to-interceptor", "client"),
        {
            "podSelector": {"matchLabels": dict(settings.client_pod_labels)},
            "policyTypes": ["Egress"],
            "egress": [{"to": [_interceptor_peer()], "ports": proxy_port}],
        },
    )
    interceptor_meta = metadata(spec, f"{spec.namespace}-{spec.name}-clients", SERVE_COMPONENT)
    interceptor_meta["namespace"] = KEDA_NAMESPACE
    interceptor_from_clients = _policy(
        interceptor_meta,
        {
            "podSelector": {"matchLabels": dict(KEDA_HTTP_INTERCEPTOR_POD_LABELS)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": _client_peers(spec, settings), "ports": proxy_port}],
        },
    )
    policies = [serve_from_interceptor, clients_to_interceptor, interceptor_from_clients]
    if settings.wake.mode == "hold":
        policies.append(
            _policy(
                metadata(spec, busy_name(spec), BUSY_COMPONENT),
                {
                    "podSelector": {"matchLabels": selector_labels(spec, BUSY_COMPONENT)},
                    "policyTypes": ["Ingress", "Egress"],
                    "ingress": [
                        {
                            "from": [_interceptor_peer()],
                            "ports": [{"protocol": "TCP", "port": BUSY_PORT}],
                        }
                    ],
                },
            )
        )
    return policies


@dataclass(frozen=True)
class WakePath:
    """The wake path's manifests: `core` with the workload's core objects, `keda` needs the
    add-on's CRDs (InterceptorRoute)."""

    core: list[Manifest] = field(default_factory=list)
    keda: list[Manifest] = field(default_factory=list)
    enabled: bool = False
    spec: WorkloadSpec | None = None

    def scaled(self, scaled_object: Manifest) -> Manifest:
        """The workload's ScaledObject, with the wake trigger when the path is on."""
        if not self.enabled or self.spec is None:
            return scaled_object
        return with_wake_trigger(scaled_object, self.spec)


def wake_path(spec: WorkloadSpec, settings: ServingSettings) -> WakePath:
    """Nothing unless `serving.scale_to_zero`; then the route, the wake Service, the busy
    responder (mode hold) and the policies."""
    if not settings.scale_to_zero:
        return WakePath()
    core = [*wake_policies(spec, settings), wake_service(spec)]
    if settings.wake.mode == "hold":
        core += [busy_config_map(spec, settings), busy_deployment(spec), busy_service(spec)]
    return WakePath(core=core, keda=[interceptor_route(spec, settings)], enabled=True, spec=spec)
