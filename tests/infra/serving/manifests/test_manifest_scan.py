"""checkov's Kubernetes checks over every manifest the synthesized templates embed.

Every deployment profile is synthesized (platform and serving stacks), plus the default profile
with the internal NLB and the API key on; each KubernetesManifest's documents are flattened
(Ref/GetAtt/ImportValue/Sub become ${...} placeholders, platform_synth.cfn_text) and written one
file per object. A finding passes only when the object carries a `checkov.io/skip<N>` annotation
for that check with a reason (infra/compliance/scan_skips.py): 0 unexplained findings.

checkov lives in a virtualenv of its own (tests/infra/checkov_tool.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from checkov_tool import checkov_binary, checkov_version
from netpol_model import selector_matches
from platform_synth import PROFILES, Synth, cfn_text, synth_profile

KUBERNETES_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"
NLB_WITH_KEY = {"serving": {"profile": "qwen3-4b-baseline", "internal_nlb": True}}


def embedded_manifests(template: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource in template["Resources"].values():
        if resource["Type"] != KUBERNETES_RESOURCE:
            continue
        manifest = resource["Properties"]["Manifest"]
        yield from json.loads(manifest if isinstance(manifest, str) else cfn_text(manifest))


@pytest.fixture(scope="module")
def synthesized(
    platform_synth: Callable[[str], Synth], tmp_path_factory: pytest.TempPathFactory
) -> list[list[dict[str, Any]]]:
    """The embedded manifests of each synthesized stack (one list per template)."""
    synths = [platform_synth(p) for p in PROFILES]
    synths.append(synth_profile("default", tmp_path_factory.mktemp("cdk-nlb-key"), NLB_WITH_KEY))
    return [
        list(embedded_manifests(template))
        for synth in synths
        for template in (synth.raw, synth.serving_raw)
    ]


@pytest.fixture(scope="module")
def scanned(
    synthesized: list[list[dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[dict[str, Any]], int]:
    """checkov's result records for every embedded manifest, and how many objects it read."""
    out = tmp_path_factory.mktemp("manifests")
    count = 0
    for i, docs in enumerate(synthesized):
        for doc in docs:
            count += 1
            name = f"{i:02d}-{count:03d}-{doc['kind']}-{doc['metadata']['name']}.yaml"
            (out / name).write_text(yaml.safe_dump(doc, sort_keys=False))
    result = subprocess.run(
        [
            checkov_binary(),
            "--directory",
            str(out),
            "--framework",
            "kubernetes",
            "--output",
            "json",
            "--skip-download",  # offline: no Prisma Cloud guideline lookups
            "--compact",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": ""},
    )
    # Exit code 1 means findings; anything else is checkov failing to run.
    assert result.returncode in (0, 1), result.stderr[-2000:]
    reports = json.loads(result.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    return [r for r in reports if r.get("check_type") == "kubernetes"], count


def test_the_scan_was_made_by_the_pinned_checkov(
    scanned: tuple[list[dict[str, Any]], int],
) -> None:
    reports, _ = scanned
    assert [r["summary"]["checkov_version"] for r in reports] == [checkov_version()]


def test_checkov_read_every_embedded_manifest(scanned: tuple[list[dict[str, Any]], int]) -> None:
    reports, count = scanned
    assert count > 60  # four synths, platform and serving stacks
    (report,) = reports
    # checkov counts each object, and each workload's containers once more.
    assert report["summary"]["resource_count"] >= count
    assert report["summary"]["passed"] > 0


def test_no_finding_without_a_reasoned_skip(scanned: tuple[list[dict[str, Any]], int]) -> None:
    (report,) = scanned[0]
    failed = sorted(
        {
            (f["check_id"], f["check_name"], f["resource"])
            for f in report["results"]["failed_checks"]
        }
    )
    assert failed == [], "\n".join(f"{c} {n}: {r}" for c, n, r in failed)


def test_every_skip_carries_its_reason(scanned: tuple[list[dict[str, Any]], int]) -> None:
    (report,) = scanned[0]
    skipped = report["results"]["skipped_checks"]
    assert skipped, "the known exceptions (e.g. the privileged neuron-monitor) are skipped"
    for check in skipped:
        reason = check["check_result"].get("suppress_comment", "")
        assert reason and reason != "No comment provided", check["check_id"]


def test_the_network_policy_and_token_checks_now_pass(
    scanned: tuple[list[dict[str, Any]], int],
) -> None:
    """The gaps the scan found before issue 16 are closed, not skipped."""
    (report,) = scanned[0]
    skipped = {(c["check_id"], c["resource"]) for c in report["results"]["skipped_checks"]}
    passed = {(c["check_id"], c["resource"]) for c in report["results"]["passed_checks"]}
    for check in ("CKV_K8S_38",):  # service-account tokens mounted only where needed
        assert not any(c == check for c, _ in skipped)
        assert any(c == check and "Deployment" in r for c, r in passed)


POD_TEMPLATE_KINDS = ("Deployment", "Job", "DaemonSet", "StatefulSet")


def test_every_pod_but_neuron_monitor_is_under_a_policy_of_its_namespace(
    synthesized: list[list[dict[str, Any]]],
) -> None:
    """checkov's CKV2_K8S_6 (a pod without a NetworkPolicy) passes here, but only because its
    graph joins a `podSelector: {}` policy to pods of every namespace: the serving namespace's
    default deny "covers" neuron-monitor in kube-system. This check follows the API instead:
    a policy selects pods of its own namespace only."""
    uncovered = set()
    for docs in synthesized:
        policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
        for doc in docs:
            if doc["kind"] not in POD_TEMPLATE_KINDS:
                continue
            ns = doc["metadata"]["namespace"]
            labels = doc["spec"]["template"]["metadata"].get("labels", {})
            if not any(
                p["metadata"]["namespace"] == ns
                and selector_matches(p["spec"].get("podSelector", {}), labels)
                for p in policies
            ):
                uncovered.add(f"{ns}/{doc['kind']}/{doc['metadata']['name']}")
    # neuron-monitor is the platform's (kube-system); its scraper's namespace is a serving
    # setting, so a policy for it is left to the platform (docs/workload.md, "Security").
    assert uncovered == {"kube-system/DaemonSet/neuron-monitor"}
