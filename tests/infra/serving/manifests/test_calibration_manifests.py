"""`serving.calibration`: the speculative arm beside the plain Deployment and the Job that measures
both, built by the main workload's own builders; every object valid for the cluster."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest
from trnspec.config import pod_contract
from trnspec.config.calibration_arm import (
    ARM_POLLING_SECONDS,
    POD_START_SECONDS,
    job_deadline_seconds,
)
from workload_cases import BUCKET, build

from infra.serving.manifests.calibration import (
    WRITE_MARGIN_MINUTES,
    calibration_manifests,
    job_clock,
)
from infra.serving.manifests.pod import SERVE_COMPONENT, WEIGHTS_COMPONENT, service_account_name
from infra.serving.manifests.spec import ClusterWorkloadError
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS
from infra.settings.serving import ServingSettings

PLAIN = "qwen3-4b-baseline"
CALIBRATION = {
    "speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=4"]},
    "concurrency": [1, 2, 4],
    "rounds": 4,
    "deadline_minutes": 90,
}


def _built(**calibration: Any) -> tuple[Any, list[dict[str, Any]]]:
    _, spec, manifests, _ = build(PLAIN, calibration={**CALIBRATION, **calibration})
    return spec, manifests.all()


def _named(objects: list[dict[str, Any]], kind: str, part: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and part in o["metadata"]["name"]]
    return found


def test_without_calibration_nothing_is_added() -> None:
    _, _, plain, settings = build(PLAIN)
    assert settings.calibration is None
    assert not [o for o in plain.all() if "calibration" in o["metadata"]["name"]]
    assert not [o for o in plain.all() if o["metadata"]["name"].endswith("-spec")]


def test_the_speculative_arm_runs_beside_the_plain_deployment_behind_its_own_service() -> None:
    spec, objects = _built()
    (main,) = [
        o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == spec.name
    ]
    arm = _named(objects, "Deployment", "-spec")
    arm_name = arm["metadata"]["name"]
    arm_pod = arm["spec"]["template"]["spec"]
    # no `replicas`: its ScaledObject owns the count, and a re-apply must not reset it
    assert "replicas" not in arm["spec"] and "replicas" not in main["spec"]
    # Same hardware and identity as the plain arm: one chip each, the serve account.
    main_res = main["spec"]["template"]["spec"]["containers"][0]["resources"]
    arm_res = arm_pod["containers"][0]["resources"]
    assert arm_res["requests"]["aws.amazon.com/neuron"] == "1"
    assert main_res["requests"]["aws.amazon.com/neuron"] == "1"
    assert arm_pod["serviceAccountName"] == service_account_name(spec, SERVE_COMPONENT)
    # Its own ConfigMap holds the speculative engine config.
    volume = next(v for v in arm_pod["volumes"] if v["name"] == "config")
    config = _named(objects, "ConfigMap", volume["configMap"]["name"])
    assert "dflash" in next(iter(config["data"].values()))
    service = _named(objects, "Service", "-spec")
    assert service["spec"]["selector"] == arm["spec"]["selector"]["matchLabels"]
    (policy,) = [
        o for o in objects if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == arm_name
    ]
    assert policy["spec"]["podSelector"]["matchLabels"] == arm["spec"]["selector"]["matchLabels"]
    # The drafter comes from the Hub and only the arm needs it: a weights Job for it alone.
    weights = _named(objects, "Job", "-spec-weights-")
    assert weights["spec"]["template"]["spec"]["serviceAccountName"] == service_account_name(
        spec, WEIGHTS_COMPONENT
    )
    repos = [c["args"][2] for c in weights["spec"]["template"]["spec"]["containers"]]
    assert repos and all("DFlash" in r for r in repos)


def test_an_arm_that_batches_less_than_the_main_keda_target_still_deploys() -> None:
    """plan-deploy wrote this: plain at max_num_seqs=32 with a KEDA target of 32 streams, the
    arm at max_num_seqs=1 (the only batch meeting the TPOT target); the arm has no autoscaler,
    so the main's target is not its bound."""
    _, _, manifests, settings = build(
        PLAIN,
        overrides=["max_num_seqs=32"],
        streams_per_replica=32,
        calibration={
            "speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=1"]},
            "concurrency": [1],
        },
    )
    assert settings.streams_per_replica == 32
    (arm_scaled,) = [
        o
        for o in manifests.all()
        if o["kind"] == "ScaledObject" and o["spec"]["scaleTargetRef"]["name"].endswith("-spec")
    ]
    # its count follows the Job's pods only: no in-flight target of the main's
    assert [t["type"] for t in arm_scaled["spec"]["triggers"]] == ["kubernetes-workload"]


