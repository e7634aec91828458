"""What the workload needs of an existing cluster, read from its manifests, and the node-side
part evaluated on `kubectl get nodes -o json` objects (pure: no cluster, no mocks)."""

from __future__ import annotations

import copy
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from trnspec.boundary.errors import BoundaryError

from infra.serving.manifests.placeholders import BUCKET_PLACEHOLDER, IMAGE_PLACEHOLDER
from infra.serving.manifests.spec import check_serving
from infra.serving.preflight import workload_preflight
from trnspec_tools.cluster_requirements import (
    evaluate,
    parse_node_group,
    parse_nodes,
    pod_ask,
    requirements,
    tolerates,
)

NEURON_TAINT = {"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}


@cache
def _manifests(items: tuple[tuple[str, Any], ...] = ()) -> tuple[dict[str, Any], ...]:
    serving = {"profile": "qwen3-4b-baseline", **dict(items)}
    checked = check_serving(serving, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    return tuple(workload_preflight(checked).manifests.all())


def manifests(**serving: Any) -> list[dict[str, Any]]:
    return list(_manifests(tuple(sorted(serving.items()))))


def keys(**serving: Any) -> list[str]:
    return [r.key for r in requirements(manifests(**serving))]


def trn2_node(name: str = "ip-10-0-1-5", **changes: Any) -> dict[str, Any]:
    """A Trn2 node as EKS shows it with the workload's labels, taint and device plugin."""
    node = {
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"node.kubernetes.io/instance-type": "trn2.48xlarge", "trnspec.io/lnc": "2"},
        },
        "spec": {"taints": [dict(NEURON_TAINT)]},
        "status": {"allocatable": {"aws.amazon.com/neuron": "16", "cpu": "191450m"}},
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = node
        for part in parents:
            target = target[part]
        target[last] = value
    return node


def verdicts(*nodes: dict[str, Any]) -> dict[str, bool]:
    found = evaluate(manifests(), parse_nodes({"items": list(nodes)}))
    return {v.requirement.key: v.passed for v in found}


def test_the_pods_ask_is_read_from_the_manifests_not_restated() -> None:
    objects = manifests()
    deployment = next(m for m in objects if m["kind"] == "Deployment")
    ask = pod_ask(objects)
    assert ask.node_selector == deployment["spec"]["template"]["spec"]["nodeSelector"]
    assert ask.neuron_devices == 1
    assert ask.scheduler_names == ("my-scheduler",)
    assert NEURON_TAINT["key"] in {t["key"] for t in ask.tolerations}


def test_every_requirement_of_the_default_workload_has_a_kubectl_command() -> None:
    needs = requirements(manifests())
    assert [r.key for r in needs] == [
        "neuron-device",
        "node-labels",
        "node-taints",
        "scheduler:my-scheduler",
        # the PodMonitor and the dashboard go there; no exported object creates it
        "namespace:monitoring",
        "crd:podmonitors.monitoring.coreos.com",
        "crd:scaledobjects.keda.sh",
        "crd:servicemonitors.monitoring.coreos.com",
        # the weights Job's scratch volume, with the default node-local weights too
        "storageclass:gp3",
        "prometheus",
        "servicemonitor-selection",
        "podmonitor-selection",
        "pods:app=neuron-monitor",
        "pod-identity-agent",
    ]
    assert all(r.command.startswith("kubectl ") for r in needs)
    labels = next(r for r in needs if r.key == "node-labels")
    assert labels.command == (
        "kubectl get nodes -l node.kubernetes.io/instance-type=trn2.48xlarge,trnspec.io/lnc=2"
    )
    prometheus = next(r for r in needs if r.key == "prometheus")
    assert prometheus.argv == (
        (
            "kubectl",
            "get",
            "--raw",
            "/api/v1/namespaces/monitoring/services/kps-prometheus:9090/proxy/-/ready",
        ),
    )


def test_requirements_follow_the_settings_that_add_or_remove_objects() -> None:
    existing = keys(prometheus="existing", prometheus_url="https://prom.example.com:9090")
    assert not [k for k in existing if "monitoring.coreos.com" in k]  # no ServiceMonitor
    assert "prometheus" in existing
    assert "storageclass:io2" in keys(weights_storage="ebs", ebs_storage_class="io2")
    assert "load-balancer-controller" in keys(internal_nlb=True)
    assert "load-balancer-controller" not in keys()
    woken = keys(scale_to_zero=True)
    assert "crd:interceptorroutes.http.keda.sh" in woken
    # the HTTP add-on's Services the wake Service and the push trigger point at, and its
    # namespace (a NetworkPolicy goes there)
    assert {
        "namespace:keda",
        "service:keda/keda-add-ons-http-interceptor-proxy",
        "service:keda/keda-add-ons-http-external-scaler",
    } <= set(woken)


#: A generic ephemeral volume whose claim names no class (the cluster's default class).
EPHEMERAL_NO_CLASS = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def _planted(kind: str, spec: dict[str, Any], namespace: str = "trnspec") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1" if kind == "StatefulSet" else "v1",
        "kind": kind,
        "metadata": {"name": "planted", "namespace": namespace},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        (
            _planted("PersistentVolumeClaim", {"storageClassName": "fast-nvme"}),
            "storageclass:fast-nvme",
        ),
        (
            _planted(
                "StatefulSet",
                {"volumeClaimTemplates": [{"spec": {"storageClassName": "io2"}}], "template": {}},
            ),
            "storageclass:io2",
        ),
        (
            _planted("StatefulSet", {"template": {"spec": {"volumes": [EPHEMERAL_NO_CLASS]}}}),
            "storageclass:(default)",
        ),
        (_planted("ConfigMap", {}, namespace="elsewhere"), "namespace:elsewhere"),
        (
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
            "crd:widgets.example.com",
        ),
    ],
    ids=["pvc", "statefulset-claim", "ephemeral-default-class", "namespace", "crd"],
)
def test_a_planted_object_adds_what_it_needs_to_the_list(obj: dict[str, Any], key: str) -> None:
    """The list is derived from the objects: one more object that names a new StorageClass,
    namespace or custom kind adds it, with no list to update by hand."""
    before = keys()
    assert key not in before
    after = [r.key for r in requirements([*manifests(), obj])]
    assert key in after
    assert set(after) - set(before) == {key}


