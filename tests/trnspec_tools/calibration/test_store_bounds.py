"""Every read of the calibration bucket ends within its bound in all (store.READ_TIMEOUT_S by
default): botocore's timeouts are per read, so an S3 that answers a byte at a time, or holds the
answer, would hold `calibrate fetch` for as long as it does. Here S3 is moto behind a stand-in
that holds one call until the test ends; the bound is tiny and only the outcome is asserted."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.outputs import ServingOutputs
from trnspec_tools.calibration import store
from trnspec_tools.calibration.fetch import fetch

REGION = "us-east-2"
BUCKET = "calibration-results"
STAMP = "20261207T120000Z"
BOUND_S = 0.05
DOC = {"kind": "trnspec-calibration", "arms": {}, "verdicts": [], "verdict": "nothing measured"}


class _Held:
    """The body of an S3 answer that never comes (until released)."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def read(self, _size: int = -1) -> bytes:
        self.release.wait(10)
        return b"{}"


class _HeldPaginator:
    """A listing whose first page never comes (until released)."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def paginate(self, **_kw: Any) -> Iterator[dict[str, Any]]:
        self.release.wait(10)
        yield {}


class _HoldingS3:
    """moto's S3 client, with the call named `held` held until `release` ('body': the object's
    body; 'list': the listing's pages)."""

    def __init__(self, s3: Any, held: str, release: threading.Event) -> None:
        self.s3, self.held, self.release = s3, held, release

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.s3, name)
        if name == "get_object" and self.held == "body":
            return lambda **kw: {**real(**kw), "Body": _Held(self.release)}
        if name == "get_paginator" and self.held == "list":
            return lambda _name: _HeldPaginator(self.release)
        if name != self.held:
            return real

        def held(*args: Any, **kw: Any) -> Any:
            self.release.wait(10)
            return real(*args, **kw)

        return held


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # the held calls end with the test


@pytest.fixture
def s3(fake_aws_env: None) -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        store.upload(client, BUCKET, STAMP, {store.RESULT_JSON: json.dumps(DOC).encode()})
        yield client


@pytest.mark.parametrize("held", ["get_object", "body"])
def test_an_object_not_whole_within_the_bound_is_one_error_naming_it(
    s3: Any, release: threading.Event, held: str
) -> None:
    key = store.run_prefix(STAMP) + store.RESULT_JSON
    with pytest.raises(store.StoreError) as err:
        store.read_object(_HoldingS3(s3, held, release), BUCKET, key, BOUND_S)
    assert str(err.value) == (
        f"s3://{BUCKET}/{key}: S3 gave no whole answer within {BOUND_S:g} s (it answers too"
        " slowly, or never); check the network and --region"
    )


@pytest.mark.parametrize("held", ["list", "head_object"])
def test_a_listing_or_a_look_not_answered_within_the_bound_is_one_error(
    s3: Any, release: threading.Event, held: str
) -> None:
    with pytest.raises(store.StoreError, match=f"no whole answer within {BOUND_S:g} s"):
        store.newest_complete(_HoldingS3(s3, held, release), BUCKET, BOUND_S)


def test_the_reads_are_whole_within_the_bound_when_s3_answers(s3: Any) -> None:
    assert store.newest_complete(s3, BUCKET, 30.0) == STAMP
    assert store.read_run(s3, BUCKET, STAMP, 30.0) == {store.RESULT_JSON: json.dumps(DOC).encode()}


@pytest.mark.parametrize("held", ["list", "head_object", "get_object", "body"])
def test_fetch_ends_on_a_held_read_without_writing(
    s3: Any, release: threading.Event, tmp_path: Path, held: str
) -> None:
    """calibrate fetch passes its bound to every read of the bucket."""
    cfn = boto3.client("cloudformation", region_name=REGION)
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {ServingOutputs.MODEL_BUCKET_NAME: {"Value": BUCKET}},
    }
    cfn.create_stack(StackName="trnspec-serving", TemplateBody=json.dumps(template))
    holding = _HoldingS3(s3, held, release)
    with pytest.raises(store.StoreError, match=f"no whole answer within {BOUND_S:g} s"):
        fetch("trnspec-serving", tmp_path, REGION, lambda _r: (cfn, holding), print, BOUND_S)
    assert list(tmp_path.iterdir()) == []
