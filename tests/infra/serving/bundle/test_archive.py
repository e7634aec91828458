"""The bundle's bytes: what ships (both packages, every profile and data file) and what never
does, and the same source always giving the same bytes."""

from __future__ import annotations

import os
import shutil
import zipfile
from io import BytesIO
from pathlib import Path

import pytest
from trnspec.config.serving import list_profiles

from infra.serving.bundle.archive import FIXED_DATE, PACKAGES, REPO_DIR, build_bundle

JUNK = (
    "image/trnspec/__pycache__/cli.cpython-311.pyc",
    "image/trnspec/cli/__pycache__/main.cpython-311.pyc",
    "trnspec_tools/bench/tests/test_new.py",
    "image/trnspec/stray.pyc",
    "trnspec_tools/.pytest_cache/v/x",
    "image/trnspec.egg-info/PKG-INFO",
)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A copy of the two bundled packages, with fresh timestamps and no build products."""
    root = tmp_path / "repo"
    for directory, _ in PACKAGES:
        shutil.copytree(
            REPO_DIR / directory,
            root / directory,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
        )
    return root


def names(data: bytes) -> list[str]:
    return zipfile.ZipFile(BytesIO(data)).namelist()


def test_the_bundle_holds_both_packages_every_profile_and_data_file() -> None:
    got = set(names(build_bundle().data))
    assert {"trnspec/__main__.py", "trnspec/serve/runner.py", "trnspec_tools/__main__.py"} <= got
    assert "trnspec_tools/calibration/run.py" in got
    for profile in list_profiles():
        assert f"trnspec/profiles/{profile}.yaml" in got
    data = REPO_DIR / "image" / "trnspec" / "data"
    assert {f"trnspec/data/{p.name}" for p in data.iterdir() if p.is_file()} <= got
    assert {n.split("/")[0] for n in got} == {"trnspec", "trnspec_tools"}


def test_the_bundle_is_small() -> None:
    """A few hundred KB: the pods fetch it on every start."""
    assert len(build_bundle().data) < 1_000_000


def test_the_same_source_gives_the_same_bytes_whatever_its_timestamps(source: Path) -> None:
    before = build_bundle(source)
    for path in source.rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    after = build_bundle(source)
    assert after == before
    assert build_bundle(source).sha256 == build_bundle(REPO_DIR).sha256


def test_entries_are_sorted_with_one_fixed_date() -> None:
    archive = zipfile.ZipFile(BytesIO(build_bundle().data))
    listed = archive.namelist()
    assert listed == sorted(listed)
    assert {info.date_time for info in archive.infolist()} == {FIXED_DATE}


def test_build_products_and_tests_never_ship(source: Path) -> None:
    before = build_bundle(source)
    for junk in JUNK:
        (source / junk).parent.mkdir(parents=True, exist_ok=True)
        (source / junk).write_text("junk\n")
    after = build_bundle(source)
    assert after == before
    assert not [n for n in names(after.data) if "__pycache__" in n or "/tests/" in n]


@pytest.mark.parametrize(
    "changed",
    [
        "trnspec_tools/calibration/run.py",
        "image/trnspec/cli/main.py",
        "image/trnspec/profiles/qwen3-4b-baseline.yaml",
    ],
)
def test_a_change_to_a_shipped_file_changes_the_hash(changed: str, source: Path) -> None:
    before = build_bundle(source)
    with (source / changed).open("a") as f:
        f.write("\n# changed\n")
    assert build_bundle(source).sha256 != before.sha256


def test_a_missing_package_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="image/trnspec"):
        build_bundle(tmp_path)
