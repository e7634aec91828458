"""`python -m trnspec stage ...` against moto: exit codes and messages a user sees."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from trnspec.cli.main import main
from trnspec.staging import transfer as staging
from trnspec.staging.manifest import MANIFEST_NAME


@pytest.fixture
def s3(s3_bkt: Any) -> Any:
    return s3_bkt


def test_upload_download_verify_round_trip(s3: Any, tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "model"
    src.mkdir()
    (src / "config.json").write_text("{}")
    assert main(["stage", "upload", str(src), "s3://bkt/m", "--no-progress"]) == 0
    assert main(["stage", "download", "s3://bkt/m", str(tmp_path / "out"), "--no-progress"]) == 0
    assert (tmp_path / "out" / MANIFEST_NAME).exists()
    assert main(["stage", "verify", str(tmp_path / "out")]) == 0
    (tmp_path / "out" / "config.json").write_text("[]")
    capsys.readouterr()
    assert main(["stage", "verify", str(tmp_path / "out")]) == 1
    assert "config.json: sha256 is" in capsys.readouterr().err


def test_download_of_an_unpublished_prefix_fails_with_the_fix(
    s3: Any, tmp_path: Path, capsys: Any
) -> None:
    assert main(["stage", "download", "s3://bkt/none", str(tmp_path), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "nothing published at s3://bkt/none" in err and "stage upload" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["stage", "download", "/not/s3", "/tmp/x"], "SOURCE=/not/s3"),
        (["stage", "download", "s3://", "/tmp/x"], "SOURCE=s3://: no bucket"),
        (["stage", "download", "s3://bkt", "/tmp/x"], "SOURCE=s3://bkt: no key prefix"),
        (["stage", "download", "s3://bkt/../etc", "/tmp/x"], "'..' segment"),
        (["stage", "upload", "/does/not/exist", "s3://bkt/m"], "SRC=/does/not/exist"),
        (["stage", "cache-key", "--profile", "nope"], "--profile=nope"),
    ],
)
def test_bad_input_exits_2_naming_the_argument(
    s3: Any, argv: list[str], says: str, capsys: Any
) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_non_positive_transfer_numbers_are_usage_errors() -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stage", "download", "s3://bkt/m", "/tmp/x", "--workers", "0"])
    assert exit_.value.code == 2


def test_cache_key_prints_the_key_of_a_profile(capsys: Any) -> None:
    assert main(["stage", "cache-key", "--profile", "qwen3-32b-draft"]) == 0
    assert capsys.readouterr().out.startswith("qwen3-32b_qwen3-1.7b-draft-model-k7-tp64-lnc2-")


def _publish(tmp_path: Path, name: str, files: dict[str, str]) -> None:
    src = tmp_path / name
    src.mkdir()
    for rel, text in files.items():
        (src / rel).write_text(text)
    assert main(["stage", "upload", str(src), "s3://bkt/m", "--no-progress"]) == 0


def test_a_stale_file_of_an_earlier_version_is_reported_and_never_called_exact(
    s3: Any, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "out"
    _publish(tmp_path, "v1", {"a.bin": "1", "old.bin": "only in v1"})
    assert main(["stage", "download", "s3://bkt/m", str(out), "--no-progress"]) == 0
    _publish(tmp_path, "v2", {"a.bin": "2"})
    capsys.readouterr()
    assert main(["stage", "download", "s3://bkt/m", str(out), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "NOT EXACT" in captured.out and "old.bin" in captured.out
    assert main(["stage", "verify", str(out)]) == 1
    assert "old.bin: not in the manifest" in capsys.readouterr().err


def test_download_with_prune_leaves_exactly_the_manifests_files(s3: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _publish(tmp_path, "v1", {"a.bin": "1", "old.bin": "only in v1"})
    assert main(["stage", "download", "s3://bkt/m", str(out), "--no-progress"]) == 0
    (out / "sub").mkdir()
    (out / "sub" / "leftover").write_text("x")
    _publish(tmp_path, "v2", {"a.bin": "2"})
    assert main(["stage", "download", "s3://bkt/m", str(out), "--no-progress", "--prune"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(["a.bin", MANIFEST_NAME])
    assert main(["stage", "verify", str(out)]) == 0


def test_dest_that_is_a_file_is_bad_input(s3: Any, tmp_path: Path, capsys: Any) -> None:
    dest = tmp_path / "file"
    dest.write_text("x")
    assert main(["stage", "download", "s3://bkt/m", str(dest), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("DEST=") and "not a directory" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_dest_is_bad_input(s3: Any, tmp_path: Path, capsys: Any) -> None:
    dest = tmp_path / "ro"
    dest.mkdir()
    dest.chmod(0o500)
    try:
        assert main(["stage", "download", "s3://bkt/m", str(dest), "--no-progress"]) == 2
    finally:
        dest.chmod(0o700)
    assert "cannot write to" in capsys.readouterr().err


def test_unwritable_dest_is_bad_input_even_for_root(s3: Any, capsys: Any) -> None:
    assert main(["stage", "download", "s3://bkt/m", "/proc/sys", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("DEST=/proc/sys") and "cannot write to" in err


def test_disk_full_while_writing_the_manifest_is_one_line_and_exit_1(
    s3: Any, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _publish(tmp_path, "v1", {"a.bin": "1"})

    def full(root: Path, manifest: Any) -> Path:
        (Path(root) / (MANIFEST_NAME + staging.PARTIAL_SUFFIX)).write_text("{")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(staging, "write_manifest", full)
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["stage", "download", "s3://bkt/m", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "run again" in err
    assert len(err.strip().splitlines()) == 1
    assert not (out / MANIFEST_NAME).exists()
    assert not list(out.glob(f"*{staging.PARTIAL_SUFFIX}*"))


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)


@pytest.mark.parametrize("action", ["download", "upload"])
def test_no_credentials_exits_3_with_the_fix(
    no_credentials: None, tmp_path: Path, capsys: Any, action: str
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_text("a")
    argv = (
        ["stage", "download", "s3://bkt/m", str(tmp_path / "out")]
        if action == "download"
        else ["stage", "upload", str(src), "s3://bkt/m"]
    )
    assert main([*argv, "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "NoCredentialsError" in err and "credentials" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_unreachable_endpoint_exits_3_after_a_bounded_wait(
    fake_aws_env: None, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(staging, "S3_TOTAL_ATTEMPTS", 1)
    monkeypatch.setattr(staging, "S3_CONNECT_TIMEOUT_S", 2.0)
    assert main(["stage", "download", "s3://bkt/m", str(tmp_path / "o"), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "EndpointConnectionError" in err and "AWS_ENDPOINT_URL" in err


def test_s3_client_sets_explicit_timeouts_and_retry_limits(fake_aws_env: None) -> None:
    config = staging.s3_client().meta.config
    assert (config.connect_timeout, config.read_timeout) == (
        staging.S3_CONNECT_TIMEOUT_S,
        staging.S3_READ_TIMEOUT_S,
    )
    assert config.retries == {"total_max_attempts": staging.S3_TOTAL_ATTEMPTS, "mode": "standard"}
