"""`cdk deploy -c serving.plan=FILE` deploys what `trnspec plan-deploy` chose, unchanged: the
synthesized ConfigMap (the engine config), Deployment and ScaledObject carry the plan's k,
max_num_seqs, replicas and KEDA target (infra/settings/plan_file.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscaler_sim import manifests
from platform_synth import ADMIN, Synth
from trnspec.config.serving import ServingConfig, apply_overrides, load_profile
from trnspec.hardware.packing import placement_for

from infra.app.composition import preflight
from infra.contracts import CONFIG_FILE
from infra.settings import SettingsError, load_settings
from infra.settings.plan_file import read_plan

REPO = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = REPO / "config/plans/default.yaml"


def _engine(objects: list[dict[str, Any]], deployment: dict[str, Any]) -> dict[str, Any]:
    """The engine config of `deployment`: the config file of the ConfigMap its pods mount."""
    pod = deployment["spec"]["template"]["spec"]
    (name,) = [v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v]
    (config_map,) = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name
    ]
    return yaml.safe_load(config_map["data"][CONFIG_FILE])


def _assert_engine(engine: dict[str, Any], profile: str, overrides: list[str]) -> ServingConfig:
    expected = apply_overrides(load_profile(profile), overrides)
    assert engine["name"] == expected.name
    assert engine["max_num_seqs"] == expected.max_num_seqs
    assert engine["speculation"]["method"] == expected.speculation.method
    assert (
        engine["speculation"]["num_speculative_tokens"]
        == expected.speculation.num_speculative_tokens
    )
    return expected


def _assert_deploys(plan: dict[str, Any], objects: list[dict[str, Any]]) -> None:
    """The main Deployment (named for the plan's workload), its engine config and autoscaler
    are the plan's; its `calibration`, when there is one, is the speculative arm beside it and
    the Job that measures both, and without one there is neither."""
    serving = plan["serving"]
    name = serving.get("name") or serving["profile"]  # no override here renames it
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    main = deployments.pop(name)
    expected = _assert_engine(_engine(objects, main), serving["profile"], serving["overrides"])
    (scaled,) = [
        o["spec"]
        for o in objects
        if o["kind"] == "ScaledObject" and o["spec"]["scaleTargetRef"]["name"] == name
    ]
    assert scaled["minReplicaCount"] == serving["min_replicas"]
    assert scaled["maxReplicaCount"] == serving["max_replicas"]
    (trigger,) = [t for t in scaled["triggers"] if t["type"] == "prometheus"]
    assert trigger["metadata"]["threshold"] == str(serving["streams_per_replica"])
    assert scaled["scaleTargetRef"]["name"] == name
    # The replicas per node the plan priced are what the deployed pod packs to.
    chosen = plan["plan"]["chosen"]
    pod = main["spec"]["template"]["spec"]
    storage = pod["containers"][0]["resources"]["requests"]["ephemeral-storage"]
    placement = placement_for(expected, ephemeral_gib=int(storage.removesuffix("Gi")))
    assert placement is not None and placement.packing.replicas == chosen["replicas_per_node"]

    jobs = [o for o in objects if o["kind"] == "Job" and "-calibration-" in o["metadata"]["name"]]
    services = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    calibration = serving.get("calibration")
    if calibration is None:
        assert deployments == {} and jobs == [] and services == {name}
        return
    # Both arms, each behind its own Service; the arm one replica while the Job runs.
    arm_name = f"{name}-spec"
    assert list(deployments) == [arm_name] and services == {name, arm_name}
    arm = deployments[arm_name]
    (arm_scaled,) = [
        o
        for o in objects
        if o["kind"] == "ScaledObject" and o["spec"]["scaleTargetRef"]["name"] == arm_name
    ]
    assert (arm_scaled["spec"]["minReplicaCount"], arm_scaled["spec"]["maxReplicaCount"]) == (0, 1)
    speculative = calibration["speculative"]
    _assert_engine(_engine(objects, arm), speculative["profile"], speculative["overrides"])
    # The Job measures both at the plan's levels, once (no retry), within a bound.
    (job,) = jobs
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] > calibration["deadline_minutes"] * 60
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[:2] == ["calibrate", "run"]
    assert args[args.index("--plain") + 1].startswith(f"http://{name}.")
    assert args[args.index("--speculative") + 1].startswith(f"http://{arm_name}.")
    levels = args[args.index("--concurrency") + 1]
    assert levels == ",".join(str(c) for c in calibration["concurrency"])


def test_the_synthesized_default_deployment_is_the_committed_plan(platform_synth: Any) -> None:
    synth: Synth = platform_synth("default")
    plan = yaml.safe_load(DEFAULT_PLAN.read_text())
    # Undecided between plain and a speculative arm within the model's bands: the default
    # deploys the calibration (a confident plan deploys its choice alone).
    undecided = plan["plan"]["decision"]["verdict"] == "undecided"
    assert ("calibration" in plan["serving"]) == (undecided and "speculative_arm" in plan["plan"])
    _assert_deploys(plan, manifests(synth.serving_raw))


def test_a_plan_given_on_the_command_line_replaces_the_profiles(tmp_path: Path) -> None:
    plan = {
        "kind": "trnspec-deployment-plan",
        "serving": {
            "profile": "qwen3-4b-dflash",
            "overrides": ["max_num_seqs=2", "speculation.num_speculative_tokens=15"],
            "min_replicas": 2,
            "max_replicas": 8,
            "streams_per_replica": 2,
        },
        "plan": {"chosen": {"nodes_at_peak": 1, "replicas_per_node": 16}},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    settings = load_settings("default", {**ADMIN, "serving.plan": str(path)})
    _assert_deploys(plan, preflight(settings, check_placement=False).workload.manifests.all())
    # A -c serving field still wins over the plan.
    settings = load_settings("default", {"serving.plan": str(path), "serving.max_replicas": "3"})
    assert settings.serving is not None and settings.serving["max_replicas"] == 3


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"serving": {"profile": "x"}}, "not a plan file (kind: trnspec-deployment-plan)"),
        (
            {"kind": "trnspec-deployment-plan", "serving": {"profile": "x", "namespace": "y"}},
            "remove namespace",
        ),
        (
            {
                "kind": "trnspec-deployment-plan",
                "serving": {"profile": "qwen3-4b-baseline"},
                "plan": {"chosen": {"nodes_at_peak": 5}},
            },
            "trn2_pools.0.max_size=2: the plan",
        ),
    ],
    ids=["kind", "unplanned-field", "too-few-nodes"],
)
def test_a_bad_plan_is_refused_in_one_line(
    tmp_path: Path, plan: dict[str, Any], message: str
) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"serving.plan": str(path)})
    assert any(message in str(p) for p in err.value.problems), err.value.problems


def test_a_missing_plan_file_names_the_setting() -> None:
    with pytest.raises(SettingsError, match=r"serving\.plan=nope\.yaml: cannot read"):
        load_settings("default", {"serving.plan": "nope.yaml"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("plan: [1, 2]", "plan=[1, 2] must be a mapping"),
        ("plan: {chosen: [1]}", "plan.chosen=[1] must be a mapping"),
        ("plan: {chosen: {nodes_at_peak: true}}", "plan.chosen.nodes_at_peak=True must be a"),
        ("plan: {chosen: {nodes_at_peak: 0}}", "plan.chosen.nodes_at_peak=0 must be a"),
        ("plan: {chosen: {nodes_at_peak: '1'}}", "plan.chosen.nodes_at_peak='1' must be a"),
        ("serving: [profile]\nplan: []", "serving=['profile'] must be a mapping"),
    ],
    ids=["plan-list", "chosen-list", "nodes-bool", "nodes-zero", "nodes-text", "serving-list"],
)
def test_a_plan_record_of_the_wrong_type_is_one_line_not_a_traceback(
    tmp_path: Path, text: str, message: str
) -> None:
    """The record is typed where it enters: a list where a mapping belongs is named (it used to
    raise AttributeError, or be ignored), and `true` is not the node count 1."""
    doc = "kind: trnspec-deployment-plan\n" + text
    if not text.startswith("serving"):
        doc += "\nserving: {profile: qwen3-4b-baseline}"
    path = tmp_path / "plan.yaml"
    path.write_text(doc + "\n")
    plan, problems = read_plan(str(path))
    assert plan is None
    assert [p.field for p in problems] == ["serving.plan"] * len(problems)
    assert any(message in p.fix for p in problems), problems
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"serving.plan": str(path)})
    assert any(message in str(p) for p in err.value.problems)


def test_every_bad_part_of_a_plan_is_named_at_once(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "kind: trnspec-deployment-plan\nserving: {profile: x, namespace: y}\nplan: [1]\n"
    )
    _, problems = read_plan(str(path))
    assert len(problems) == 2
    assert "remove namespace" in problems[0].fix and "plan=[1]" in problems[1].fix


def test_a_plan_may_carry_a_calibration_section(tmp_path: Path) -> None:
    plan = {
        "kind": "trnspec-deployment-plan",
        "serving": {
            "profile": "qwen3-4b-baseline",
            "calibration": {"speculative": {"profile": "qwen3-4b-dflash"}},
        },
        "plan": {"chosen": {"nodes_at_peak": 1}},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    read, problems = read_plan(str(path))
    assert problems == [] and read is not None and read.nodes_at_peak == 1
    assert read.serving["calibration"]["speculative"]["profile"] == "qwen3-4b-dflash"
