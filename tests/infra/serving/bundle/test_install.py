"""The init container's script, in-process: each failure is one line with the fix and exit 1;
the range check reads the image's installed versions; nothing escapes the target directory."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws
from trnspec.boundary import aws_names

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


#: Names at each edge of S3's bucket rule (aws_names.bucket_problem's sources), both sides.
BUCKET_NAMES = (
    "my-models",
    "my.models.2",
    "a1b",
    "ab",
    "a" * 63,
    "a" * 64,
    "My-models",
    "my_models",
    "-models",
    "models-",
    "my..models",
    "my.-models",
    "my-.models",
    "192.168.1.1",
    "192.168.1.1a",
    "xn--models",
    "sthree-models",
    "amzn-s3-demo-models",
    "models-s3alias",
    "models--ol-s3",
    "models.mrap",
    "models--x-s3",
    "models--table-s3",
    "models\u0661",
    "..",
    "",
)


@pytest.mark.parametrize("name", BUCKET_NAMES)
def test_the_scripts_bucket_rule_is_the_shared_one(name: str) -> None:
    """The script runs before trnspec is importable, so it carries its own copy of the bucket
    rule: the copy takes exactly what trnspec.boundary.aws_names takes."""
    assert install.is_bucket_name(name) is (aws_names.bucket_problem(name) is None)


@settings(max_examples=400, deadline=None)
@given(
    st.tuples(
        st.sampled_from(("", *aws_names.BUCKET_PREFIXES)),
        st.text(alphabet="ab09.-_A\u0661", max_size=66),
        st.sampled_from(("", *aws_names.BUCKET_SUFFIXES)),
    ).map("".join)
)
def test_the_scripts_bucket_rule_agrees_on_any_name(name: str) -> None:
    assert install.is_bucket_name(name) is (aws_names.bucket_problem(name) is None)


@pytest.mark.parametrize("uri", ["s3://../b.zip", "s3://Assets/b.zip", "s3://assets/", "assets/b"])
def test_a_uri_s3_would_refuse_is_one_line_before_any_download(
    fake_aws_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], uri: str
) -> None:
    dest = tmp_path / "dest"
    with mock_aws():  # a URI let through is asked of (an empty) S3, and says so
        code = install.main(["--uri", uri, "--sha256", "0" * 64, "--dest", str(dest)], delays=())
    assert code == 1 and not dest.exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"trnspec bundle: --uri {uri!r}: ") and "fix: render" in line


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


def _serve_and_install(data: bytes, dest: Path) -> int:
    """main() on an object holding `data`, with the sha256 it has (the hash check passes)."""
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="assets", CreateBucketConfiguration={"LocationConstraint": REGION})
        s3.put_object(Bucket="assets", Key="b.zip", Body=data)
        sha = hashlib.sha256(data).hexdigest()
        return install.main(["--uri", "s3://assets/b.zip", "--sha256", sha, "--dest", str(dest)])


def _earlier_run(dest: Path) -> None:
    """What an earlier run of the init container left: a file and a killed run's staging."""
    (dest / "trnspec").mkdir(parents=True)
    (dest / "trnspec" / "old.py").write_text("old")
    (dest / f"{install.STAGING_PREFIX}killed").mkdir()


def _tree(dest: Path) -> set[str]:
    return {p.relative_to(dest).as_posix() for p in dest.rglob("*")}


BUNDLE = {"trnspec/__init__.py": "", "trnspec_tools/__init__.py": "", "trnspec/a.py": "a = 1"}


def test_a_good_object_replaces_what_an_earlier_run_left(
    fake_aws_env: None, tmp_path: Path
) -> None:
    dest = tmp_path / "d"
    _earlier_run(dest)
    assert _serve_and_install(_zip(BUNDLE), dest) == 0
    assert _tree(dest) == {"trnspec", "trnspec_tools", *BUNDLE}
    assert (dest / "trnspec" / "a.py").read_text() == "a = 1"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(install.PREFIX) and "fix:" in line
    return line


@pytest.mark.parametrize(
    "data",
    [b"<Error>AccessDenied</Error>", _zip(BUNDLE)[:-30], _zip(BUNDLE)[:100]],
    ids=["not-a-zip", "truncated-tail", "truncated-head"],
)
def test_an_object_that_is_not_a_whole_zip_is_one_line_and_dest_is_left_as_it_was(
    fake_aws_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    dest = tmp_path / "d"
    _earlier_run(dest)
    before = _tree(dest)
    assert _serve_and_install(data, dest) == 1
    assert f"({len(data)} bytes) is not a readable zip" in _one_line(capsys)
    assert _tree(dest) == before


def _damaged_second_entry() -> bytes:
    """A stored zip whose directory is whole but whose second entry's bytes are altered (its
    CRC no longer matches): the first entry unpacks before the damage is found."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        z.writestr("trnspec/__init__.py", "first")
        z.writestr("trnspec/second.py", "SECOND-ENTRY-BYTES")
    data = buffer.getvalue()
    return data.replace(b"SECOND-ENTRY-BYTES", b"SECOND-ENTRY-BYTEZ")


def test_an_entry_damaged_midway_leaves_no_half_unpacked_dest(
    fake_aws_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "d"
    _earlier_run(dest)
    before = _tree(dest)
    assert _serve_and_install(_damaged_second_entry(), dest) == 1
    assert "is not a readable zip: Bad CRC-32" in _one_line(capsys)
    assert _tree(dest) == before  # neither trnspec/__init__.py nor a staging directory


def test_a_full_volume_midway_is_one_line_and_dest_is_left_as_it_was(
    fake_aws_env: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = zipfile.ZipFile.extract
    written: list[str] = []

    def fills_up(self: zipfile.ZipFile, member: zipfile.ZipInfo, path: str) -> str:
        if written:  # the volume is full after the first entry
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(member.filename)
        return real(self, member, path)

    monkeypatch.setattr(zipfile.ZipFile, "extract", fills_up)
    dest = tmp_path / "d"
    _earlier_run(dest)
    before = _tree(dest)
    assert _serve_and_install(_zip(BUNDLE), dest) == 1
    line = _one_line(capsys)
    assert f"--dest {dest}: cannot unpack s3://assets/b.zip there (No space left" in line
    assert written and _tree(dest) == before


def _link_to_dir(tmp_path: Path) -> Path:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    return tmp_path / "link"


def _file(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("mine")
    return tmp_path / "file"


def _under_a_file(tmp_path: Path) -> Path:
    return _file(tmp_path) / "d"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_file, "is not a directory"),
        (_link_to_dir, "is a symbolic link"),
        (_under_a_file, "cannot write there (Not a directory)"),
    ],
    ids=["a-file", "a-link", "under-a-file"],
)
def test_a_dest_that_is_not_a_directory_is_refused_before_the_download(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[Path], Path],
    problem: str,
) -> None:
    def no_download(*_: object) -> bytes:
        raise AssertionError("downloaded before --dest was checked")

    monkeypatch.setattr(install, "download", no_download)
    dest = make(tmp_path)
    before = _tree(tmp_path)
    code = install.main(["--uri", "s3://assets/b.zip", "--sha256", "0" * 64, "--dest", str(dest)])
    assert code == 1
    assert f"--dest {dest}: {problem}" in _one_line(capsys)
    assert _tree(tmp_path) == before
