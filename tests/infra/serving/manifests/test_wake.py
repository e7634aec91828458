"""The wake path of a workload that scales to zero: a request reaches the interceptor, waits for
a replica or gets 503 with Retry-After, and the namespace's NetworkPolicies still decide who may
talk to whom with the interceptor in the path.

The interceptor and scaler pods' labels are written here from the chart's templates (kedacore/
charts http-add-on 0.15.0: templates/interceptor/deployment.yaml, templates/scaler/deployment.yaml
and the matchLabels/labels helpers in templates/_helpers.tpl; the version labels are the pinned
chart's, 0.16.0), not from infra.contracts, so a wrong label in the contract is caught.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from api_rules import enum_problems, mount_problems, resource_name_problems
from crd_validation import unknown_custom_fields, validate_custom
from netpol_model import Cluster, Pod
from workload_cases import build, by_kind

from infra.compliance.api_server import api_server_findings
from infra.platform.addons.keda_http.network_policy import interceptor_policy
from infra.platform.addons.pins import KEDA_HTTP_CHART
from infra.serving.manifests.autoscaling import scaled_object
from infra.serving.manifests.pod import container_security_context
from infra.serving.manifests.spec import WorkloadSpec
from infra.serving.manifests.wake import (
    BUSY_RESPONDER_SKIPS,
    WakePath,
    busy_name,
    wake_path,
    wake_service_name,
)
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS

NS = "trnspec"
CLIENT = {"trnspec.io/client": "true"}
#: What the chart puts on the interceptor pods (release "http-add-on", chart "keda-add-ons-http").
_CHART_LABELS = {
    "app.kubernetes.io/name": "http-add-on",
    "app.kubernetes.io/part-of": "keda-add-ons-http",
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/instance": "http-add-on",
    "app.kubernetes.io/version": KEDA_HTTP_CHART.version,
    "helm.sh/chart": f"keda-add-ons-http-{KEDA_HTTP_CHART.version}",
}
INTERCEPTOR_LABELS = {**_CHART_LABELS, "app.kubernetes.io/component": "interceptor"}
SCALER_LABELS = {**_CHART_LABELS, "app.kubernetes.io/component": "scaler"}
PROXY, ADMIN, BUSY = 8080, 9090, 8080
#: The user nginx-unprivileged runs as (its Dockerfile's `ARG UID=101`, `ARG GID=101`).
NGINX_UID = 101


def _triggers(manifests: Any) -> list[dict[str, Any]]:
    return by_kind(manifests, "ScaledObject")["spec"]["triggers"]


def _route(manifests: Any) -> dict[str, Any]:
    return by_kind(manifests, "InterceptorRoute")


# --- what the wake path is made of -----------------------------------------------------------


def test_without_scale_to_zero_there_is_no_wake_path() -> None:
    _, _, manifests, _ = build()
    kinds = {m["kind"] for m in manifests.all()}
    assert "InterceptorRoute" not in kinds
    assert [t["type"] for t in _triggers(manifests)] == ["prometheus"]


def test_the_route_sends_the_wake_hosts_to_the_serving_service_port() -> None:
    _, spec, manifests, _ = build(scale_to_zero=True)
    route = _route(manifests)["spec"]
    serving = next(
        m for m in manifests.all() if m["kind"] == "Service" and m["metadata"]["name"] == spec.name
    )
    assert route["target"] == {"service": spec.name, "port": serving["spec"]["ports"][0]["port"]}
    wake = next(
        m
        for m in manifests.all()
        if m["kind"] == "Service" and m["metadata"]["name"] == wake_service_name(spec)
    )
    # Clients call the wake Service: an alias of the interceptor's proxy Service, whose name the
    # route must match as the request's Host.
    assert wake["spec"] == {
        "type": "ExternalName",
        "externalName": "keda-add-ons-http-interceptor-proxy.keda.svc.cluster.local",
        "ports": [{"name": "http", "port": PROXY, "protocol": "TCP"}],
    }
    fqdn = f"{wake_service_name(spec)}.{NS}.svc.cluster.local"
    assert fqdn in route["rules"][0]["hosts"]


def test_the_route_matches_the_short_service_name_clients_also_use() -> None:
    """A client in the cluster may call http://<name>-wake.<ns>.svc:8080 (the search path
    resolves it): its Host is the short form, and the interceptor routes on the Host alone, so
    a route without it answers 404 to that client and nothing wakes."""
    _, spec, manifests, _ = build(scale_to_zero=True)
    hosts = _route(manifests)["spec"]["rules"][0]["hosts"]
    assert f"{wake_service_name(spec)}.{NS}.svc" in hosts


def test_hold_mode_waits_the_bound_then_falls_back_to_the_503_responder() -> None:
    _, spec, manifests, _ = build(scale_to_zero=True, wake={"hold_seconds": 120})
    route = _route(manifests)["spec"]
    assert route["timeouts"]["readiness"] == "120s"
    # No total deadline: a long stream must not be cut by the proxy.
    assert route["timeouts"]["request"] == "0s"
    fallback = route["coldStart"]["fallback"]["service"]
    busy = next(
        m
        for m in manifests.all()
        if m["kind"] == "Service" and m["metadata"]["name"] == busy_name(spec)
    )
    assert fallback == {"name": busy_name(spec), "port": busy["spec"]["ports"][0]["port"]}
    conf = next(
        m
        for m in manifests.all()
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == busy_name(spec)
    )["data"]["default.conf"]
    assert "add_header Retry-After 600 always;" in conf
    assert "return 503 " in conf
    deployment = next(
        m
        for m in manifests.all()
        if m["kind"] == "Deployment" and m["metadata"]["name"] == busy_name(spec)
    )
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"].items() >= busy["spec"]["selector"].items()
    assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == BUSY


def test_reply_mode_answers_503_with_retry_after_at_once_and_counts_arrivals() -> None:
    _, _, manifests, _ = build(
        scale_to_zero=True, wake={"mode": "reply", "retry_after_seconds": 240}
    )
    route = _route(manifests)["spec"]
    response = route["coldStart"]["placeholder"]["response"]
    assert response["statusCode"] == 503
    assert response["headers"]["Retry-After"] == "240"
    assert "readiness" not in route["timeouts"]
    # A request answered at once is gone before the scaler polls concurrency: the rate wakes.
    assert "requestRate" in route["scalingMetric"]
    kinds_named_busy = [m for m in manifests.all() if m["metadata"]["name"].endswith("-busy")]
    assert kinds_named_busy == []


def test_the_scaled_object_wakes_on_the_routes_requests_and_keeps_the_queue_trigger() -> None:
    _, spec, manifests, _ = build(scale_to_zero=True)
    scaled = by_kind(manifests, "ScaledObject")["spec"]
    assert scaled["minReplicaCount"] == 0
    types = [t["type"] for t in scaled["triggers"]]
    assert types == ["prometheus", "external-push"]
    wake = scaled["triggers"][1]["metadata"]
    assert wake["interceptorRoute"] == _route(manifests)["metadata"]["name"]
    # The scaler's Service in KEDA's namespace (chart: "{{ .Chart.Name }}-external-scaler").
    assert wake["scalerAddress"] == "keda-add-ons-http-external-scaler.keda:9090"
    assert _route(manifests)["metadata"]["namespace"] == spec.namespace


# --- who may talk to whom with the interceptor in the path -----------------------------------


def _world(**settings: Any) -> tuple[Cluster, dict[str, Pod], int]:
    _, spec, manifests, _ = build(scale_to_zero=True, **settings)
    policies = [m for m in manifests.all() if m["kind"] == "NetworkPolicy"]
    deployment = next(
        m
        for m in manifests.all()
        if m["kind"] == "Deployment" and m["metadata"]["name"] == spec.name
    )
    tmpl = deployment["spec"]["template"]
    port = tmpl["spec"]["containers"][0]["ports"][0]["containerPort"]
    pods = {
        "server": Pod(spec.namespace, dict(tmpl["metadata"]["labels"]), "10.0.32.10"),
        "interceptor": Pod("keda", INTERCEPTOR_LABELS, "10.0.33.5"),
        "scaler": Pod("keda", SCALER_LABELS, "10.0.33.6"),
        "client": Pod(spec.namespace, {**CLIENT, "app": "bench"}, "10.0.32.20"),
        "stranger": Pod(spec.namespace, {"app": "other"}, "10.0.32.21"),
        "other-ns": Pod("other", {**CLIENT}, "10.0.34.2"),
        "apps-client": Pod("apps", {**CLIENT}, "10.0.35.2"),
    }
    busy = [
        m
        for m in manifests.all()
        if m["kind"] == "Deployment" and m["metadata"]["name"] != spec.name
    ]
    if busy:
        labels = busy[0]["spec"]["template"]["metadata"]["labels"]
        pods["busy"] = Pod(spec.namespace, dict(labels), "10.0.32.30")
    cluster = Cluster(
        namespaces={spec.namespace: {}, "keda": {}, "other": {}, "apps": {}, "kube-system": {}},
        policies=[*policies, interceptor_policy()],
    )
    return cluster, pods, port


def test_clients_reach_the_interceptor_and_it_reaches_the_server() -> None:
    cluster, p, port = _world()
    assert cluster.allows(p["client"], p["interceptor"], PROXY)
    assert cluster.allows(p["interceptor"], p["server"], port)
    # The direct path the namespace already allowed still holds.
    assert cluster.allows(p["client"], p["server"], port)


def test_only_the_workloads_clients_reach_the_interceptor_proxy() -> None:
    cluster, p, _ = _world()
    assert not cluster.allows(p["stranger"], p["interceptor"], PROXY)
    # The interceptor's own rule admits the client-labelled pods only, whatever else egresses.
    assert not cluster.admits(p["interceptor"], p["stranger"], PROXY)
    # Client labels in a namespace that is not a client namespace: refused at the interceptor.
    assert not cluster.admits(p["interceptor"], p["other-ns"], PROXY)
    # The admin port (request counts) is the scaler's only.
    assert cluster.allows(p["scaler"], p["interceptor"], ADMIN)
    assert not cluster.admits(p["interceptor"], p["client"], ADMIN)


def test_the_interceptor_opens_only_the_server_port_and_strangers_stay_out() -> None:
    cluster, p, port = _world()
    assert not cluster.admits(p["server"], p["interceptor"], port + 1)
    assert not cluster.allows(p["stranger"], p["server"], port)
    assert not cluster.allows(p["other-ns"], p["server"], port)


def test_the_busy_responder_answers_the_interceptor_only_and_sends_nothing() -> None:
    cluster, p, _ = _world()
    assert cluster.allows(p["interceptor"], p["busy"], BUSY)
    assert not cluster.admits(p["busy"], p["client"], BUSY)
    assert not cluster.allows(p["busy"], p["server"], 8000)


def test_client_namespaces_move_the_interceptor_rule_with_them() -> None:
    cluster, p, _ = _world(client_namespaces=["apps"])
    assert cluster.admits(p["interceptor"], p["apps-client"], PROXY)
    assert not cluster.admits(p["interceptor"], p["client"], PROXY)


def test_hosts_and_policies_follow_the_workload_name() -> None:
    _, spec, manifests, _ = build(scale_to_zero=True, name="chat")
    assert spec.name == "chat"
    route = _route(manifests)["spec"]
    assert route["rules"][0]["hosts"][0] == f"chat-wake.{NS}.svc.cluster.local"
    assert route["target"]["service"] == "chat"


# --- the route against the add-on's API ------------------------------------------------------

_DURATION = {"type": "string", "pattern": "^[0-9]+(ns|us|ms|s|m|h)$"}
_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
_SERVICE_REF = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1}, "port": _PORT},
    "required": ["name"],
    "additionalProperties": False,
}
#: The fields of InterceptorRoute v1beta1 this project writes, with their types, as the add-on's
#: Go API declares them (kedacore/http-add-on v0.15.0 operator/apis/http/v1beta1/
#: interceptorroute_types.go: json tags, kubebuilder minimum/maximum/default markers). Written
#: here by hand, closed: a misspelt or moved field fails.
ROUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "http.keda.sh/v1beta1"},
        "kind": {"const": "InterceptorRoute"},
        "metadata": {"type": "object", "required": ["name", "namespace"]},
        "spec": {
            "type": "object",
            "required": ["target", "scalingMetric"],
            "additionalProperties": False,
            "properties": {
                "target": {
                    "type": "object",
                    "properties": {"service": {"type": "string", "minLength": 1}, "port": _PORT},
                    "required": ["service"],
                    "additionalProperties": False,
                },
                "rules": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"hosts": {"type": "array", "items": {"type": "string"}}},
                        "additionalProperties": False,
                    },
                },
                "coldStart": {
                    "type": "object",
                    "additionalProperties": False,
                    "minProperties": 1,
                    "properties": {
                        "fallback": {
                            "type": "object",
                            "properties": {"service": _SERVICE_REF},
                            "additionalProperties": False,
                        },
                        "placeholder": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "response": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "statusCode": {
                                            "type": "integer",
                                            "minimum": 100,
                                            "maximum": 599,
                                        },
                                        "body": {"type": "string", "maxLength": 32768},
                                        "headers": {
                                            "type": "object",
                                            "additionalProperties": {"type": "string"},
                                        },
                                    },
                                }
                            },
                        },
                    },
                },
                "timeouts": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "readiness": _DURATION,
                        "request": _DURATION,
                        "responseHeader": _DURATION,
                    },
                },
                "scalingMetric": {
                    "type": "object",
                    "additionalProperties": False,
                    "minProperties": 1,
                    "properties": {
                        "concurrency": {
                            "type": "object",
                            "properties": {"targetValue": {"type": "integer", "minimum": 1}},
                            "required": ["targetValue"],
                            "additionalProperties": False,
                        },
                        "requestRate": {
                            "type": "object",
                            "properties": {
                                "targetValue": {"type": "integer", "minimum": 1},
                                "window": _DURATION,
                                "granularity": _DURATION,
                            },
                            "required": ["targetValue"],
                            "additionalProperties": False,
                        },
                    },
                },
            },
        },
    },
}


@pytest.mark.parametrize("mode", ["hold", "reply"])
def test_the_route_fits_the_add_ons_api(mode: str) -> None:
    _, _, manifests, _ = build(scale_to_zero=True, wake={"mode": mode})
    route = _route(manifests)
    jsonschema.validate(route, ROUTE_SCHEMA)
    # The API's CEL rule on the target: exactly one of port/portName.
    target = route["spec"]["target"]
    assert ("port" in target) != ("portName" in target)


def test_the_api_check_refuses_a_misspelt_field() -> None:
    _, _, manifests, _ = build(scale_to_zero=True)
    bad = json.loads(json.dumps(_route(manifests)))
    bad["spec"]["timeouts"]["readinessTimeout"] = bad["spec"]["timeouts"].pop("readiness")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, ROUTE_SCHEMA)


# --- the wake path's objects as the API server, KEDA and nginx read them ----------------------

_NGINX_TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[{};]|[^\s{};'\"]+")
Directive = tuple[list[str], list[Any] | None]


def _wake(**settings: Any) -> tuple[WorkloadSpec, Any, WakePath]:
    _, spec, _, serving = build(scale_to_zero=True, **settings)
    return spec, serving, wake_path(spec, serving)


def _named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [m for m in objects if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def _nginx(text: str) -> list[Directive]:
    """nginx's configuration as it reads it: `(words, None)` for `a b;`, `(words, children)` for
    `a b { ... }`; quoted words keep their quotes. A stray brace or an unterminated directive is
    refused, as nginx refuses to start on it."""
    stack: list[list[Directive]] = [[]]
    words: list[str] = []
    for token in _NGINX_TOKEN.findall(text):
        if token == ";":
            stack[-1].append((words, None))
        elif token == "{":
            block: list[Directive] = []
            stack[-1].append((words, block))
            stack.append(block)
        elif token == "}":
            if words or len(stack) == 1:
                raise ValueError(f"unexpected '}}' after {words}")
            stack.pop()
            continue
        else:
            words.append(token)
            continue
        words = []
    if words or len(stack) != 1:
        raise ValueError(f"unterminated configuration at {words}")
    return stack[0]


def _unquote(word: str) -> str:
    assert word[0] == word[-1] == "'", word
    return word[1:-1].replace("\\'", "'")


@pytest.mark.parametrize("mode", ["hold", "reply"])
def test_the_wake_path_objects_are_what_the_api_server_accepts(mode: str) -> None:
    """Each built-in object validates strictly (no field the API does not declare) against the
    newest Kubernetes the platform deploys, passes the API server's own rules (names, labels,
    quantities, a request under its limit, what a pod names exists) and its fixed value sets."""
    _, _, wake = _wake(wake={"mode": mode})
    newest = f"{SUPPORTED_KUBERNETES_VERSIONS[-1]}.0"
    refused = []
    for m in wake.core:
        try:
            kubernetes_validate.validate(m, newest, strict=True)
        except kubernetes_validate.ValidationError as err:
            refused.append(f"{m['kind']}/{m['metadata']['name']}: {err.message} at {err.path}")
    assert refused == []
    assert api_server_findings([*wake.core, *wake.keda]) == []
    rules = (enum_problems, resource_name_problems, mount_problems)
    assert [p for m in wake.core for rule in rules for p in rule(m)] == []


@pytest.mark.parametrize("mode", ["hold", "reply"])
def test_the_wake_trigger_fits_keda_s_crd_and_leaves_the_scaled_object_it_adds_to_be(
    mode: str,
) -> None:
    spec, serving, wake = _wake(wake={"mode": mode})
    plain = scaled_object(spec, serving)
    before = json.loads(json.dumps(plain))
    scaled = wake.scaled(plain)
    assert plain == before
    assert validate_custom([scaled]) == [[]]
    assert unknown_custom_fields([scaled]) == [[]]


def test_the_responder_runs_as_nginx_s_own_user_hardened_and_without_api_access() -> None:
    spec, _, wake = _wake()
    deployment = _named(wake.core, "Deployment", busy_name(spec))
    # Two replicas: the route's fallback keeps one through a node drain.
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    (nginx,) = pod["containers"]
    context = nginx["securityContext"]
    hardened = {k: v for k, v in container_security_context().items() if k != "privileged"}
    assert {k: context[k] for k in hardened} == hardened
    assert context.get("privileged", False) is False
    assert (context["runAsNonRoot"], context["runAsUser"], context["runAsGroup"]) == (
        True,
        NGINX_UID,
        NGINX_UID,
    )
    # What checkov finds on it is explained on the object (test_manifest_scan reads these).
    explained = {
        v.partition("=")[0]
        for k, v in deployment["metadata"]["annotations"].items()
        if k.startswith("checkov.io/skip")
    }
    assert explained == set(BUSY_RESPONDER_SKIPS)


def test_the_responder_reads_its_server_block_and_answers_its_probes() -> None:
    spec, _, wake = _wake()
    pod = _named(wake.core, "Deployment", busy_name(spec))["spec"]["template"]["spec"]
    config = _named(wake.core, "ConfigMap", busy_name(spec))
    (nginx,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in nginx["volumeMounts"]}
    # nginx includes conf.d/*.conf: the ConfigMap's default.conf replaces the image's server.
    assert mounts["/etc/nginx/conf.d"]["readOnly"] is True
    conf_volume = volumes[mounts["/etc/nginx/conf.d"]["name"]]
    assert conf_volume["configMap"] == {"name": config["metadata"]["name"]}
    assert set(config["data"]) == {"default.conf"}
    # The root filesystem is read-only; nginx-unprivileged writes its pid and temp files in /tmp.
    assert volumes[mounts["/tmp"]["name"]]["emptyDir"]["sizeLimit"] == "16Mi"
    ((words, server),) = _nginx(config["data"]["default.conf"])
    assert words == ["server"] and server is not None
    (port,) = nginx["ports"]
    directives = {w[0]: w[1:] for w, block in server if block is None}
    assert directives == {
        "listen": [str(port["containerPort"])],
        "default_type": ["application/json"],
    }
    locations = {tuple(w[1:]): block for w, block in server if w[0] == "location"}
    for probe in (nginx["readinessProbe"], nginx["livenessProbe"]):
        assert probe["httpGet"]["port"] == port["containerPort"]
        health = locations[("=", probe["httpGet"]["path"])]
        assert [w[:2] for w, _ in health if w[0] == "return"] == [["return", "200"]]


@pytest.mark.parametrize("seconds", [90, 240])
def test_both_modes_answer_the_same_openai_error_with_retry_after(seconds: int) -> None:
    """Past the bound (hold: nginx, for every path but its health) or at once (reply: the
    route's placeholder): 503, `Retry-After: <seconds>` and one JSON error body."""
    spec, _, held = _wake(wake={"retry_after_seconds": seconds})
    conf = _named(held.core, "ConfigMap", busy_name(spec))["data"]["default.conf"]
    ((_, server),) = _nginx(conf)
    assert server is not None
    locations = {tuple(w[1:]): block for w, block in server if w[0] == "location"}
    assert len(locations) == 2
    everything = locations[("/",)]
    assert (["add_header", "Retry-After", str(seconds), "always"], None) in everything
    ((status, body),) = [w[1:] for w, _ in everything if w[0] == "return"]
    _, _, replied = _wake(wake={"mode": "reply", "retry_after_seconds": seconds})
    response = replied.keda[0]["spec"]["coldStart"]["placeholder"]["response"]
    assert int(status) == response["statusCode"] == 503
    assert _unquote(body) == response["body"]
    assert response["headers"] == {"Retry-After": str(seconds), "Content-Type": "application/json"}
    error = json.loads(response["body"])["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", 503)
    assert f" {seconds} s" in error["message"]
