"""A calibration plan synthesizes: the speculative arm and the Job land on the node the minimum
already pays for (scheduling simulation of the templates), the Job's identity writes only
calibration/, and checkov finds nothing unexplained in the objects it adds."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscaler_sim import (
    installed_schedulers,
    karpenter_nodes,
    managed_nodegroup_nodes,
    manifests,
    pack,
    pod_templates,
    unschedulable_reasons,
)
from checkov_tool import checkov_binary
from platform_synth import Synth, synth_profile

PLAN = {
    "kind": "trnspec-deployment-plan",
    "serving": {
        "profile": "qwen3-4b-baseline",
        "overrides": ["max_num_seqs=4"],
        "min_replicas": 1,
        "max_replicas": 16,
        "streams_per_replica": 4,
        "calibration": {
            "speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=4"]},
            "concurrency": [1, 2, 4],
            "rounds": 4,
            "prompts_key": "prompts/mine.jsonl",
        },
    },
    "plan": {"chosen": {"nodes_at_peak": 1}},
}


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    path = tmp_path_factory.mktemp("plan") / "calibration.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    return synth_profile("default", tmp_path_factory.mktemp("cdk-calibration"),
                         {"serving.plan": str(path)})  # fmt: skip


def _owners(synth: Synth) -> dict[str, Any]:
    return {p.owner: p for p in pod_templates(manifests(synth.serving_raw))}


def test_the_arm_and_the_job_fit_on_the_node_the_minimum_pays_for(synth: Synth) -> None:
    pods = _owners(synth)
    server = [p for o, p in pods.items() if o.startswith("Deployment/")]
    jobs = [p for o, p in pods.items() if o.startswith("Job/")]
    assert len(server) == 2  # plain (main) and speculative arm
    assert any("-calibration-" in p.owner for p in jobs)
    platform = list(pod_templates(manifests(synth.raw)))
    daemonsets = [p for p in platform + list(pods.values()) if p.owner.startswith("DaemonSet/")]
    schedulers = installed_schedulers(synth.raw)
    nodes = managed_nodegroup_nodes(synth.raw) + karpenter_nodes(synth.raw)
    assert nodes
    for node in nodes:
        for pod in server + jobs:
            assert unschedulable_reasons(pod, node, daemonsets, schedulers) == [], (
                pod.owner,
                node.name,
            )
        # Every pod of the calibration at once (one replica of each arm, both weights Jobs,
        # the precompile Job and the calibration Job): one node.
        placed = pack(server + jobs, node, daemonsets, schedulers)
        assert len(placed) == 1, (node.name, placed)


def test_the_jobs_identity_writes_only_calibration_results(synth: Synth) -> None:
    policies = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for key, r in synth.serving_raw["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and key.startswith("CalibrationIdentity")
    ]
    (statements,) = policies
    by_sid = {s["Sid"]: s for s in statements}
    text = json.dumps(by_sid["WriteCalibrationResults"]["Resource"])
    assert "/calibration/*" in text and "models/" not in text
    assert "prompts/mine.jsonl" in json.dumps(by_sid["ReadCalibrationAndPrompts"]["Resource"])
    assert by_sid["ListCalibrationPrefix"]["Condition"]["StringLike"]["s3:prefix"] == [
        "calibration/*"
    ]
    accounts = [
        doc["metadata"]["name"]
        for doc in manifests(synth.serving_raw)
        if doc["kind"] == "ServiceAccount"
    ]
    job = next(p for o, p in _owners(synth).items() if "-calibration-" in o)
    assert job.spec["serviceAccountName"] in accounts


@pytest.mark.slow
def test_checkov_finds_nothing_unexplained_in_the_calibration_objects(
    synth: Synth, tmp_path: Path
) -> None:
    added = [
        d
        for d in manifests(synth.serving_raw)
        if "calibration" in d["metadata"]["name"]
        or d["metadata"]["name"].endswith("-spec")
        or "-spec-" in d["metadata"]["name"]
    ]
    assert {d["kind"] for d in added} >= {"Deployment", "Job", "Service", "NetworkPolicy"}
    for i, doc in enumerate(added):
        (tmp_path / f"{i:02d}-{doc['kind']}.yaml").write_text(yaml.safe_dump(doc))
    result = subprocess.run(
        [checkov_binary(), "--directory", str(tmp_path), "--framework", "kubernetes",
         "--output", "json", "--skip-download", "--compact"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": ""},
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr[-2000:]
    reports = json.loads(result.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    (report,) = [r for r in reports if r.get("check_type") == "kubernetes"]
    failed = sorted({(f["check_id"], f["resource"]) for f in report["results"]["failed_checks"]})
    assert failed == []
    assert report["summary"]["passed"] > 0
