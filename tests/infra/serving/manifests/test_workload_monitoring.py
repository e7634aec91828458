"""Scrape targets and the committed Grafana dashboard."""

from __future__ import annotations

import json

import pytest
from workload_cases import build, by_kind

from infra.contracts import (
    GRAFANA_DASHBOARD_LABEL,
    METRICS_PATH,
    NEURON_MONITOR_POD_LABELS,
    NEURON_MONITOR_PORT,
)
from infra.serving.dashboard_files import DASHBOARD_PATH, committed_dashboards, dashboard_path
from infra.serving.manifests.dashboard import QUERIES, build_dashboard, render_dashboard
from infra.serving.manifests.monitoring import DASHBOARD_KEY


def test_service_monitor_scrapes_vllm_metrics_on_the_service_port() -> None:
    _, spec, m, _ = build()
    sm = by_kind(m, "ServiceMonitor")
    svc = by_kind(m, "Service", spec.name)
    assert sm["spec"]["selector"]["matchLabels"] == svc["spec"]["selector"]
    assert sm["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"]
    assert sm["spec"]["endpoints"][0]["path"] == METRICS_PATH


def test_pod_monitor_scrapes_neuron_monitor_in_any_namespace() -> None:
    pm = by_kind(build()[2], "PodMonitor")
    assert pm["spec"]["selector"]["matchLabels"] == NEURON_MONITOR_POD_LABELS
    assert pm["spec"]["namespaceSelector"] == {"any": True}
    assert pm["spec"]["podMetricsEndpoints"][0]["portNumber"] == NEURON_MONITOR_PORT


def test_platform_neuron_monitor_matches_the_pod_monitor() -> None:
    from infra.platform.addons.neuron.monitor import monitor_manifest

    ds = monitor_manifest(("trn2.48xlarge",))
    tpl = ds["spec"]["template"]
    assert NEURON_MONITOR_POD_LABELS.items() <= tpl["metadata"]["labels"].items()
    ports = [p["containerPort"] for c in tpl["spec"]["containers"] for p in c.get("ports", [])]
    assert NEURON_MONITOR_PORT in ports


def test_existing_prometheus_gets_annotations_not_operator_objects() -> None:
    m = build(prometheus="existing", prometheus_url="http://p.svc:9090")[2]
    assert m.monitoring == []
    ann = by_kind(m, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true"
    assert ann["prometheus.io/path"] == METRICS_PATH


@pytest.mark.parametrize("profile", ["qwen3-32b-draft", "qwen3-4b-dflash"])
def test_dashboard_config_map_ships_the_committed_dashboard_of_its_image(profile: str) -> None:
    cfg, _, m, _ = build(profile)
    cm = by_kind(m, "ConfigMap", "dashboard")
    key, value = GRAFANA_DASHBOARD_LABEL
    assert cm["metadata"]["labels"][key] == value
    committed = dashboard_path(cfg.image).read_text()
    assert json.loads(cm["data"][DASHBOARD_KEY]) == json.loads(committed)


def test_committed_dashboards_are_the_generated_ones() -> None:
    assert DASHBOARD_PATH.read_text() == render_dashboard()
    for path, text in committed_dashboards().items():
        assert path.read_text() == text, (
            f"{path.name} is stale: run python -m infra.serving.manifests.dashboard"
        )


@pytest.mark.parametrize(
    ("title", "needles"),
    [
        (
            "Draft acceptance rate",
            [
                "rate(vllm:spec_decode_num_accepted_tokens_total",
                ") / sum(rate(vllm:spec_decode_num_draft_tokens_total",
            ],
        ),
        ("Mean accepted length (tokens per step)", ["1 + ", "vllm:spec_decode_num_drafts_total"]),
        ("Acceptance by draft position", ["by (position)", "num_accepted_tokens_per_pos_total"]),
        ("Time to first token", ["histogram_quantile", "vllm:time_to_first_token_seconds_bucket"]),
        ("Inter-token latency", ["vllm:inter_token_latency_seconds_bucket"]),
        ("Tokens per second", ["vllm:generation_tokens_total"]),
        ("Queue depth", ["vllm:num_requests_waiting", "vllm:num_requests_running"]),
        ("NeuronCore utilization", ["neuroncore_utilization_ratio"]),
        ("HBM used", ['neuron_runtime_memory_used_bytes{memory_location="neuron_device"}']),
    ],
)
def test_dashboard_panels_query_the_right_metrics(title: str, needles: list[str]) -> None:
    panels = {p["title"]: p for p in build_dashboard()["panels"]}
    exprs = " ".join(t["expr"] for t in panels[title]["targets"])
    for needle in needles:
        assert needle in exprs
    assert [t["expr"] for t in panels[title]["targets"]] == [q for q, _ in QUERIES[title]]


def test_dashboard_panels_do_not_overlap() -> None:
    cells = set()
    for p in build_dashboard()["panels"]:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))