def test_monitors_without_a_release_label_say_a_stock_prometheus_would_not_scrape_them() -> None:
    """A stock kube-prometheus-stack selects monitors labelled `release: <its release name>`;
    without it KEDA's query reads nothing and the workload never scales. The label comes from
    serving.monitor_labels."""
    (bare,) = [r for r in requirements(manifests()) if r.key == "servicemonitor-selection"]
    assert "no `release` label" in bare.need and "serving.monitor_labels" in bare.need
    labelled = list(
        _manifests.__wrapped__((("monitor_labels", {"release": "kube-prometheus-stack"}),))
    )
    monitors = [m for m in labelled if m["kind"] in ("ServiceMonitor", "PodMonitor")]
    assert monitors and all(
        m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors
    )
    (need,) = [r for r in requirements(labelled) if r.key == "servicemonitor-selection"]
    assert "release=kube-prometheus-stack" in need.need and "no `release`" not in need.need


def test_an_outside_prometheus_is_asked_from_a_pod_in_the_cluster() -> None:
    objects = manifests(prometheus="existing", prometheus_url="https://prom.example.com:9090")
    (need,) = [r for r in requirements(objects) if r.key == "prometheus"]
    assert need.command.endswith("curl -sf https://prom.example.com:9090/-/ready")


def test_a_trn2_node_as_the_workload_expects_passes_every_node_requirement() -> None:
    assert verdicts(trn2_node()) == {
        "neuron-device": True,
        "node-labels": True,
        "node-taints": True,
    }


def test_a_node_without_the_lnc_label_fails_the_labels_and_so_the_rest() -> None:
    node = trn2_node()
    del node["metadata"]["labels"]["trnspec.io/lnc"]
    assert verdicts(node) == {"neuron-device": False, "node-labels": False, "node-taints": False}


