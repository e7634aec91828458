"""The YAML export applies as is (issue 48, finding 11): `manifests --out` builds and uploads the
trnspec bundle (`--upload-bundle`, what `cdk deploy`'s file asset does), binds its URI and sha256
and the secrets' ARNs, and with `--iam-cluster` writes each service account's IAM role (trust and
policy) and its Pod Identity association, read from the serving stack built for an existing
cluster (the same constructs, not a copy). S3 is moto."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from infra.serving.manifests.placeholders import (
    BUNDLE_SHA256_PLACEHOLDER,
    BUNDLE_URI_PLACEHOLDER,
    HF_TOKEN_SECRET_PLACEHOLDER,
)
from trnspec_tools import manifests as command

PLAN = str(Path(__file__).resolve().parents[2] / "config" / "plans" / "default.yaml")
REGION = "us-east-2"
BUCKET = "my-models"
HF_ARN = f"arn:aws:secretsmanager:{REGION}:111122223333:secret:hf-AbCdEf"
KEY_ARN = f"arn:aws:kms:{REGION}:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.fixture
def s3(fake_aws_env: None) -> Iterator[object]:
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield client


def _args(out: Path, *extra: str) -> list[str]:
    return [
        *("--plan", PLAN, "--out", str(out), "--vpc-cidr", "10.0.0.0/16"),
        *("--bucket", BUCKET, "--region", REGION, "--upload-bundle", f"s3://{BUCKET}/bundles"),
        *("--hf-token-secret-arn", HF_ARN),
        *extra,
    ]


def test_the_export_uploads_the_bundle_and_binds_what_the_stack_would(s3, tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    assert command.main(_args(out)) == 0
    # what was uploaded (the working tree may change under a test run: not rebuilt here)
    (key,) = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="bundles/")["Contents"]]
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    sha256 = hashlib.sha256(body).hexdigest()
    assert key == f"bundles/trnspec-bundle-{sha256[:16]}.zip"  # the stack asset's name
    text = "".join(p.read_text() for p in sorted(out.glob("*.yaml")))
    for placeholder in (
        BUNDLE_URI_PLACEHOLDER,
        BUNDLE_SHA256_PLACEHOLDER,
        HF_TOKEN_SECRET_PLACEHOLDER,
    ):
        assert placeholder not in text
    assert HF_ARN in text
    assert f"s3://{BUCKET}/{key}" in text and sha256 in text


def test_a_bad_upload_destination_is_one_line_naming_the_flag(s3, tmp_path: Path, capsys) -> None:
    args = _args(tmp_path / "d")
    args[args.index("--upload-bundle") + 1] = "my-models/bundles"
    with pytest.raises(SystemExit) as exit_:  # refused where it is parsed, before any build
        command.main(args)
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert "--upload-bundle: my-models/bundles: not an S3 URI" in line


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--upload-bundle", "s3://../bundles", "not an S3 bucket name"),
        ("--bucket", "../models", "not an S3 bucket name"),
        ("--region", "us-east-\u0661", "not an AWS region name"),
        ("--hf-token-secret-arn", HF_ARN.replace("aws", "aws-x", 1), "no AWS partition"),
        ("--kms-key-arn", KEY_ARN.replace("111122223333", "\u0661" * 12), "12 digits"),
    ],
)
def test_an_aws_identifier_aws_would_refuse_is_refused_at_the_flag(
    tmp_path: Path, capsys, flag: str, value: str, says: str
) -> None:
    args = _args(tmp_path / "d", "--iam-cluster", "my-cluster", "--kms-key-arn", KEY_ARN)
    args[args.index(flag) + 1] = value
    with pytest.raises(SystemExit) as exit_:
        command.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and says in err
    assert not (tmp_path / "d").exists()


@pytest.mark.slow  # builds and synthesizes the serving stack (about 30 s here)
def test_iam_gives_each_service_account_its_role_and_association(s3, tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    assert command.main(_args(out, "--iam-cluster", "my-cluster", "--kms-key-arn", KEY_ARN)) == 0
    accounts = [
        (d["metadata"]["namespace"], d["metadata"]["name"])
        for d in yaml.safe_load_all((out / "02-service-accounts.yaml").read_text())
    ]
    iam = out / "iam"
    script = (iam / "associations.sh").read_text()
    (key,) = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="bundles/")["Contents"]]
    for namespace, name in accounts:
        policy = json.loads((iam / f"{name}.policy.json").read_text())
        trust = json.loads((iam / f"{name}.trust.json").read_text())
        assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        text = json.dumps(policy)
        assert "<ModelBucket" not in text and f"arn:aws:s3:::{BUCKET}" in text
        (read_bundle,) = [s for s in policy["Statement"] if s["Sid"] == "ReadTrnspecBundle"]
        assert read_bundle["Resource"] == f"arn:aws:s3:::{BUCKET}/{key}"
        assert f"--namespace {namespace} --service-account {name} " in script
    by_sid = {
        name: {
            s["Sid"]: s for s in json.loads((iam / f"{name}.policy.json").read_text())["Statement"]
        }
        for _, name in accounts
    }
    serve = next(v for k, v in by_sid.items() if k.endswith("-serve"))
    assert serve["WriteCompileCacheOnly"]["Resource"] == f"arn:aws:s3:::{BUCKET}/compile-cache/*"
    assert serve["BucketKeyViaS3"]["Resource"] == KEY_ARN
    weights = next(v for k, v in by_sid.items() if k.endswith("-weights"))
    assert weights["ReadHfToken"]["Resource"] == HF_ARN
