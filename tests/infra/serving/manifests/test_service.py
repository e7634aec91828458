"""The Service builders every Service of the workload is made with (infra/serving/manifests/
service.py): the serving ClusterIP, the internal NLB, the wake alias and the busy responder."""

from __future__ import annotations

from workload_cases import build

from infra.contracts import COMPONENT_LABEL
from infra.serving.manifests.pod import SERVE_COMPONENT, selector_labels
from infra.serving.manifests.service import cluster_ip_service, service

BUSY = "busy"


def test_a_cluster_ip_service_selects_only_its_components_pods_and_targets_their_http_port() -> (
    None
):
    _, spec, _, _ = build()
    svc = cluster_ip_service(spec, f"{spec.name}-busy", BUSY, 8080)
    assert (svc["apiVersion"], svc["kind"]) == ("v1", "Service")
    assert svc["metadata"]["name"] == f"{spec.name}-busy"
    assert svc["metadata"]["namespace"] == spec.namespace
    assert svc["spec"]["type"] == "ClusterIP"
    # The immutable selector labels of the component asked for, never the server's.
    assert svc["spec"]["selector"] == selector_labels(spec, BUSY)
    assert svc["spec"]["selector"] != selector_labels(spec, SERVE_COMPONENT)
    assert svc["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]


def test_a_service_is_labelled_as_its_component_and_carries_annotations_only_when_given() -> None:
    _, spec, _, _ = build()
    body = {"type": "ExternalName", "externalName": "elsewhere.svc.cluster.local"}
    plain = service(spec, "alias", BUSY, body)
    assert plain["spec"] == body
    assert plain["metadata"]["labels"][COMPONENT_LABEL] == BUSY
    assert "annotations" not in plain["metadata"]
    noted = service(spec, "alias", BUSY, body, annotations={"a": "b"})
    assert noted["metadata"]["annotations"] == {"a": "b"}
    assert noted["metadata"]["labels"] == plain["metadata"]["labels"]