def test_the_job_measures_both_arms_bounded_and_never_retried() -> None:
    spec, objects = _built(prompts_key="calibration/prompts.jsonl")
    job = _named(objects, "Job", "-calibration-")
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]

    def flag(name: str) -> str:
        return args[args.index(name) + 1]

    # The serving image's command (tests/trnspec/test_dockerfile.py runs it from the image's
    # packages), not the image's serve entrypoint.
    assert container["command"] == ["python", "-m", "trnspec_tools"]
    assert container["command"] == list(pod_contract.TOOLS_ENTRYPOINT)
    assert args[:2] == ["calibrate", "run"] == list(pod_contract.CALIBRATE_COMMAND)
    assert flag("--plain") == f"http://{spec.name}.trnspec.svc.cluster.local:80"
    assert flag("--speculative") == f"http://{spec.name}-spec.trnspec.svc.cluster.local:80"
    assert (flag("--concurrency"), flag("--rounds")) == ("1,2,4", "4")
    assert flag("--prompts") == f"s3://{BUCKET}/calibration/prompts.jsonl"
    assert flag("--bucket") == BUCKET and flag("--k") == "15"
    assert (flag("--plain-profile"), flag("--speculative-profile")) == (PLAIN, "qwen3-4b-dflash")
    # One chip of sixteen of a $35.76/h trn2.48xlarge, each arm.
    assert flag("--price-per-hour-plain") == flag("--price-per-hour-speculative") == "2.235"
    assert job["spec"]["backoffLimit"] == 0
    # Waits the arms' start, then measures 90 minutes less the margin to write the results;
    # the Job's deadline is the runner's and its pod's start (test_the_job_waits_... below).
    wait = int(flag("--wait-ready-minutes"))
    assert int(flag("--deadline-minutes")) == wait + 90 - WRITE_MARGIN_MINUTES
    assert job["spec"]["activeDeadlineSeconds"] == POD_START_SECONDS + (wait + 90) * 60
    assert pod["serviceAccountName"] == f"{spec.name}-calibration"
    assert pod["restartPolicy"] == "Never" and pod["automountServiceAccountToken"] is False
    # It carries the client labels, and one policy lets it reach both arms' server port.
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["trnspec.io/client"] == "true"
    admit = _named(objects, "NetworkPolicy", "-calibration-arms")
    names = admit["spec"]["podSelector"]["matchExpressions"][0]["values"]
    assert names == [spec.name, f"{spec.name}-spec"]
    (rule,) = admit["spec"]["ingress"]
    assert rule["from"][0]["podSelector"]["matchLabels"].items() <= labels.items()
    (egress,) = [
        o
        for o in objects
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == f"{spec.name}-calibration"
    ]
    assert egress["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert any(
        r["to"][0].get("podSelector") == admit["spec"]["podSelector"]
        for r in egress["spec"]["egress"]
    )


def test_the_shipped_default_prompts_are_used_without_a_prompts_key() -> None:
    _, objects = _built()
    args = _named(objects, "Job", "-calibration-")["spec"]["template"]["spec"]["containers"][0]
    assert args["args"][args["args"].index("--prompts") + 1] == "default"


def test_a_changed_calibration_is_a_new_job() -> None:
    _, first = _built()
    _, second = _built(rounds=6)
    names = [_named(o, "Job", "-calibration-")["metadata"]["name"] for o in (first, second)]
    assert names[0] != names[1]


def _job_flags(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, str]]:
    job = _named(objects, "Job", "-calibration-")
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = {a: args[i + 1] for i, a in enumerate(args) if a.startswith("--") and i + 1 < len(args)}
    return job, flags


def _probe_budget(deployment: dict[str, Any]) -> int:
    """initialDelaySeconds + failureThreshold x periodSeconds, Kubernetes' defaults 0, 3, 10."""
    (probe,) = [
        c["startupProbe"]
        for c in deployment["spec"]["template"]["spec"]["containers"]
        if "startupProbe" in c
    ]
    return probe.get("initialDelaySeconds", 0) + probe.get("failureThreshold", 3) * probe.get(
        "periodSeconds", 10
    )


