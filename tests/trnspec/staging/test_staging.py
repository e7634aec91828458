"""Staging against moto's S3: round trip, resume, interrupted transfers and corrupted objects.

Faults are injected with botocore's own event hooks on the real client (an after-call hook that
swaps a GetObject body for one that breaks after N bytes), so the code under test runs the real
s3transfer machinery.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from trnspec.staging.manifest import MANIFEST_NAME, PARTIAL_SUFFIX, build_manifest, read_manifest
from trnspec.staging.transfer import (
    S3Location,
    StagingError,
    TransferSettings,
    download,
    fetch_manifest,
    parse_s3_uri,
    pull_compiled,
    push_compiled,
    rich_progress,
    upload,
)

BUCKET = "models"
KiB = 1024
# Small parts so that a 300 KiB file is fetched as parallel ranged GETs, as a 10 GB shard would be.
SMALL_PARTS = TransferSettings(
    workers=3, max_attempts=3, multipart_threshold=64 * KiB, multipart_chunksize=64 * KiB
)


@pytest.fixture
def s3(fake_aws_env: None) -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-2")
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
        )
        yield client


@pytest.fixture
def model(tmp_path: Path) -> Path:
    root = tmp_path / "src" / "qwen"
    (root / "tokenizer").mkdir(parents=True)
    (root / "config.json").write_text('{"model_type": "qwen3"}')
    (root / "tokenizer" / "tokenizer.json").write_text('{"vocab": {}}')
    (root / "model-00001.safetensors").write_bytes(os.urandom(300 * KiB))
    (root / "model-00002.safetensors").write_bytes(os.urandom(200 * KiB + 7))
    return root


def record_calls(client: Any, operation: str) -> list[dict[str, Any]]:
    """Every call's params of one S3 operation, in order."""
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        f"before-parameter-build.s3.{operation}", lambda params, **_: calls.append(dict(params))
    )
    return calls


class BreakingBody:
    """A GetObject body that delivers `after` bytes and then fails like a dropped connection."""

    def __init__(self, body: Any, after: int, error: Exception) -> None:
        self._body, self._left, self._error = body, after, error

    def read(self, amt: int | None = None) -> bytes:
        if self._left <= 0:
            raise self._error
        data = self._body.read(min(amt or self._left, self._left))
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._body.close()


def break_downloads(client: Any, key_suffix: str, after: int, times: int) -> None:
    """The next `times` GETs of keys ending in key_suffix break after `after` bytes."""
    state = {"left": times}

    def hook(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if context.get("key", "").endswith(key_suffix) and state["left"] > 0:
            state["left"] -= 1
            parsed["Body"] = BreakingBody(parsed["Body"], after, RuntimeError("peer went away"))

    def remember_key(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["key"] = params["Key"]

    client.meta.events.register("before-parameter-build.s3.GetObject", remember_key)
    client.meta.events.register("after-call.s3.GetObject", hook)


def assert_same_tree(a: Path, b: Path) -> None:
    files_a = {p.relative_to(a): p.read_bytes() for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    files_b.pop(Path(MANIFEST_NAME), None)
    assert files_a == files_b


def no_partials(root: Path) -> bool:
    return not list(root.rglob(f"*{PARTIAL_SUFFIX}*"))


def test_parse_s3_uri_splits_bucket_and_prefix_and_rejects_other_forms() -> None:
    assert parse_s3_uri("s3://bkt/models/qwen/") == S3Location("bkt", "models/qwen")
    assert parse_s3_uri("s3://bkt", require_key=False) == S3Location("bkt", "")
    assert str(S3Location("b", "p").child("k")) == "s3://b/p/k"
    for bad in ("/local/path", "s3:///prefix", "Qwen/Qwen3-32B", "s3://", "s3://bkt", "s3://bkt/"):
        with pytest.raises(ValueError, match="s3://BUCKET/PREFIX"):
            parse_s3_uri(bad)


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bkt/../../../etc",
        "s3://bkt/models/../../x",
        "s3://bkt/./m",
        "s3://bkt/a//b",
        "s3://Bad_Bucket/m",
        "s3://b/m",
        "s3://bkt/m\x00x",
    ],
)
def test_s3_uris_that_could_escape_or_are_not_valid_are_refused(uri: str) -> None:
    with pytest.raises(ValueError):
        parse_s3_uri(uri)


def test_upload_then_download_round_trips_a_model_with_multipart_parts(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "models/qwen")
    up = upload(s3, model, loc, SMALL_PARTS)
    assert sorted(up.transferred) == [e.path for e in build_manifest(model).files]
    gets = record_calls(s3, "GetObject")
    dest = tmp_path / "dest"
    down = download(s3, loc, dest, SMALL_PARTS)
    assert_same_tree(model, dest)
    assert read_manifest(dest) == build_manifest(model)
    assert down.bytes_transferred == build_manifest(model).total_bytes
    shard_gets = [c for c in gets if c["Key"].endswith("model-00001.safetensors")]
    assert len(shard_gets) == 5  # 300 KiB in 64 KiB ranged parts
    assert no_partials(dest)


def test_multipart_upload_of_a_large_file_round_trips(s3: Any, tmp_path: Path) -> None:
    src = tmp_path / "big"
    src.mkdir()
    (src / "shard.bin").write_bytes(os.urandom(11 * 1024 * KiB))  # > S3's 5 MiB minimum part
    (src / "empty.txt").write_bytes(b"")
    settings = TransferSettings(
        multipart_threshold=5 * 1024 * KiB, multipart_chunksize=5 * 1024 * KiB
    )
    parts = record_calls(s3, "UploadPart")
    upload(s3, src, S3Location(BUCKET, "big"), settings)
    assert len(parts) == 3
    download(s3, S3Location(BUCKET, "big"), tmp_path / "out", settings)
    assert_same_tree(src, tmp_path / "out")


def test_upload_unpublishes_first_and_writes_the_manifest_last(s3: Any, model: Path) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)  # an older publication exists
    (model / "config.json").write_text('{"model_type": "qwen3", "v": 2}')
    events: list[str] = []
    for op in ("PutObject", "DeleteObject", "CreateMultipartUpload"):
        s3.meta.events.register(
            f"before-parameter-build.s3.{op}",
            lambda params, _op=op, **_: events.append(f"{_op} {params['Key']}"),
        )
    upload(s3, model, loc)
    assert events[0] == f"DeleteObject m/{MANIFEST_NAME}"
    assert events[-1] == f"PutObject m/{MANIFEST_NAME}"
    assert events[1:-1] == ["PutObject m/config.json"]  # unchanged files are skipped on resume


