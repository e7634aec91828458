"""`stage hub`: a Hub snapshot published to S3 as a verified model, with a fake Hub download
(offline); the published copy holds the model's files only, never huggingface_hub's metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.cli.main import main
from trnspec.staging import hub
from trnspec.staging.hub import hub_to_s3, token_from_secret
from trnspec.staging.transfer import S3Location, StagingError, download, fetch_manifest


@pytest.fixture
def s3(s3_bkt: Any) -> Any:
    return s3_bkt


class FakeHub:
    """Writes a small model (and the Hub client's resume metadata) like snapshot_download."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, str | None]] = []

    def __call__(self, repo: str, revision: str | None, dest: Path, token: str | None) -> None:
        self.calls.append((repo, revision, token))
        (dest / "config.json").write_text('{"model_type": "qwen3"}')
        (dest / "model.safetensors").write_bytes(b"\0" * 2048)
        meta = dest / ".cache" / "huggingface" / "download"
        meta.mkdir(parents=True, exist_ok=True)
        (meta / "model.safetensors.metadata").write_text("etag")


def test_a_hub_snapshot_is_published_with_its_files_only(s3: Any, tmp_path: Path) -> None:
    fake = FakeHub()
    target = S3Location("bkt", "models/Qwen/Qwen3-4B")
    result = hub_to_s3(s3, "Qwen/Qwen3-4B", "abc123", target, tmp_path / "work", download=fake)
    assert fake.calls == [("Qwen/Qwen3-4B", "abc123", None)]
    manifest = fetch_manifest(s3, target)
    assert manifest is not None
    assert sorted(e.path for e in manifest.files) == ["config.json", "model.safetensors"]
    assert sorted(result.transferred) == ["config.json", "model.safetensors"]
    copy = download(s3, target, tmp_path / "copy")  # what a pod stages: verified
    assert (tmp_path / "copy" / "model.safetensors").read_bytes() == b"\0" * 2048
    assert not copy.stale


def test_a_failed_hub_download_publishes_nothing(s3: Any, tmp_path: Path) -> None:
    def gated(repo: str, revision: str | None, dest: Path, token: str | None) -> None:
        raise StagingError(f"{repo} is gated")

    target = S3Location("bkt", "models/meta-llama/Llama-3.1-8B")
    with pytest.raises(StagingError, match="is gated"):
        hub_to_s3(s3, "meta-llama/Llama-3.1-8B", None, target, tmp_path, download=gated)
    assert fetch_manifest(s3, target) is None


def test_stage_hub_takes_repo_at_revision_and_prints_the_summary(
    s3: Any, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    fake = FakeHub()
    monkeypatch.setattr(hub, "snapshot_download", fake)
    argv = ["stage", "hub", "z-lab/Qwen3-4B-DFlash-b16@main", "s3://bkt/models/d/"]
    assert main([*argv, "--work-dir", str(tmp_path / "w"), "--no-progress"]) == 0
    assert fake.calls == [("z-lab/Qwen3-4B-DFlash-b16", "main", None)]
    assert fetch_manifest(s3, S3Location("bkt", "models/d")) is not None
    assert "Traceback" not in capsys.readouterr().err


def test_stage_hub_refuses_a_repo_that_is_not_owner_slash_name(tmp_path: Path, capsys: Any) -> None:
    assert main(["stage", "hub", "Qwen3-4B", "s3://bkt/m", "--work-dir", str(tmp_path)]) == 2
    assert "REPO=Qwen3-4B: a Hub repository id: owner/name[@revision]" in capsys.readouterr().err


def test_the_token_is_read_from_the_secret_at_run_time(
    s3: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """What the weights Job does for a gated model: the secret's ARN is in its environment,
    the token itself only in the secret."""
    sm = boto3.client("secretsmanager", region_name="us-east-2")
    arn = sm.create_secret(Name="hf", SecretString="hf_abc")["ARN"]
    monkeypatch.setenv("TRNSPEC_HF_TOKEN_SECRET_ARN", arn)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    fake = FakeHub()
    monkeypatch.setattr(hub, "snapshot_download", fake)
    argv = ["stage", "hub", "meta-llama/Llama-3.1-8B", "s3://bkt/models/l/"]
    assert main([*argv, "--work-dir", str(tmp_path / "w"), "--no-progress"]) == 0
    assert fake.calls == [("meta-llama/Llama-3.1-8B", None, "hf_abc")]


@pytest.mark.parametrize("value", [None, "  \n"], ids=["created-empty", "blank"])
def test_a_token_secret_without_a_token_means_no_token(s3: Any, value: str | None) -> None:
    """The stack creates the secret empty (no version): public models need nothing more."""
    sm = boto3.client("secretsmanager", region_name="us-east-2")
    extra = {} if value is None else {"SecretString": value}
    arn = sm.create_secret(Name="hf-empty", **extra)["ARN"]
    assert token_from_secret(sm, arn) is None


@pytest.mark.parametrize(
    "repo",
    [
        "../../etc",
        "/abs",
        "owner/",
        "owner/..",
        "own er/name",
        "owner/na\x1bme",
        "owner/" + "n" * 10_000,
        "owner/name.git",
        "owner/a--b",
        "owner/name@",
        "owner/name@ma in",
    ],
)
def test_a_hub_id_is_checked_by_the_hubs_rules_before_any_call(
    repo: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    fake = FakeHub()
    monkeypatch.setattr(hub, "snapshot_download", fake)
    monkeypatch.setattr("trnspec.cli.stage._s3_client", lambda: pytest.fail("S3 was called"))
    assert main(["stage", "hub", repo, "s3://bkt/m", "--work-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("REPO=") and err.count("\n") == 1 and len(err) < 400
    assert "\x1b" not in err and "Traceback" not in err
    assert fake.calls == [] and not (tmp_path / "w").exists()


ID_CHARS = "aZ09-_./ @\x1b"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ID_CHARS, min_size=1, max_size=12))
def test_an_id_accepted_here_is_one_the_hub_client_accepts(repo: str) -> None:
    """The rule agrees with huggingface_hub's own validate_repo_id on owner/name ids."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    ours = hub.repo_id_problem(repo) is None
    try:
        validate_repo_id(repo)
        theirs = "/" in repo
    except HFValidationError:
        theirs = False
    assert ours == theirs, repo


def test_a_file_whose_name_a_manifest_cannot_hold_is_refused_before_upload(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    src = tmp_path / "m"
    src.mkdir()
    (src / "config.json").write_text("{}")
    (src / "a\\b.bin").write_bytes(b"x")
    monkeypatch.setattr("trnspec.cli.stage._s3_client", lambda: pytest.fail("S3 was called"))
    assert main(["stage", "upload", str(src), "s3://bkt/m", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("SRC=a\\b.bin: unsafe path") and "rename the file" in err
    assert "Traceback" not in err and err.count("\n") == 1