def test_a_node_whose_device_plugin_advertises_nothing_fails_the_device_only() -> None:
    zero = trn2_node(status__allocatable={"cpu": "8"})
    assert verdicts(zero) == {"neuron-device": False, "node-labels": True, "node-taints": True}
    (device,) = [
        v
        for v in evaluate(manifests(), parse_nodes({"items": [zero]}))
        if v.requirement.key == "neuron-device"
    ]
    assert "at most 0" in device.detail


def test_one_good_node_among_bad_ones_passes() -> None:
    bad = trn2_node("a", status__allocatable={"aws.amazon.com/neuron": "0"})
    assert verdicts(bad, trn2_node("b"))["neuron-device"]


@pytest.mark.parametrize(
    ("taint", "passes"),
    [
        ({"key": "nvidia.com/gpu", "effect": "NoSchedule"}, False),
        ({"key": "dedicated", "value": "ml", "effect": "NoExecute"}, False),
        ({"key": "dedicated", "value": "ml", "effect": "PreferNoSchedule"}, True),
        ({"key": "aws.amazon.com/neuron", "value": "other", "effect": "NoSchedule"}, True),
    ],
)
def test_an_extra_taint_blocks_only_when_it_repels_and_is_not_tolerated(
    taint: dict[str, str], passes: bool
) -> None:
    node = trn2_node(spec__taints=[dict(NEURON_TAINT), taint])
    assert verdicts(node)["node-taints"] is passes


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        ({"operator": "Exists"}, NEURON_TAINT, True),  # no key: every taint
        ({"key": "aws.amazon.com/neuron", "operator": "Exists"}, NEURON_TAINT, True),
        (
            {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoExecute"},
            NEURON_TAINT,
            False,
        ),
        (
            {"key": "aws.amazon.com/neuron", "operator": "Equal", "value": "true"},
            NEURON_TAINT,
            True,
        ),
        ({"key": "aws.amazon.com/neuron", "value": "false"}, NEURON_TAINT, False),
        ({"key": "other", "operator": "Exists"}, NEURON_TAINT, False),
    ],
)
def test_tolerations_follow_kubernetes_matching(
    toleration: dict[str, str], taint: dict[str, str], tolerated: bool
) -> None:
    assert tolerates([toleration], taint) is tolerated


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"items": "nodes"},
        {"items": [{"metadata": {}}]},
        {"items": [trn2_node(status__allocatable={"aws.amazon.com/neuron": "lots"})]},
        {"items": [trn2_node(status__allocatable={"aws.amazon.com/neuron": "-1"})]},
        {"items": [trn2_node(spec__taints="aws.amazon.com/neuron")]},
    ],
)
def test_a_document_that_is_not_nodes_is_one_boundary_error(document: object) -> None:
    with pytest.raises(BoundaryError) as err:
        parse_nodes(copy.deepcopy(document))
    assert str(err.value).startswith("--nodes")


def test_one_node_object_is_read_as_a_list_of_one() -> None:
    (node,) = parse_nodes(trn2_node())
    assert (node.name, node.neuron_devices) == ("ip-10-0-1-5", 16)


def test_with_no_trn2_node_up_the_node_checks_say_so_instead_of_failing() -> None:
    """A Trn2 group resting at zero is the normal state: only system nodes are up."""
    system = trn2_node(
        "ip-10-0-9-9", metadata__labels={"node.kubernetes.io/instance-type": "m7i.xlarge"}
    )
    found = evaluate(manifests(), parse_nodes({"items": [system]}))
    assert {v.outcome for v in found} == {"no-node"}
    assert not any(v.passed for v in found)
    assert "no trn2.48xlarge node up" in found[0].detail and "--node-group" in found[0].detail


