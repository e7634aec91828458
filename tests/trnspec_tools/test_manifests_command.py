"""`python -m trnspec_tools manifests`: export and preflight from the command line, with real
files (exit codes: 0 ok, 1 a node requirement fails, 2 bad input)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml

from infra.settings import SettingsError, load_settings
from infra.settings.serving import load_serving_settings
from trnspec_tools import cli
from trnspec_tools import manifests as command

PLAN = str(Path(__file__).resolve().parents[2] / "config" / "plans" / "default.yaml")
TRN2 = {
    "kind": "Node",
    "metadata": {
        "name": "trn2-a",
        "labels": {"node.kubernetes.io/instance-type": "trn2.48xlarge", "trnspec.io/lnc": "2"},
    },
    "spec": {"taints": [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"aws.amazon.com/neuron": "16"}},
}


def nodes_file(tmp_path: Path, *nodes: dict[str, object]) -> str:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"kind": "List", "items": list(nodes)}))
    return str(path)


def test_the_command_is_registered_with_the_other_tools() -> None:
    assert cli.COMMANDS["manifests"][0] == "trnspec_tools.manifests"


def test_check_without_nodes_prints_a_command_per_requirement_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert command.main(["--plan", PLAN, "--check"]) == 0
    out = capsys.readouterr().out
    assert "check neuron-device:" in out and "check pod-identity-agent:" in out
    assert out.count("      $ kubectl ") == out.count("\ncheck ") + 1


def test_check_with_good_nodes_passes_each_node_requirement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main(["--plan", PLAN, "--check", "--nodes", nodes_file(tmp_path, TRN2)]) == 0
    out = capsys.readouterr().out
    assert "pass  neuron-device" in out and "pass  node-taints" in out
    assert "3 of 3 node requirements pass" in out


def test_check_with_the_trn2_group_at_zero_says_so_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the system nodes are up (a Trn2 group at zero): not a failure, and the way to check
    anyway is named."""
    system = json.loads(json.dumps(TRN2))
    system["metadata"].update(
        name="sys-a", labels={"node.kubernetes.io/instance-type": "m7i.xlarge"}
    )
    system["spec"] = {}
    argv = ["--plan", PLAN, "--check", "--nodes", nodes_file(tmp_path, system)]
    assert command.main(argv) == 0
    out = capsys.readouterr().out
    assert "n/a   neuron-device" in out and "FAIL" not in out
    assert "node requirements not evaluated: no trn2.48xlarge node up" in out


