"""Who may talk to the serving and precompile pods: the emitted NetworkPolicies, evaluated.

The policies are taken from the built manifests and the sample pods' labels, namespaces and
ports from the Deployment and Job pod templates, so a label or port change in the workload is
seen here. The evaluator (netpol_model) is itself checked against the API's rules first.
"""

from __future__ import annotations

from typing import Any

import pytest
from netpol_model import Address, Cluster, Pod, selector_matches
from workload_cases import VPC_CIDR, build, by_kind

from infra.contracts import KUBE_PROMETHEUS_STACK_FULLNAME
from infra.settings.serving import ServingSettingsError, load_serving_settings

NS = "trnspec"
MONITORING = "monitoring"
PROMETHEUS_LABELS = {
    # What Prometheus Operator puts on the kube-prometheus-stack Prometheus pods.
    "app.kubernetes.io/name": "prometheus",
    "app.kubernetes.io/managed-by": "prometheus-operator",
    "operator.prometheus.io/name": f"{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus",
    "prometheus": f"{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus",
}
CLIENT_LABELS = {"trnspec.io/client": "true", "app": "bench"}
S3_IP = "52.219.100.1"  # an address in S3's us-east-2 ranges, reached through the gateway
VPC_ENDPOINT_IP = "10.0.40.12"  # an interface endpoint ENI (STS, ECR, Secrets Manager)
IMDS_IP = "169.254.169.254"
POD_IDENTITY_AGENT_IP = "169.254.170.23"


def _world(**settings: Any) -> tuple[Cluster, Pod, Pod, int]:
    _, spec, manifests, _ = build(**settings)
    policies = [m for m in manifests.all() if m["kind"] == "NetworkPolicy"]
    deployment = by_kind(manifests, "Deployment")
    job = by_kind(manifests, "Job")
    tmpl = deployment["spec"]["template"]
    port = tmpl["spec"]["containers"][0]["ports"][0]["containerPort"]
    server = Pod(spec.namespace, dict(tmpl["metadata"]["labels"]), "10.0.32.10", {"http": port})
    compile_pod = Pod(
        spec.namespace, dict(job["spec"]["template"]["metadata"]["labels"]), "10.0.32.11"
    )
    cluster = Cluster(
        namespaces={
            spec.namespace: {},
            MONITORING: {},
            "apps": {},
            "other": {},
            "keda": {},
            "kube-system": {},
        },
        policies=policies,
    )
    return cluster, server, compile_pod, port


# --- the evaluator follows the API's rules -----------------------------------------------------


def test_model_pod_without_policies_is_open_and_an_empty_policy_closes_it() -> None:
    pod = Pod("a", {"x": "1"}, "10.1.0.1")
    other = Pod("b", {}, "10.1.0.2")
    assert Cluster({}, []).allows(other, pod, 80)
    deny = {"metadata": {"namespace": "a"}, "spec": {"podSelector": {}}}
    assert not Cluster({}, [deny]).allows(other, pod, 80)
    # Ingress isolation only: the pod may still send.
    assert Cluster({}, [deny]).allows(pod, other, 80)


def test_model_namespace_and_pod_selector_in_one_peer_mean_both() -> None:
    pod = Pod("a", {}, "10.1.0.1")
    both = {
        "namespaceSelector": {"matchLabels": {"team": "x"}},
        "podSelector": {"matchLabels": {"r": "c"}},
    }
    either = [
        {"namespaceSelector": {"matchLabels": {"team": "x"}}},
        {"podSelector": {"matchLabels": {"r": "c"}}},
    ]

    def cluster(peers: list[dict[str, Any]]) -> Cluster:
        policy = {
            "metadata": {"namespace": "a"},
            "spec": {"podSelector": {}, "ingress": [{"from": peers}]},
        }
        return Cluster({"b": {"team": "x"}, "c": {}}, [policy])

    in_b_unlabelled = Pod("b", {}, "10.1.0.2")
    in_a_labelled = Pod("a", {"r": "c"}, "10.1.0.3")
    assert not cluster([both]).allows(in_b_unlabelled, pod, 80)
    assert cluster(either).allows(in_b_unlabelled, pod, 80)
    assert cluster(either).allows(in_a_labelled, pod, 80)  # podSelector alone: own namespace
    assert not cluster(either).allows(Pod("c", {"r": "c"}, "10.1.0.4"), pod, 80)


def test_model_ip_block_except_and_match_expressions() -> None:
    policy = {
        "metadata": {"namespace": "a"},
        "spec": {
            "podSelector": {
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]
            },
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}],
                    "ports": [{"protocol": "TCP", "port": 443}],
                }
            ],
        },
    }
    web, db = Pod("a", {"tier": "web"}, "10.9.0.1"), Pod("a", {"tier": "db"}, "10.9.0.2")
    c = Cluster({}, [policy])
    assert c.allows(web, Address("8.8.8.8"), 443)
    assert not c.allows(web, Address("8.8.8.8"), 80)
    assert not c.allows(web, Address("10.2.3.4"), 443)
    assert c.allows(db, Address("10.2.3.4"), 5432)  # not selected: not isolated
    assert selector_matches({}, {"any": "thing"})