def _node_group(**changes: Any) -> dict[str, Any]:
    """`aws eks describe-nodegroup --output json` of a Trn2 group as the platform makes it."""
    group = {
        "nodegroupName": "trn2",
        "instanceTypes": ["trn2.48xlarge"],
        "scalingConfig": {"minSize": 0, "maxSize": 2, "desiredSize": 0},
        "labels": {"trnspec.io/lnc": "2"},
        "taints": [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NO_SCHEDULE"}],
        **changes,
    }
    return {"nodegroup": group}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, {"neuron-device": True, "node-labels": True, "node-taints": True}),
        ({"labels": {}}, {"neuron-device": False, "node-labels": False, "node-taints": False}),
        (
            {"taints": [{"key": "dedicated", "value": "ml", "effect": "NO_EXECUTE"}]},
            {"neuron-device": True, "node-labels": True, "node-taints": False},
        ),
        (
            {"instanceTypes": ["trn2.3xlarge"], "labels": {"trnspec.io/lnc": "2"}},
            {"neuron-device": None, "node-labels": None, "node-taints": None},
        ),
    ],
    ids=["as-the-platform-makes-it", "no-lnc-label", "untolerated-taint", "other-type"],
)
def test_a_node_group_template_is_evaluated_as_the_nodes_it_would_start(
    changes: dict[str, Any], expected: dict[str, bool | None]
) -> None:
    nodes = parse_node_group(_node_group(**changes))
    found = {
        v.requirement.key: (None if v.outcome == "no-node" else v.passed)
        for v in evaluate(manifests(), nodes)
    }
    assert found == expected


@pytest.mark.parametrize(
    "document",
    [{"items": []}, {"nodegroup": {"instanceTypes": "trn2"}}, _node_group(taints=[{"key": "k"}])],
)
def test_what_is_not_a_node_group_is_one_boundary_error(document: object) -> None:
    with pytest.raises(BoundaryError) as err:
        parse_node_group(document)
    assert err.value.field.startswith("--node-group")


#: (where in a node, a value of the wrong type) -> the field the refusal names.
WRONG_NODE_FIELDS = [
    ("", 5, "--nodes items[0]"),
    ("metadata", [1], "--nodes items[0].metadata"),
    ("metadata__name", 5, "--nodes items[0].metadata.name"),
    ("metadata__name", "", "--nodes items[0].metadata.name"),
    ("metadata__labels", ["a"], "--nodes items[0].metadata.labels"),
    ("metadata__labels", {"trnspec.io/lnc": 2}, "--nodes items[0].metadata.labels.trnspec.io/lnc"),
    ("spec", [1], "--nodes items[0].spec"),
    ("spec", "x", "--nodes items[0].spec"),
    ("status", "x", "--nodes items[0].status"),
    ("status__allocatable", [], "--nodes items[0].status.allocatable"),
    ("spec__taints", {"a": 1}, "--nodes items[0].spec.taints"),
    ("spec__taints", ["NoSchedule"], "--nodes items[0].spec.taints[0]"),
    (
        "spec__taints",
        [{"key": ["k"], "effect": "NoSchedule"}],
        "--nodes items[0].spec.taints[0].key",
    ),
    (
        "spec__taints",
        [{"key": "k", "value": 1, "effect": "NoSchedule"}],
        "--nodes items[0].spec.taints[0].value",
    ),
    (
        "spec__taints",
        [{"key": "k", "effect": ["NoSchedule"]}],
        "--nodes items[0].spec.taints[0].effect",
    ),
    (
        "spec__taints",
        [{"key": "k", "effect": "NO_SCHEDULE"}],
        "--nodes items[0].spec.taints[0].effect",
    ),
]


@pytest.mark.parametrize(("where", "value", "field"), WRONG_NODE_FIELDS)
def test_a_node_field_of_the_wrong_type_is_refused_naming_it(
    where: str, value: object, field: str
) -> None:
    """Every field the checks read is typed as Kubernetes types it (text labels, taints of
    {key, value, effect}, objects where objects go): a wrong one is one BoundaryError naming
    the field and the value, never a traceback or a verdict on a value turned into text."""
    item = trn2_node(**{where: value}) if where else value
    with pytest.raises(BoundaryError) as err:
        parse_nodes({"items": [item]})
    assert err.value.field == field
    assert "\n" not in str(err.value)


