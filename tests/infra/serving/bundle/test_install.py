"""The init container's script, in-process: each failure is one line with the fix and exit 1;
the range check reads the image's installed versions; nothing escapes the target directory."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from infra.serving.bundle import install

REGION = "us-east-2"


def _zip(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, text in entries.items():
            z.writestr(name, text)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("version", "specifier", "ok"),
    [
        ("2.11.7", ">=2.7,<3", True),
        ("2.7", ">=2.7,<3", True),
        ("2.6.9", ">=2.7,<3", False),
        ("3.0.0", ">=2.7,<3", False),
        ("0.27.0", ">=0.27,<1", True),
        ("1.26.0rc1", ">=1.26,<3", True),
        ("15.0.0", ">=13,<16", True),
        ("16.0", ">=13,<16", False),
    ],
)
def test_the_range_check_compares_release_numbers(version: str, specifier: str, ok: bool) -> None:
    assert install._satisfies(version, specifier) is ok


def test_an_installed_dependency_in_range_passes_and_out_of_range_names_the_fix() -> None:
    assert install.check_requirement("yaml=pyyaml>=6,<7") is None
    problem = install.check_requirement("yaml=pyyaml>=99,<100")
    assert (
        problem is not None and problem.startswith("pyyaml ") and "needs pyyaml>=99,<100" in problem
    )
    assert "fix:" in problem and "\n" not in problem


def test_a_missing_module_is_one_line_naming_the_package() -> None:
    problem = install.check_requirement("no_such_module_x=no-such-dist>=1,<2")
    assert problem is not None
    assert problem.startswith("no-such-dist (no-such-dist>=1,<2) does not import in this image")
    assert "fix:" in problem and "\n" not in problem


def test_an_entry_outside_the_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(install.InstallError, match="escapes"):
        install.extract(_zip({"../evil.py": "x"}), tmp_path / "dest")
    assert not (tmp_path / "evil.py").exists()


def test_a_missing_object_is_retried_then_one_line(
    fake_aws_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waits: list[float] = []
    with mock_aws():
        boto3.client("s3", region_name=REGION).create_bucket(
            Bucket="assets", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        code = install.main(
            ["--uri", "s3://assets/missing.zip", "--sha256", "0" * 64, "--dest", str(tmp_path)],
            sleep=waits.append,
            delays=(1.0, 2.0),
        )
    assert code == 1 and waits == [1.0, 2.0]
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("trnspec bundle: cannot read s3://assets/missing.zip")
    assert "s3:GetObject" in line


def test_a_good_object_is_extracted(fake_aws_env: None, tmp_path: Path) -> None:
    import hashlib

    data = _zip({"trnspec/__init__.py": "", "trnspec_tools/__init__.py": ""})
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="assets", CreateBucketConfiguration={"LocationConstraint": REGION})
        s3.put_object(Bucket="assets", Key="b.zip", Body=data)
        uri, sha = "s3://assets/b.zip", hashlib.sha256(data).hexdigest()
        code = install.main(["--uri", uri, "--sha256", sha, "--dest", str(tmp_path / "d")])
    assert code == 0
    assert (tmp_path / "d" / "trnspec" / "__init__.py").is_file()
