"""`python -m trnspec stage ...` against moto: exit codes and messages a user sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from trnspec.cli import main
from trnspec.manifest import MANIFEST_NAME


@pytest.fixture
def s3(fake_aws_env: None) -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-2")
        client.create_bucket(
            Bucket="bkt", CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
        )
        yield client


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