@pytest.mark.parametrize("startup_minutes", [90, 30, 600])
def test_the_job_waits_as_long_as_the_arms_may_take_to_start_then_measures(
    startup_minutes: int,
) -> None:
    """A first deploy copies the weights and compiles both arms: the runner waits for them as
    long as their startup probes let them start (read from both rendered Deployments), and the
    Job's deadline holds that wait and the whole measurement after it."""
    _, _, manifests, _ = build(PLAIN, max_startup_minutes=startup_minutes, calibration=CALIBRATION)
    objects = manifests.all()
    job, flags = _job_flags(objects)
    arms = [o for o in objects if o["kind"] == "Deployment"]
    assert len(arms) == 2
    budget = max(_probe_budget(d) for d in arms)
    assert budget >= startup_minutes * 60 + pod_contract.STAGING_WAIT_SECONDS
    wait_s = int(flags["--wait-ready-minutes"]) * 60
    # KEDA's poll starts the arm (it counts the Job's pod), the arm's pod starts, then its probe.
    assert wait_s >= ARM_POLLING_SECONDS + POD_START_SECONDS + budget
    measure_s = CALIBRATION["deadline_minutes"] * 60
    # The runner's deadline counts from its start, the wait included.
    runner_s = int(flags["--deadline-minutes"]) * 60
    assert runner_s >= wait_s + measure_s - WRITE_MARGIN_MINUTES * 60
    deadline = job["spec"]["activeDeadlineSeconds"]
    assert deadline >= POD_START_SECONDS + wait_s + measure_s
    assert deadline > runner_s  # the results are written before the Job is stopped
    # plan-deploy bounds the calibration's bill with the same figure (trnspec.plan.idle_cost).
    assert deadline == job_deadline_seconds(startup_minutes, CALIBRATION["deadline_minutes"])


