"""What the workload's Jobs share (infra/serving/manifests/job.py): a bounded Job kept for its
logs, and the pod spec of the Jobs that need no Neuron device."""

from __future__ import annotations

import pytest
from workload_cases import build

from infra.contracts import INSTANCE_TYPE_LABEL, NEURON_TAINT_KEY
from infra.serving.manifests.job import JOB_TTL_SECONDS, job, node_pod_spec
from infra.serving.manifests.pod import labels

TEMPLATE = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}
SKIPS = {"CKV_K8S_1": "a reason"}


def _job(**extra: object) -> dict:
    _, spec, _, _ = build()
    return job(
        spec,
        name="m-thing-0123",
        component="thing",
        skips=SKIPS,
        backoff_limit=2,
        deadline_seconds=600,
        template=TEMPLATE,
        **extra,
    )


def test_a_job_is_bounded_kept_for_its_logs_and_carries_its_skips() -> None:
    manifest = _job()
    assert (manifest["apiVersion"], manifest["kind"]) == ("batch/v1", "Job")
    meta = manifest["metadata"]
    assert meta["name"] == "m-thing-0123"
    assert meta["labels"] == labels(build()[1], "thing")
    assert meta["annotations"] == {"checkov.io/skip1": "CKV_K8S_1=a reason"}
    assert manifest["spec"] == {
        "backoffLimit": 2,
        "activeDeadlineSeconds": 600,
        "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
        "template": TEMPLATE,
    }
    assert JOB_TTL_SECONDS == 7 * 24 * 3600


@pytest.mark.parametrize("suspend", [True, False])
def test_a_job_given_suspend_states_it_either_way(suspend: bool) -> None:
    assert _job(suspend=suspend)["spec"]["suspend"] is suspend


def test_a_node_pod_runs_once_on_the_workloads_trn2_nodes_without_api_token() -> None:
    _, spec, _, _ = build()
    container = {"name": "c", "image": "i"}
    volume = {"name": "tmp", "emptyDir": {}}
    pod = node_pod_spec(spec, service_account="m-sa", containers=[container], volumes=[volume])
    assert pod["serviceAccountName"] == "m-sa"
    assert pod["restartPolicy"] == "Never"
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    assert pod["nodeSelector"][INSTANCE_TYPE_LABEL] == spec.instance_type
    assert [t["key"] for t in pod["tolerations"]] == [NEURON_TAINT_KEY]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert (pod["containers"], pod["volumes"]) == ([container], [volume])