def test_check_with_the_node_group_template_evaluates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = {
        "nodegroup": {
            "nodegroupName": "trn2",
            "instanceTypes": ["trn2.48xlarge"],
            "labels": {"trnspec.io/lnc": "2"},
            "taints": [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NO_SCHEDULE"}],
        }
    }
    path = tmp_path / "nodegroup.json"
    path.write_text(json.dumps(group))
    assert command.main(["--plan", PLAN, "--check", "--node-group", str(path)]) == 0
    out = capsys.readouterr().out
    assert "pass  neuron-device" in out and "3 of 3 node requirements pass" in out


def test_check_with_nodes_missing_the_lnc_label_exits_1_naming_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = json.loads(json.dumps(TRN2))
    del node["metadata"]["labels"]["trnspec.io/lnc"]
    assert command.main(["--plan", PLAN, "--check", "--nodes", nodes_file(tmp_path, node)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  node-labels" in out
    assert "no node carries node.kubernetes.io/instance-type=trn2.48xlarge,trnspec.io/lnc=2" in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--check", "--nodes", "/dev/zero"], "--nodes=/dev/zero"),
        (["--out", "x"], "--vpc-cidr: required with --out"),
        (
            ["--out", "x", "--vpc-cidr", "10.0.0.1/16"],
            "10.0.0.1/16: has host bits set: use 10.0.0.0/16",
        ),
        (["--out", "x", "--vpc-cidr", "10.0.0.0/255.255.0.0"], "form: use 10.0.0.0/16"),
        (["--out", "x", "--vpc-cidr", "vpc-0abc"], "vpc-0abc: not an IPv4 CIDR: use the VPC's"),
        (["--out", "x", "--nodes", "n.json", "--vpc-cidr", "10.0.0.0/16"], "--nodes goes with"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    argv: list[str],
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = command.main(["--plan", PLAN, *argv])
    except SystemExit as exit_:  # argparse's own refusal of a flag's value
        code = exit_.code
    assert code == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_plan_that_is_not_a_plan_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "plan.yaml"
    bad.write_text("kind: something-else\n")
    assert command.main(["--plan", str(bad), "--check"]) == 2
    assert "not a plan file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "cidr",
    [
        *("10.0.0.0/16", "10.0.0.1/16", "10.0.0.0", "vpc-0abc", "10.0.0.0/33", "::/0", "0/0"),
        # a netmask or a zero-padded prefix: the flag used to take these and the setting not
        *("10.0.0.0/255.255.0.0", "10.0.0.0/016"),
    ],
)
def test_vpc_cidr_takes_exactly_what_the_cluster_existing_setting_takes(cidr: str) -> None:
    """An export and a deploy onto the same cluster accept one VPC CIDR rule."""
    try:
        command._cidr(cidr)
        flag_ok = True
    except argparse.ArgumentTypeError:
        flag_ok = False
    try:
        load_settings("default", {"cluster.existing.name": "c", "cluster.existing.vpc_cidr": cidr})
        setting_ok = True
    except SettingsError:
        setting_ok = False
    assert flag_ok == setting_ok


SETS = (
    ("serving.namespace", "llm"),
    ("serving.scale_to_zero", "true"),
    ("serving.max_replicas", "3"),
)


def test_set_exports_what_cdk_deploy_with_the_same_overrides_deploys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed = load_settings("default", {"serving.plan": PLAN, **dict(SETS)}).serving
    workload = command.plan_workload(PLAN, SETS)
    assert workload.settings == load_serving_settings(deployed)
    argv = ["--plan", PLAN, "--vpc-cidr", "10.0.0.0/16", "--out", str(tmp_path / "out")]
    assert command.main([*argv, *(a for k, v in SETS for a in ("--set", f"{k}={v}"))]) == 0
    autoscaling = yaml.safe_load_all((tmp_path / "out" / "04-autoscaling.yaml").read_text())
    (scaled,) = [
        m
        for m in autoscaling
        if m["kind"] == "ScaledObject" and m["metadata"]["name"] == workload.spec.name
    ]
    assert scaled["metadata"]["namespace"] == "llm"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (0, 3)


@pytest.mark.parametrize(
    "item", ["namespace=llm", "serving.", "serving.plan=x", "serving.x", " serving.a=1"]
)
def test_set_takes_only_a_serving_field_and_a_value(
    item: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        command.main(["--plan", PLAN, "--check", "--set", item])
    assert exit_.value.code == 2
    assert "argument --set:" in capsys.readouterr().err


def test_a_bad_serving_value_given_by_set_exits_2_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert command.main(["--plan", PLAN, "--check", "--set", "serving.min_replicas=abc"]) == 2
    assert "serving.min_replicas=abc" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"spec": ["NoSchedule"]}, "--nodes items[0].spec="),
        ({"status": "Ready"}, "--nodes items[0].status="),
        ({"spec": {"taints": [{"key": "k", "effect": ["NoSchedule"]}]}}, ".spec.taints[0].effect="),
    ],
)
def test_nodes_of_the_wrong_shape_exit_2_with_one_line_and_print_nothing(
    change: dict[str, object], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--plan", PLAN, "--check", "--nodes", nodes_file(tmp_path, {**TRN2, **change})]
    assert command.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("manifests: error: --nodes items[0]")
    assert says in err


def test_a_storage_class_carrying_shell_syntax_is_refused_before_any_command_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sets = ["serving.weights_storage=ebs", "serving.ebs_storage_class=gp3 && id"]
    argv = ["--plan", PLAN, "--check", *(a for s in sets for a in ("--set", s))]
    assert command.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "serving.ebs_storage_class=gp3 && id: name a StorageClass" in err