# --- serving pods: ingress ---------------------------------------------------------------------


def test_client_pod_with_the_client_label_reaches_the_server_port_only() -> None:
    cluster, server, _, port = _world()
    client = Pod(NS, CLIENT_LABELS, "10.0.33.5")
    assert cluster.allows(client, server, port)
    assert not cluster.allows(client, server, port + 1)
    assert not cluster.allows(client, server, port, "UDP")


def test_pod_without_the_client_label_is_denied() -> None:
    cluster, server, _, port = _world()
    debug = Pod(NS, {"app": "debug"}, "10.0.33.6")
    assert not cluster.admits(server, debug, port)  # the server's ingress refuses it
    assert not cluster.allows(debug, server, port)  # and the default deny its egress
    assert cluster.admits(server, Pod(NS, CLIENT_LABELS, "10.0.33.5"), port)


def test_client_label_in_another_namespace_needs_that_namespace_listed() -> None:
    cluster, server, _, port = _world()
    outside = Pod("apps", CLIENT_LABELS, "10.0.34.1")
    assert not cluster.allows(outside, server, port)
    cluster, server, _, port = _world(client_namespaces=["apps"])
    assert cluster.allows(outside, server, port)
    assert not cluster.allows(Pod("other", CLIENT_LABELS, "10.0.34.2"), server, port)
    assert not cluster.allows(Pod("apps", {"app": "web"}, "10.0.34.3"), server, port)


def test_prometheus_scraper_is_allowed_and_lookalikes_are_not() -> None:
    cluster, server, _, port = _world()
    assert cluster.allows(Pod(MONITORING, PROMETHEUS_LABELS, "10.0.35.1"), server, port)
    assert not cluster.allows(Pod("other", PROMETHEUS_LABELS, "10.0.35.2"), server, port)
    grafana = {"app.kubernetes.io/name": "grafana"}
    assert not cluster.allows(Pod(MONITORING, grafana, "10.0.35.3"), server, port)


def test_existing_prometheus_is_matched_by_the_configured_labels() -> None:
    cluster, server, _, port = _world(
        prometheus="existing",
        prometheus_url="http://prometheus.monitoring.svc:9090",
        scraper_pod_labels={"app": "prometheus-server"},
    )
    scraper = Pod(MONITORING, {"app": "prometheus-server"}, "10.0.35.4")
    assert cluster.allows(scraper, server, port)
    assert not cluster.allows(Pod(MONITORING, PROMETHEUS_LABELS, "10.0.35.5"), server, port)


def test_a_scraper_outside_the_cluster_is_allowed_by_its_cidr_only() -> None:
    collector = Address("10.0.7.7")  # a managed collector's ENI in the VPC
    cluster, server, _, port = _world()
    assert not cluster.allows(collector, server, port)
    cluster, server, _, port = _world(scraper_cidrs=["10.0.7.0/28"])
    assert cluster.allows(collector, server, port)
    assert not cluster.allows(Address("10.0.8.1"), server, port)


def test_keda_needs_no_access_to_the_pods() -> None:
    # KEDA's Prometheus scaler asks Prometheus, not vLLM: nothing in keda may reach the server.
    cluster, server, _, port = _world()
    keda = Pod("keda", {"app.kubernetes.io/name": "keda-operator"}, "10.0.36.1")
    assert not cluster.allows(keda, server, port)


def test_internal_nlb_reaches_the_pods_from_the_vpc_only_when_enabled() -> None:
    nlb = Address("10.0.1.77")  # an NLB ENI in a private subnet of the VPC
    cluster, server, _, port = _world()
    assert not cluster.allows(nlb, server, port)
    cluster, server, _, port = _world(internal_nlb=True)
    assert cluster.allows(nlb, server, port)
    assert not cluster.allows(Address("192.168.5.5"), server, port)
    assert not cluster.allows(nlb, server, 22)


def test_nlb_source_ranges_go_to_the_load_balancer_not_the_pods() -> None:
    _, _, manifests, _ = build(internal_nlb=True, nlb_source_cidrs=["10.20.0.0/16"])
    service = by_kind(manifests, "Service", "-nlb")
    assert service["spec"]["loadBalancerSourceRanges"] == ["10.20.0.0/16"]
    _, _, manifests, _ = build(internal_nlb=True)
    assert by_kind(manifests, "Service", "-nlb")["spec"]["loadBalancerSourceRanges"] == [VPC_CIDR]


# --- serving and precompile pods: egress -------------------------------------------------------


@pytest.mark.parametrize("which", ["server", "compile"])
def test_pods_reach_dns_endpoints_s3_and_the_pod_identity_agent(which: str) -> None:
    cluster, server, compile_pod, _ = _world()
    pod = server if which == "server" else compile_pod
    coredns = Pod("kube-system", {"k8s-app": "kube-dns"}, "10.0.2.2")
    assert cluster.allows(pod, coredns, 53, "UDP")
    assert cluster.allows(pod, coredns, 53, "TCP")
    assert cluster.allows(pod, Address(VPC_ENDPOINT_IP), 443)
    assert cluster.allows(pod, Address(S3_IP), 443)
    assert cluster.allows(pod, Address(POD_IDENTITY_AGENT_IP), 80)


