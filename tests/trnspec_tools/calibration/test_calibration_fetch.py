"""`calibrate fetch --stack NAME`: the newest complete run comes home from the stack's bucket, found
through the stack's outputs as `bench --stack` finds its service (moto: CloudFormation, S3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from infra.outputs import ServingOutputs
from trnspec_tools.calibration import store
from trnspec_tools.calibration.fetch import fetch
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


def _result(verdict: str) -> bytes:
    return json.dumps({"verdict": verdict, "verdicts": [{"text": f"concurrency 1: {verdict}"}]})


def test_the_newest_complete_run_comes_home(aws, tmp_path: Path) -> None:
    cfn, s3, bucket = aws
    store.upload(s3, bucket, "20261201T100000Z", {store.RESULT_JSON: _result("old").encode()})
    newest = {store.RESULT_JSON: _result("plain is cheaper").encode(), store.ROWS_YAML: b"x: 1\n"}
    store.upload(s3, bucket, "20261202T090000Z", newest)
    # A run still writing (no calibration.json yet) and a stray prefix are not "newest".
    s3.put_object(Bucket=bucket, Key="calibration/20261202T100000Z/trn2_rows.yaml", Body=b"")
    s3.put_object(Bucket=bucket, Key="calibration/notes/readme.txt", Body=b"")
    lines: list[str] = []
    files = fetch(STACK, tmp_path, REGION, clients=lambda _r: (cfn, s3), log=lines.append)
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