def test_a_slower_arm_lengthens_the_wait() -> None:
    """The wait follows the slower arm's probe, not the settings: an arm Deployment whose probe
    allows longer is waited for longer."""
    _, spec, _, _ = build(PLAIN)
    settings = ServingSettings(profile=PLAIN, calibration=CALIBRATION)
    objects = calibration_manifests(spec, settings)
    (arm,) = [o for o in objects if o["kind"] == "Deployment"]
    slower = copy.deepcopy(arm)
    probe = slower["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    probe["initialDelaySeconds"] = 3600
    cal = settings.calibration
    assert cal is not None
    longer = job_clock([arm], cal).wait_minutes + 60
    assert job_clock([arm, slower], cal).wait_minutes == longer
    assert job_clock([slower, arm], cal).wait_minutes == longer


def test_an_unchanged_calibration_is_measured_again_with_a_new_rerun_token() -> None:
    """`cdk deploy` of an unchanged template changes nothing on the cluster, so re-running a
    finished or failed calibration takes a new name: `serving.calibration.rerun`. Nothing else
    changes with it (the arms keep running, the weights are not copied again)."""
    _, first = _built()
    _, again = _built(rerun="2")
    _, same = _built(rerun="2")
    name = [_named(o, "Job", "-calibration-")["metadata"]["name"] for o in (first, again, same)]
    assert name[0] != name[1] == name[2]
    others = [
        [o for o in objects if "-calibration-" not in o["metadata"]["name"]]
        for objects in (first, again)
    ]
    assert others[0] == others[1]


def test_a_weights_rerun_token_makes_new_weights_jobs_and_nothing_else() -> None:
    """After a failed copy (a gated model before its token was put), `serving.weights_rerun`
    names new weights Jobs (the main one and the arm's), which `cdk deploy` then creates."""
    _, _, first, _ = build(PLAIN, calibration=CALIBRATION)
    _, _, again, _ = build(PLAIN, calibration=CALIBRATION, weights_rerun="after-token")

    def weights(objects: list[dict[str, Any]]) -> list[str]:
        names = [o["metadata"]["name"] for o in objects]
        return sorted(n for n in names if "-weights-" in n)

    before, after = weights(first.all()), weights(again.all())
    assert len(before) == len(after) == 2 and not set(before) & set(after)
    rest = [
        [o for o in m.all() if "-weights-" not in o["metadata"]["name"]] for m in (first, again)
    ]
    assert rest[0] == rest[1]


@pytest.mark.parametrize(
    ("calibration", "field", "fix"),
    [
        (
            {"speculative": {"profile": "qwen3-4b-dflash-3xl"}},
            "serving.calibration.speculative.profile",
            "its instance_type is trn2.3xlarge and the plain arm's trn2.48xlarge",
        ),
        (
            {"speculative": {"profile": "qwen3-32b-draft"}},
            "serving.calibration.speculative.profile",
            "its served_model_name is Qwen/Qwen3-32B",
        ),
        ({"concurrency": [1, 8]}, "serving.calibration.concurrency", "max_num_seqs=4"),
        ({"num_prompts": 2}, "serving.calibration.num_prompts", "at least 4"),
        (
            {"speculative": {"profile": "no-such-profile"}},
            "serving.calibration.speculative.profile",
            "",
        ),
    ],
    ids=["other-hardware", "other-target", "level-above-max-num-seqs", "too-few", "unknown"],
)
def test_arms_that_cannot_be_compared_are_refused_naming_the_field(
    calibration: dict[str, Any], field: str, fix: str
) -> None:
    _, spec, _, _ = build(PLAIN)
    settings = ServingSettings(profile=PLAIN, calibration={**CALIBRATION, **calibration})
    with pytest.raises(ClusterWorkloadError) as err:
        calibration_manifests(spec, settings)
    assert any(p.field == field and fix in p.fix for p in err.value.problems), err.value.problems


@pytest.mark.parametrize("k8s", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_calibration_object_validates_strictly(k8s: str) -> None:
    _, spec, _, _ = build(PLAIN)
    settings = ServingSettings(profile=PLAIN, calibration=CALIBRATION, internal_nlb=True)
    added = calibration_manifests(spec, settings)
    assert {o["kind"] for o in added} == {"NetworkPolicy", "ConfigMap", "Job", "Deployment",
                                          "Service"}  # fmt: skip
    for manifest in added:
        kubernetes_validate.validate(manifest, f"{k8s}.0", strict=True)


def _selects(selector: str, labels: dict[str, str]) -> bool:
    """A kubernetes-workload podSelector of equality terms (`k=v,k=v`) against pod labels."""
    terms = [term.split("=", 1) for term in selector.split(",")]
    return all(labels.get(key) == value for key, value in terms)


def _pod_labels(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"]
        for o in objects
        if o["kind"] in ("Deployment", "Job")
    }


def test_the_arm_runs_only_while_a_calibration_jobs_pod_runs() -> None:
    """KEDA's kubernetes-workload scaler counts the selector's pods that have not Succeeded or
    Failed: the arm is held at one replica by the Job's pod and goes to 0 once it ends."""
    _, objects = _built()
    arm = _named(objects, "Deployment", "-spec")["metadata"]["name"]
    (scaled,) = [
        o
        for o in objects
        if o["kind"] == "ScaledObject" and o["spec"]["scaleTargetRef"]["name"] == arm
    ]
    assert scaled["spec"]["scaleTargetRef"]["kind"] == "Deployment"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (0, 1)
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "kubernetes-workload" and trigger["metadata"]["value"] == "1"
    selected = {
        name
        for name, labels in _pod_labels(objects).items()
        if _selects(trigger["metadata"]["podSelector"], labels)
    }
    # the Job's pods and nothing else: a server pod it selected would hold itself up
    assert selected == {_named(objects, "Job", "-calibration-")["metadata"]["name"]}


@pytest.mark.parametrize("scale_to_zero", [False, True])
def test_the_main_deployment_keeps_a_replica_while_the_job_runs(scale_to_zero: bool) -> None:
    """The Job calls the plain Service directly: with scale to zero, the same trigger on the main
    ScaledObject brings a plain replica for it."""
    _, spec, manifests, _ = build(PLAIN, calibration=CALIBRATION, scale_to_zero=scale_to_zero)
    objects = manifests.all()
    (main,) = [
        o
        for o in objects
        if o["kind"] == "ScaledObject" and o["spec"]["scaleTargetRef"]["name"] == spec.name
    ]
    assert main["spec"]["minReplicaCount"] == (0 if scale_to_zero else 1)
    (job_trigger,) = [t for t in main["spec"]["triggers"] if t["type"] == "kubernetes-workload"]
    job = _named(objects, "Job", "-calibration-")["metadata"]["name"]
    assert [
        name
        for name, labels in _pod_labels(objects).items()
        if _selects(job_trigger["metadata"]["podSelector"], labels)
    ] == [job]
    _, _, plain, _ = build(PLAIN, scale_to_zero=scale_to_zero)
    (without,) = [o for o in plain.all() if o["kind"] == "ScaledObject"]
    assert "kubernetes-workload" not in [t["type"] for t in without["spec"]["triggers"]]