#: (a node group field, a value of the wrong type) -> the field the refusal names.
WRONG_GROUP_FIELDS = [
    ("instanceTypes", [["trn2.48xlarge"]], "--node-group nodegroup.instanceTypes[0]"),
    ("instanceTypes", [{"type": "trn2"}], "--node-group nodegroup.instanceTypes[0]"),
    ("nodegroupName", [1], "--node-group nodegroup.nodegroupName"),
    ("labels", {"trnspec.io/lnc": [2]}, "--node-group nodegroup.labels.trnspec.io/lnc"),
    ("labels", "lnc=2", "--node-group nodegroup.labels"),
    ("taints", [{"key": ["k"], "effect": "NO_SCHEDULE"}], "--node-group nodegroup.taints[0].key"),
    (
        "taints",
        [{"key": "k", "effect": ["NO_SCHEDULE"]}],
        "--node-group nodegroup.taints[0].effect",
    ),
    ("taints", ["k"], "--node-group nodegroup.taints[0]"),
]


@pytest.mark.parametrize(("key", "value", "field"), WRONG_GROUP_FIELDS)
def test_a_node_group_field_of_the_wrong_type_is_refused_naming_it(
    key: str, value: object, field: str
) -> None:
    with pytest.raises(BoundaryError) as err:
        parse_node_group(_node_group(**{key: value}))
    assert err.value.field == field


#: Names carrying shell syntax, planted in the objects the requirements are read from (the
#: settings refuse them, tests/infra/settings/test_serving_settings.py; the commands must hold
#: whatever the objects carry).
HOSTILE = "x && touch injected; `touch injected` $(touch injected) > injected"


def _hostile_objects() -> list[dict[str, Any]]:
    return [
        _planted("PersistentVolumeClaim", {"storageClassName": HOSTILE}),
        _planted("ConfigMap", {}, namespace=HOSTILE),
        {"apiVersion": f"{HOSTILE}/v1", "kind": "Widget", "metadata": {"name": "w"}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "wake", "namespace": "trnspec"},
            "spec": {"type": "ExternalName", "externalName": f"{HOSTILE}.keda.svc"},
        },
    ]


def _run_printed(command: str, tmp_path: Path) -> list[list[str]]:
    """Run `command` as a user pasting it would (/bin/sh), with a PATH holding only a kubectl
    that records its arguments: the argument lists kubectl was called with. Anything else the
    line runs is not found (stderr), and a redirection leaves a file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "kubectl.log"
    kubectl = bin_dir / "kubectl"
    kubectl.write_text('#!/bin/sh\nprintf "%s\\0" "$@" >> "$LOG"\nprintf "\\1\\0" >> "$LOG"\n')
    kubectl.chmod(0o755)
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    log.write_bytes(b"")
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=work,
        env={"PATH": str(bin_dir), "LOG": str(log)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr, list(work.iterdir())) == (0, "", []), command
    calls: list[list[str]] = [[]]
    for word in log.read_bytes().decode().split("\0")[:-1]:
        if word == "\1":
            calls.append([])
        else:
            calls[-1].append(word)
    return calls[:-1]


def test_every_printed_command_runs_kubectl_only_with_its_own_arguments(tmp_path: Path) -> None:
    """Each requirement's command, pasted into a shell, calls kubectl with exactly the words
    of `argv`, whatever names the objects carry: a name is one argument, never shell syntax
    (a command that ran `touch` or redirected would leave a file or fail on stderr)."""
    needs = requirements([*manifests(), *_hostile_objects()])
    hostile = [r for r in needs if any(HOSTILE in word for argv in r.argv for word in argv)]
    assert {r.key.split(":")[0] for r in hostile} >= {"storageclass", "namespace", "crd", "service"}
    for need in needs:
        assert _run_printed(need.command, tmp_path) == [list(a[1:]) for a in need.argv]
        assert all(argv[0] == "kubectl" for argv in need.argv)


def test_an_outside_prometheus_url_is_one_argument_of_curl(tmp_path: Path) -> None:
    url = "https://prom.example.com:9090/$(touch injected)"
    objects = [*manifests(prometheus="existing", prometheus_url="https://prom.example.com:9090")]
    scaled = copy.deepcopy(next(m for m in objects if m["kind"] == "ScaledObject"))
    for trigger in scaled["spec"]["triggers"]:
        if trigger["type"] == "prometheus":
            trigger["metadata"]["serverAddress"] = url
    (need,) = [r for r in requirements([scaled]) if r.key == "prometheus"]
    (call,) = _run_printed(need.command, tmp_path)
    assert call[-3:] == ["curl", "-sf", f"{url}/-/ready"]
