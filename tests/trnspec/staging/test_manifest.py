"""The manifest is what makes a staged model trustworthy: these tests pin what it detects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trnspec.staging.manifest import (
    MANIFEST_NAME,
    PARTIAL_SUFFIX,
    FileEntry,
    Manifest,
    ManifestError,
    build_manifest,
    read_manifest,
    sha256_file,
    verify,
    write_manifest,
)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    root = tmp_path / "model"
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_text('{"a": 1}')
    (root / "sub" / "weights.bin").write_bytes(bytes(range(256)) * 10)
    (root / "empty.txt").write_bytes(b"")
    return root


def test_manifest_lists_every_file_with_size_and_sha256(model_dir: Path) -> None:
    m = build_manifest(model_dir)
    assert [e.path for e in m.files] == ["config.json", "empty.txt", "sub/weights.bin"]
    weights = m.entry("sub/weights.bin")
    assert weights is not None and weights.size == 2560
    assert weights.sha256 == sha256_file(model_dir / "sub" / "weights.bin")
    assert m.total_bytes == 2560 + len('{"a": 1}')


def test_manifest_excludes_itself_and_partial_downloads(model_dir: Path) -> None:
    write_manifest(model_dir, build_manifest(model_dir))
    (model_dir / f".x.bin.123{PARTIAL_SUFFIX}").write_bytes(b"half")
    (model_dir / f".y.bin.4{PARTIAL_SUFFIX}.a1B2c3D4").write_bytes(b"boto3 temp")
    assert {e.path for e in build_manifest(model_dir).files} == {
        "config.json",
        "empty.txt",
        "sub/weights.bin",
    }


def test_intact_directory_verifies_clean(model_dir: Path) -> None:
    assert verify(model_dir, build_manifest(model_dir)) == []


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda p: p.unlink(), "missing"),
        (lambda p: p.write_bytes(p.read_bytes()[:-1]), "size"),
        (lambda p: p.write_bytes(b"\xff" + p.read_bytes()[1:]), "sha256"),
    ],
    ids=["deleted", "truncated", "same-size-different-bytes"],
)
def test_verify_names_each_damaged_file_and_why(model_dir: Path, damage, reason: str) -> None:
    manifest = build_manifest(model_dir)
    damage(model_dir / "sub" / "weights.bin")
    problems = verify(model_dir, manifest)
    assert [(p.path, p.reason) for p in problems] == [("sub/weights.bin", reason)]
    assert "sub/weights.bin" in str(problems[0])


def test_manifest_is_order_independent_and_round_trips_through_json(model_dir: Path) -> None:
    m = build_manifest(model_dir)
    shuffled = Manifest(files=tuple(reversed(m.files)))
    assert shuffled == m
    assert Manifest.from_json(m.to_json()) == m
    write_manifest(model_dir, m)
    assert read_manifest(model_dir) == m
    assert not list(model_dir.glob(f"*{PARTIAL_SUFFIX}"))


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../outside",
        "a/../../b",
        "a\\b",
        "",
        "./a",
        MANIFEST_NAME,
        "x.trnspec-partial",
    ],
)
def test_manifest_refuses_paths_that_could_escape_or_clash(path: str) -> None:
    doc = {"version": 1, "files": [{"path": path, "size": 1, "sha256": "0" * 64}]}
    with pytest.raises(ManifestError, match="files"):
        Manifest.from_json(json.dumps(doc))


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"files": [{"path": "a", "size": -1, "sha256": "' + "0" * 64 + '"}]}',
        '{"files": [{"path": "a", "size": 1, "sha256": "XYZ"}]}',
        '{"files": [], "extra": 1}',
    ],
)
def test_malformed_manifest_is_a_clear_error_not_a_traceback(text: str) -> None:
    with pytest.raises(ManifestError, match="invalid manifest"):
        Manifest.from_json(text)


def test_duplicate_paths_are_refused() -> None:
    e = FileEntry(path="a", size=1, sha256="0" * 64)
    with pytest.raises(ValueError, match="duplicate paths: a"):
        Manifest(files=(e, e))


def test_missing_manifest_and_non_directory_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=f"no {MANIFEST_NAME}"):
        read_manifest(tmp_path)
    with pytest.raises(ManifestError, match="not a directory"):
        build_manifest(tmp_path / "nope")


_ENTRY = {"path": "a", "size": 1, "sha256": "0" * 64}


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"files": []}, "files"),
        ({}, "files"),
        ({"version": 99, "files": [_ENTRY]}, "version 99 is not the format"),
        ({"version": "1", "files": [_ENTRY]}, "version '1' is not the format"),
        ({"version": True, "files": [_ENTRY]}, "version True is not the format"),
    ],
)
def test_empty_and_unknown_version_manifests_are_refused(doc: dict, says: str) -> None:
    with pytest.raises(ManifestError, match="invalid manifest") as err:
        Manifest.from_json(json.dumps(doc))
    assert says in str(err.value)


def test_an_empty_directory_has_no_manifest(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="has no files"):
        build_manifest(tmp_path)


def test_verify_reports_files_the_manifest_does_not_list(model_dir: Path) -> None:
    manifest = build_manifest(model_dir)
    (model_dir / "stale-shard.safetensors").write_bytes(b"old")
    (model_dir / f"x{PARTIAL_SUFFIX}").write_bytes(b"in flight")  # partials are not files
    problems = verify(model_dir, manifest)
    assert [(p.path, p.reason) for p in problems] == [("stale-shard.safetensors", "extra")]
    assert "not in the manifest" in str(problems[0])


def test_a_fifo_in_the_staged_directory_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os

    (tmp_path / "model.safetensors").write_bytes(b"weights")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ManifestError, match="pipe: not a regular file"):
        build_manifest(tmp_path)