@pytest.mark.parametrize("which", ["server", "compile"])
def test_pods_reach_nothing_else(which: str) -> None:
    cluster, server, compile_pod, _ = _world()
    pod = server if which == "server" else compile_pod
    assert not cluster.allows(pod, Address(IMDS_IP), 80)  # the node role stays out of reach
    assert not cluster.allows(pod, Address(S3_IP), 80)
    assert not cluster.allows(pod, Address("192.168.1.10"), 443)  # a peered private network
    assert not cluster.allows(pod, Address("172.20.0.10"), 443)
    assert not cluster.allows(pod, Pod("kube-system", {"k8s-app": "other"}, "10.0.2.3"), 53, "UDP")
    assert not cluster.allows(pod, Pod("apps", {}, "10.0.34.9"), 8000)
    assert not cluster.allows(pod, Address("8.8.8.8"), 53, "UDP")  # no DNS around CoreDNS


def test_s3_egress_can_be_narrowed_to_the_prefix_list_ranges() -> None:
    cluster, server, _, _ = _world(s3_egress_cidrs=["52.219.96.0/20"])
    assert cluster.allows(server, Address(S3_IP), 443)
    assert not cluster.allows(server, Address("151.101.1.1"), 443)


def test_nothing_can_connect_to_the_precompile_pod() -> None:
    cluster, _, compile_pod, port = _world(internal_nlb=True)
    for source in (
        Pod(NS, CLIENT_LABELS, "10.0.33.5"),
        Pod(MONITORING, PROMETHEUS_LABELS, "10.0.35.1"),
        Address("10.0.1.77"),
    ):
        assert not cluster.allows(source, compile_pod, port)


def test_any_other_pod_in_the_namespace_is_denied_both_ways() -> None:
    cluster, server, _, port = _world()
    stray = Pod(NS, {"app": "debug"}, "10.0.33.9")
    assert not cluster.allows(stray, Address(S3_IP), 443)
    assert not cluster.allows(Pod(NS, CLIENT_LABELS, "10.0.33.5"), stray, 8080)
    assert not cluster.allows(stray, server, port)


def test_a_client_in_the_namespace_may_send_only_to_the_server_and_dns() -> None:
    cluster, server, compile_pod, port = _world()
    client = Pod(NS, CLIENT_LABELS, "10.0.33.5")
    assert cluster.allows(
        client, Pod("kube-system", {"k8s-app": "kube-dns"}, "10.0.2.2"), 53, "UDP"
    )
    assert cluster.allows(client, server, port)
    assert not cluster.allows(client, compile_pod, port)
    assert not cluster.allows(client, Address(S3_IP), 443)


# --- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"client_pod_labels": {}}, "serving.client_pod_labels={}"),
        ({"client_pod_labels": {"bad key!": "x"}}, "serving.client_pod_labels.bad key!="),
        ({"client_namespaces": ["Apps"]}, "serving.client_namespaces.0=Apps"),
        ({"s3_egress_cidrs": ["10.0.0.1/8"]}, "serving.s3_egress_cidrs.0=10.0.0.1/8"),
        ({"nlb_source_cidrs": ["10.0.0.0/16"]}, "only used with internal_nlb: true"),
    ],
)
def test_network_settings_name_the_field_and_the_fix(raw: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ServingSettingsError) as err:
        load_serving_settings(raw)
    assert any(fragment in str(p) for p in err.value.problems), err.value.problems


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"internal_nlb": True, "nlb_source_cidrs": ["10.20.0.0/16"]},
        {"client_namespaces": ["apps", "bench"], "s3_egress_cidrs": ["52.219.96.0/20"]},
        {
            "prometheus": "existing",
            "prometheus_url": "http://prometheus.observability.svc:9090",
            "monitoring_namespace": "observability",
        },
    ],
)
def test_policies_validate_against_the_kubernetes_schema(settings: dict[str, Any]) -> None:
    import kubernetes_validate

    _, _, manifests, _ = build(**settings)
    policies = [m for m in manifests.all() if m["kind"] == "NetworkPolicy"]
    assert len(policies) == 5  # default deny, server, precompile, weights, clients
    for policy in policies:
        kubernetes_validate.validate(policy, "1.36.0", strict=True)


def test_policies_need_the_vpc_cidr_and_say_so() -> None:
    import dataclasses

    from infra.serving.manifests.network_policy import network_policies
    from infra.serving.manifests.spec import ClusterWorkloadError
    from infra.settings.serving import ServingSettings

    _, spec, _, _ = build()
    with pytest.raises(ClusterWorkloadError, match="vpc_cidr: the network policies need the VPC"):
        network_policies(dataclasses.replace(spec, vpc_cidr=None), ServingSettings())
