"""`calibrate fetch --stack NAME`: the newest complete run comes home from the stack's bucket, found
through the stack's outputs as `bench --stack` finds its service (moto: CloudFormation, S3)."""

from __future__ import annotations

import argparse
import errno
import itertools
import json
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from trnspec.boundary.errors import BoundaryError
from trnspec.cli.plan_deploy import add_arguments

from infra.outputs import ServingOutputs
from infra.settings import load_settings
from infra.settings.deploy_context import DeployContext
from trnspec_tools.calibration import fetch as fetch_module
from trnspec_tools.calibration import store
from trnspec_tools.calibration.fetch import (
    ADMIN_PLACEHOLDER,
    PEAK_PLACEHOLDER,
    TPOT_PLACEHOLDER,
    fetch,
    next_commands,
    read_result,
)
from trnspec_tools.client.stack_endpoint import StackError

REGION = "us-east-2"
STACK = "trnspec-serving"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[object, object, str]]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        template = {
            "Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}},
            "Outputs": {ServingOutputs.MODEL_BUCKET_NAME: {"Value": {"Ref": "Bucket"}}},
        }
        cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        outputs = cfn.describe_stacks(StackName=STACK)["Stacks"][0]["Outputs"]
        yield cfn, s3, outputs[0]["OutputValue"]


def _doc(verdict: str, arms: dict[str, str | None] | None = None) -> dict[str, Any]:
    """calibration.json as run.calibration_document writes it (the keys fetch reads)."""
    profiles = {"speculative": None, "plain": None, **(arms or {})}
    return {
        "kind": "trnspec-calibration",
        "arms": {arm: {"profile": profile, "url": "http://x"} for arm, profile in profiles.items()},
        "verdicts": [{"concurrency": 1, "decision": "plain", "text": f"concurrency 1: {verdict}"}],
        "verdict": verdict,
    }


def _result(verdict: str) -> str:
    return json.dumps(_doc(verdict))


def test_the_newest_complete_run_comes_home(aws, tmp_path: Path) -> None:
    cfn, s3, bucket = aws
    store.upload(s3, bucket, "20261201T100000Z", {store.RESULT_JSON: _result("old").encode()})
    newest = {store.RESULT_JSON: _result("plain is cheaper").encode(), store.ROWS_YAML: b"x: 1\n"}
    store.upload(s3, bucket, "20261202T090000Z", newest)
    # A run still writing (no calibration.json yet) and a stray prefix are not "newest".
    s3.put_object(Bucket=bucket, Key="calibration/20261202T100000Z/trn2_rows.yaml", Body=b"")
    s3.put_object(Bucket=bucket, Key="calibration/notes/readme.txt", Body=b"")
    lines: list[str] = []
    fetched = fetch(STACK, tmp_path, REGION, clients=lambda _r: (cfn, s3), log=lines.append)
    files = fetched.files
    assert not fetched.moved()
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "20261202T090000Z/calibration.json",
        "20261202T090000Z/trn2_rows.yaml",
    ]
    assert files[0].read_bytes() == newest[store.RESULT_JSON]
    assert files[1].read_bytes() == b"x: 1\n"
    assert "verdict: plain is cheaper" in lines
    assert f"s3://{bucket}/calibration/20261202T090000Z/" in lines[0]


def test_a_stack_without_results_says_so(aws, tmp_path: Path) -> None:
    cfn, s3, bucket = aws
    with pytest.raises(StackError, match=f"no calibration results in s3://{bucket}/calibration/"):
        fetch(STACK, tmp_path, REGION, clients=lambda _r: (cfn, s3), log=lambda _: None)


def test_a_stack_that_is_not_the_serving_stack_is_named(aws, tmp_path: Path) -> None:
    cfn, s3, _ = aws
    cfn.create_stack(StackName="other", TemplateBody=json.dumps(
        {"Resources": {"B": {"Type": "AWS::S3::Bucket"}}}))  # fmt: skip
    with pytest.raises(StackError, match="--stack=other: no ModelBucketName output"):
        fetch("other", tmp_path, REGION, clients=lambda _r: (cfn, s3), log=lambda _: None)
    with pytest.raises(StackError, match="--stack=missing"):
        fetch("missing", tmp_path, REGION, clients=lambda _r: (cfn, s3), log=lambda _: None)