def test_a_reader_sees_nothing_published_while_an_upload_is_incomplete(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    s3.meta.events.register(
        "before-parameter-build.s3.PutObject",
        lambda params, **_: (
            (_ for _ in ()).throw(OSError("disk on fire"))
            if params["Key"].endswith("config.json")
            else None
        ),
    )
    (model / "config.json").write_text("{}")
    with pytest.raises(StagingError, match="nothing published"):
        upload(s3, model, loc, TransferSettings(max_attempts=2))
    assert fetch_manifest(s3, loc) is None
    with pytest.raises(StagingError, match="nothing published at s3://models/m"):
        download(s3, loc, tmp_path / "reader")
    assert not (tmp_path / "reader" / "config.json").exists()


def test_download_resumes_by_fetching_only_missing_or_damaged_files(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "models/qwen")
    upload(s3, model, loc)
    dest = tmp_path / "dest"
    download(s3, loc, dest, SMALL_PARTS)
    (dest / "config.json").unlink()
    shard = dest / "model-00002.safetensors"
    shard.write_bytes(b"\0" + shard.read_bytes()[1:])  # same size, wrong bytes
    (dest / f".model-00001.safetensors.x{PARTIAL_SUFFIX}").write_bytes(b"left by a killed pod")
    (dest / f".config.json.y{PARTIAL_SUFFIX}.3fA9c1D2").write_bytes(b"boto3's own temp name")
    gets = record_calls(s3, "GetObject")
    result = download(s3, loc, dest, SMALL_PARTS)
    assert sorted(result.transferred) == ["config.json", "model-00002.safetensors"]
    assert sorted(result.skipped) == ["model-00001.safetensors", "tokenizer/tokenizer.json"]
    fetched = {c["Key"].rsplit("/", 1)[-1] for c in gets}
    assert fetched == {MANIFEST_NAME, "config.json", "model-00002.safetensors"}
    assert_same_tree(model, dest)
    assert no_partials(dest)


def test_interrupted_download_is_retried_and_the_result_verifies(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    break_downloads(s3, "model-00002.safetensors", after=10 * KiB, times=1)
    gets = record_calls(s3, "GetObject")
    dest = tmp_path / "dest"
    settings = TransferSettings(workers=1, max_attempts=3)
    download(s3, loc, dest, settings)
    assert_same_tree(model, dest)
    assert sum(c["Key"].endswith("model-00002.safetensors") for c in gets) == 2
    assert no_partials(dest)


def test_download_that_keeps_breaking_fails_loudly_and_leaves_no_file(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    break_downloads(s3, "model-00002.safetensors", after=10 * KiB, times=10**6)
    dest = tmp_path / "dest"
    with pytest.raises(StagingError) as err:
        download(s3, loc, dest, TransferSettings(max_attempts=2))
    message = str(err.value)
    assert "s3://models/m/model-00002.safetensors" in message
    assert "peer went away" in message
    assert not (dest / "model-00002.safetensors").exists()
    assert not (dest / MANIFEST_NAME).exists()  # the directory is not marked complete
    assert no_partials(dest)
    assert (dest / "config.json").exists()  # the good files are kept for the next resume


def test_object_changed_after_publication_is_retried_then_refused(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    size = (model / "model-00001.safetensors").stat().st_size
    s3.put_object(Bucket=BUCKET, Key="m/model-00001.safetensors", Body=os.urandom(size))
    gets = record_calls(s3, "GetObject")
    dest = tmp_path / "dest"
    with pytest.raises(StagingError, match=r"model-00001\.safetensors: got sha256 [0-9a-f]{64}"):
        download(s3, loc, dest, TransferSettings(max_attempts=3))
    assert sum(c["Key"].endswith("model-00001.safetensors") for c in gets) == 3
    assert not (dest / "model-00001.safetensors").exists()
    assert not (dest / MANIFEST_NAME).exists()
    assert no_partials(dest)


def test_a_stale_local_file_is_removed_when_its_replacement_fails(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    s3.put_object(Bucket=BUCKET, Key="m/config.json", Body=b"tampered")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "config.json").write_text("an older model's config")
    with pytest.raises(StagingError, match=r"config\.json"):
        download(s3, loc, dest, TransferSettings(max_attempts=1))
    assert not (dest / "config.json").exists()


def test_missing_object_listed_in_the_manifest_is_not_retried(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    s3.delete_object(Bucket=BUCKET, Key="m/config.json")
    gets = record_calls(s3, "HeadObject")
    with pytest.raises(StagingError, match=r"config\.json"):
        download(s3, loc, tmp_path / "d", TransferSettings(max_attempts=3))
    assert sum(c["Key"] == "m/config.json" for c in gets) == 1


def test_compiled_artifacts_miss_then_publish_then_hit(s3: Any, tmp_path: Path) -> None:
    cache = S3Location(BUCKET, "neuron-cache")
    key = "qwen3-32b_qwen3-1.7b-draft-model-k7-tp64-lnc2-sdk2.26.1-0123456789abcdef"
    assert pull_compiled(s3, cache, key, tmp_path / "miss") is None
    compiled = tmp_path / "compiled"
    (compiled / "graph").mkdir(parents=True)
    (compiled / "graph" / "model.neff").write_bytes(os.urandom(4 * KiB))
    published = push_compiled(s3, compiled, cache, key)
    assert published is not None and published.transferred == ["graph/model.neff"]
    assert fetch_manifest(s3, cache.child(key)) is not None
    assert push_compiled(s3, compiled, cache, key) is None  # first publisher wins
    hit = pull_compiled(s3, cache, key, tmp_path / "hit")
    assert hit is not None
    assert_same_tree(compiled, tmp_path / "hit")


def test_progress_receives_every_byte_once_even_across_a_retry(
    s3: Any, model: Path, tmp_path: Path
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    break_downloads(s3, "model-00001.safetensors", after=50 * KiB, times=1)

    class Tally:
        total = 0
        started = 0

        def start(self, description: str, total_bytes: int) -> None:
            self.started = total_bytes

        def advance(self, nbytes: int) -> None:
            self.total += nbytes

    tally = Tally()
    download(s3, loc, tmp_path / "d", TransferSettings(workers=1), tally)
    assert tally.started == build_manifest(model).total_bytes
    assert tally.total == tally.started


def test_rich_progress_bar_runs_over_a_real_transfer(
    s3: Any, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loc = S3Location(BUCKET, "m")
    upload(s3, model, loc)
    with rich_progress(True) as bar:
        download(s3, loc, tmp_path / "d", SMALL_PARTS, bar)
    assert "download s3://models/m" in capsys.readouterr().err
    assert_same_tree(model, tmp_path / "d")


def deny(client: Any, operation: str, key_suffix: str) -> None:
    """Make `operation` on keys ending in key_suffix fail with AccessDenied, as IAM would."""

    def hook(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key", "").endswith(key_suffix):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "denied"}}, operation)

    client.meta.events.register(f"before-parameter-build.s3.{operation}", hook)


def test_a_403_on_a_missing_manifest_reads_as_not_published(s3: Any) -> None:
    # Without bucket-wide s3:ListBucket, S3 answers 403 instead of 404 for a missing key.
    deny(s3, "GetObject", MANIFEST_NAME)
    assert fetch_manifest(s3, S3Location(BUCKET, "nothing-here")) is None


def test_a_403_on_an_existing_manifest_is_a_clear_error(s3: Any, model: Path) -> None:
    upload(s3, model, S3Location(BUCKET, "m"))
    deny(s3, "GetObject", MANIFEST_NAME)
    with pytest.raises(StagingError, match=r"cannot read s3://models/m/.*AccessDenied"):
        fetch_manifest(s3, S3Location(BUCKET, "m"))


def test_publishing_to_a_fresh_prefix_needs_no_delete_permission(s3: Any, model: Path) -> None:
    deny(s3, "DeleteObject", "")
    result = upload(s3, model, S3Location(BUCKET, "fresh"))
    assert len(result.transferred) == 4
    assert fetch_manifest(s3, S3Location(BUCKET, "fresh")) is not None


def test_a_file_changed_during_upload_is_never_published(s3: Any, model: Path) -> None:
    shard = model / "model-00002.safetensors"

    def rewrite(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith("model-00002.safetensors"):
            shard.write_bytes(os.urandom(shard.stat().st_size))  # e.g. a writer still at work

    s3.meta.events.register("before-parameter-build.s3.PutObject", rewrite)
    with pytest.raises(StagingError, match=r"changed while it was uploaded.*model-00002"):
        upload(s3, model, S3Location(BUCKET, "m"))
    assert fetch_manifest(s3, S3Location(BUCKET, "m")) is None