def test_stamps_sort_in_time_and_are_checked() -> None:
    assert store.run_prefix("20261202T090000Z") == "calibration/20261202T090000Z/"
    with pytest.raises(ValueError, match="yyyymmddThhmmssZ"):
        store.run_prefix("2026-12-02")


# The next commands: what `calibrate fetch` prints after the verdict (finding 6 of issue 48).

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "trnspec" / "plan"))
from rows_fixture import rows_text  # noqa: E402

ADMIN_ARN = "arn:aws:iam::123456789012:role/Admin"
#: What a default deploy with a pool override and a rerun token outputs (DeployContext, as the
#: serving stack writes it: the rerun token is the plan's business and is left out).
DEPLOYED_WITH = DeployContext(
    "default",
    (
        ("admin_principal_arns", f"[{ADMIN_ARN}]"),
        ("trn2_pools.0.max_size", "3"),
        ("serving.calibration.rerun", "2"),
    ),
)
CONTEXT = DEPLOYED_WITH.output_text()
PLAN_COMMAND = (
    "python -m trnspec plan-deploy --profile qwen3-4b-dflash --profile qwen3-4b-baseline "
    "--acceptance-length 2.1 --acceptance-k 15 --tpot-ms 30 --peak-streams 16 --min-replicas 1 "
    "--input-len 512 --output-len 256 --config config/default.yaml"
)


DEPLOYED = "deployed-serving"


def _stack_with(cfn: Any, outputs: dict[str, str]) -> str:
    """A stack with the serving stack's bucket and region outputs plus `outputs`; its bucket."""
    template = {
        "Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}},
        "Outputs": {
            ServingOutputs.MODEL_BUCKET_NAME: {"Value": {"Ref": "Bucket"}},
            ServingOutputs.REGION: {"Value": {"Ref": "AWS::Region"}},
            **{k: {"Value": v} for k, v in outputs.items()},
        },
    }
    cfn.create_stack(StackName=DEPLOYED, TemplateBody=json.dumps(template))
    described = cfn.describe_stacks(StackName=DEPLOYED)["Stacks"][0]["Outputs"]
    return next(
        o["OutputValue"] for o in described if o["OutputKey"] == ServingOutputs.MODEL_BUCKET_NAME
    )


def _calibration(arms: dict[str, str | None]) -> bytes:
    return json.dumps(_doc("plain is cheaper", arms)).encode()


def _printed_commands(lines: list[str]) -> list[list[str]]:
    start = lines.index(
        "next: plan on the measured rows, then deploy that plan (from the repository root):"
    )
    return [shlex.split(line) for line in lines[start + 1 :]]


def test_fetch_prints_the_plan_deploy_and_cdk_deploy_that_follow_and_both_run(
    aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The printed plan-deploy parses with plan-deploy's own parser (the fetched rows, the
    deployed profile's pools with its pool override); the printed cdk deploy's -c items load with
    the app's settings loader, on the plan it writes, with the deploy's admins and pools."""
    cfn, s3, _ = aws
    outputs = {ServingOutputs.DEPLOY_CONTEXT: CONTEXT, ServingOutputs.PLAN_COMMAND: PLAN_COMMAND}
    bucket = _stack_with(cfn, outputs)
    store.upload(
        s3,
        bucket,
        "20261202T090000Z",
        {
            store.RESULT_JSON: _calibration({"plain": "qwen3-4b-baseline"}),
            store.ROWS_YAML: rows_text(0.64).encode(),
        },
    )
    lines: list[str] = []
    monkeypatch.chdir(REPO)  # plan.command names config/default.yaml, as run from the repo
    out = tmp_path / "reports"
    fetch(DEPLOYED, out, REGION, clients=lambda _r: (cfn, s3), log=lines.append)
    plan_cmd, cdk_cmd = _printed_commands(lines)[-2:]
    run_dir = out / "20261202T090000Z"

    assert plan_cmd[:4] == ["python", "-m", "trnspec", "plan-deploy"]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(plan_cmd[4:])
    assert args.measured == str(run_dir / "trn2_rows.yaml")
    assert args.out == str(run_dir / "plan.yaml")
    assert args.config == "config/default.yaml"
    assert args.overrides == ["trn2_pools.0.max_size=3"]
    assert args.profile == ["qwen3-4b-dflash", "qwen3-4b-baseline"]
    # plan-deploy itself on measured rows runs in tests/trnspec/cli/test_plan_deploy_cli.py (about
    # 3 minutes on this shared machine); the plan it writes is stood in for by the shipped plan.
    shutil.copy(REPO / "config" / "plans" / "default.yaml", run_dir / "plan.yaml")

    env, *cdk = cdk_cmd
    assert env == f"AWS_REGION={REGION}"
    assert cdk[:4] == ["npx", "cdk", "deploy", "--all"]
    context = dict(item.split("=", 1) for flag, item in itertools.pairwise(cdk) if flag == "-c")
    assert context["serving.plan"] == str(run_dir / "plan.yaml")
    assert "serving.calibration.rerun" not in context
    overrides = {k: v for k, v in context.items() if k != "profile"}
    settings = load_settings(context["profile"], overrides)
    assert settings.admin_principal_arns == (ADMIN_ARN,)
    assert settings.trn2_pools[0].max_size == 3
    assert settings.serving is not None
    assert settings.serving["profile"] == "qwen3-4b-baseline"


def test_without_the_deploy_outputs_the_commands_say_what_to_fill_in() -> None:
    """A stack deployed before DeployContext/PlanCommand existed: placeholders, each named."""
    doc = read_result(
        _calibration({"plain": "qwen3-4b-baseline", "speculative": "qwen3-4b-dflash"}), "c.json"
    )
    following = next_commands({ServingOutputs.REGION: REGION}, doc, "r/1", "r/1/trn2_rows.yaml")
    assert following.plan_deploy is not None
    assert following.plan_deploy[4:8] == (
        "--profile", "qwen3-4b-dflash", "--profile", "qwen3-4b-baseline",
    )  # fmt: skip
    assert TPOT_PLACEHOLDER in following.plan_deploy and PEAK_PLACEHOLDER in following.plan_deploy
    assert f"admin_principal_arns={ADMIN_PLACEHOLDER}" in following.cdk_deploy
    assert len(following.notes) == 2


def test_a_run_without_rows_prints_no_plan_deploy() -> None:
    following = next_commands(
        {ServingOutputs.DEPLOY_CONTEXT: CONTEXT, ServingOutputs.PLAN_COMMAND: PLAN_COMMAND},
        read_result(_calibration({}), "c.json"),
        "r/1",
        None,
    )
    assert following.plan_deploy is None
    assert "no trn2_rows.yaml" in following.notes[0]


# Odd results and unwritable destinations (issue 50): one line naming the field, never a
# traceback; nothing written from a document that is refused; nothing lost when a write fails.

STAMP = "20261202T090000Z"


def _with(**changes: Any) -> dict[str, Any]:
    doc = _doc("plain is cheaper")
    for path, value in changes.items():
        *parents, last = path.split("__")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return doc


def _deep(levels: int) -> str:
    """A result whose verdict is nested `levels` deep (json.dumps itself cannot write it)."""
    return json.dumps(_with(verdict="X")).replace('"X"', "[" * levels + "]" * levels)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (json.dumps(_with(verdicts=None)), ".verdicts"),
        (json.dumps(_with(verdicts=5)), ".verdicts"),
        (json.dumps(_with(verdicts={"a": 1})), ".verdicts"),
        (json.dumps(_with(verdicts__0__decision="perhaps")), ".verdicts[0].decision"),
        (json.dumps(_with(verdicts__0__decision=["plain"])), ".verdicts[0].decision"),
        (json.dumps(_with(verdicts__0__concurrency=True)), ".verdicts[0].concurrency"),
        (json.dumps(_with(verdicts__0__concurrency="1")), ".verdicts[0].concurrency"),
        (json.dumps(_with(verdicts__0="concurrency 1: plain")), ".verdicts[0]"),
        (json.dumps(_with(verdict=["x"])), ".verdict"),
        (json.dumps(_with(arms__plain__profile=["a"])), ".arms.plain.profile"),
        (json.dumps(_with(arms__plain=5)), ".arms.plain"),
        (json.dumps(_with(kind="trnspec-tune")), ".kind"),
        (json.dumps([_doc("x")]), ""),
        (json.dumps(_with(verdicts__0__concurrency=float("nan"))), ""),
        (_deep(5000), ""),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "",
)
def test_an_odd_result_is_refused_naming_its_field_and_nothing_is_written(
    aws, tmp_path: Path, body: str, field: str
) -> None:
    cfn, s3, bucket = aws
    store.upload(s3, bucket, STAMP, {store.RESULT_JSON: body.encode(), store.ROWS_YAML: b"x: 1"})
    with pytest.raises(BoundaryError) as refused:
        fetch(STACK, tmp_path / "out", REGION, clients=lambda _r: (cfn, s3), log=lambda _: None)
    assert refused.value.field == f"{STAMP}/{store.RESULT_JSON}{field}"
    assert "\n" not in str(refused.value)
    assert list((tmp_path / "out").iterdir()) == []


def test_the_command_says_an_odd_result_in_one_line(
    aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfn, s3, bucket = aws
    body = json.dumps(_with(verdicts__0__decision="maybe")).encode()
    store.upload(s3, bucket, STAMP, {store.RESULT_JSON: body})
    monkeypatch.setattr(fetch_module, "_boto_clients", lambda _r: (cfn, s3))
    assert fetch_module.main(["--stack", STACK, "--out", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"calibrate fetch: error: {STAMP}/calibration.json.verdicts[0].decision=maybe: must be "
        "one of speculation, plain, undecided, failed; re-measure, or restore the file the tool "
        "wrote"
    )


def test_an_out_that_is_a_file_is_refused_before_aws_is_asked(tmp_path: Path) -> None:
    (tmp_path / "reports").write_text("mine")

    def no_clients(_region: str | None) -> tuple[object, object]:
        raise AssertionError("AWS asked before --out was checked")

    for out in (tmp_path / "reports", tmp_path / "reports" / "calibration"):
        with pytest.raises(BoundaryError) as refused:
            fetch(STACK, out, REGION, clients=no_clients, log=lambda _: None)
        assert (refused.value.field, refused.value.value) == ("--out", str(out))
    assert (tmp_path / "reports").read_text() == "mine"


def test_a_write_that_fails_keeps_the_files_in_a_named_fallback(
    aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills after --out was checked: each file is kept under the temporary directory,
    the error names where, the next commands name the copy, and the exit status is 1."""
    import trnspec.boundary.write as write

    cfn, s3, bucket = aws
    files = {store.RESULT_JSON: _result("plain is cheaper").encode(), store.ROWS_YAML: b"x: 1\n"}
    store.upload(s3, bucket, STAMP, files)
    out = tmp_path / "out"
    real = write.write_file

    def full_under_out(path: Path, data: bytes | str) -> Path:
        if Path(path).is_relative_to(out):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(write, "write_file", full_under_out)
    monkeypatch.setattr(fetch_module, "_boto_clients", lambda _r: (cfn, s3))
    assert fetch_module.main(["--stack", STACK, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    errors = captured.err.strip().splitlines()
    assert len(errors) == 2
    for line, name in zip(errors, files, strict=True):
        target = out / STAMP / name
        assert line.startswith(f"calibrate fetch: error: cannot write {target} (No space left")
        kept = Path(line.split("kept it at ")[1])
        assert kept.read_bytes() == files[name] and not kept.is_relative_to(out)
    assert f"--measured {kept.parent}/1-trn2_rows.yaml" in captured.out
    shutil.rmtree(kept.parent)
