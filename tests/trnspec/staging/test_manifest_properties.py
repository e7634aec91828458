"""Properties of manifest verification on any small directory tree: a fresh manifest lists
exactly its files (sorted, with size and sha256) and verifies clean after a round trip through
its file; any one damage (a flipped byte, a truncation, a deletion, an unlisted file) is reported
for that file alone, with the reason and the figures."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.staging.manifest import (
    MANIFEST_NAME,
    PARTIAL_SUFFIX,
    Manifest,
    ManifestError,
    build_manifest,
    read_manifest,
    sha256_file,
    verify,
    write_manifest,
)

SETTINGS = settings(max_examples=40, deadline=None)
names = st.text("abcxyz019._-", min_size=1, max_size=8).filter(lambda n: n not in (".", ".."))
trees = st.dictionaries(
    st.lists(names, min_size=1, max_size=3).map("/".join),
    st.binary(min_size=1, max_size=64),
    min_size=1,
    max_size=5,
).filter(
    # no file may also be a directory of another
    lambda t: not any(a != b and b.startswith(a + "/") for a in t for b in t)
)


def _write(root: Path, tree: dict[str, bytes]) -> None:
    for rel, data in tree.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


@SETTINGS
@given(trees)
def test_a_fresh_manifest_lists_exactly_the_files_and_verifies_clean(tree):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, tree)
        (root / f"late.bin{PARTIAL_SUFFIX}.a1B2").write_bytes(b"in flight")
        manifest = build_manifest(root)
        assert [e.path for e in manifest.files] == sorted(tree)
        for e in manifest.files:
            assert (e.size, e.sha256) == (
                len(tree[e.path]),
                hashlib.sha256(tree[e.path]).hexdigest(),
            )
            assert manifest.entry(e.path) == e
        assert manifest.entry("not/listed") is None
        assert manifest.total_bytes == sum(len(d) for d in tree.values())
        write_manifest(root, manifest)
        assert read_manifest(root) == manifest
        assert verify(root, manifest) == []
        assert build_manifest(root) == manifest  # the manifest itself is never listed


@SETTINGS
@given(trees, st.data())
def test_any_one_damage_is_reported_for_that_file_alone(tree, data):
    damage = data.draw(st.sampled_from(["flip", "truncate", "delete", "extra"]))
    victim = data.draw(st.sampled_from(sorted(tree)))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, tree)
        manifest = build_manifest(root)
        path, body = root / victim, tree[victim]
        if damage == "flip":
            path.write_bytes(bytes([body[0] ^ 1]) + body[1:])
        elif damage == "truncate":
            path.write_bytes(body[:-1])
        elif damage == "delete":
            path.unlink()
        else:
            victim = victim + ".stale"
            (root / victim).write_bytes(b"old")
        (problem,) = verify(root, manifest)
        entry = manifest.entry(problem.path)
    assert problem.path == victim
    if damage == "flip":
        assert problem.reason == "sha256" and entry is not None
        assert (problem.expected, problem.actual) == (
            entry.sha256,
            hashlib.sha256(bytes([body[0] ^ 1]) + body[1:]).hexdigest(),
        )
        assert str(problem) == f"{victim}: sha256 is {problem.actual}, manifest says {entry.sha256}"
    elif damage == "truncate":
        assert (problem.reason, problem.expected, problem.actual) == (
            "size",
            str(len(body)),
            str(len(body) - 1),
        )
        assert str(problem) == f"{victim}: size is {len(body) - 1}, manifest says {len(body)}"
    elif damage == "delete":
        assert problem.reason == "missing" and str(problem) == f"{victim}: missing"
    else:
        assert problem.reason == "extra" and entry is None
        assert str(problem) == f"{victim}: not in the manifest (a stale file; remove it)"


def test_a_file_larger_than_one_read_hashes_whole(tmp_path: Path):
    body = bytes(range(256)) * (4096 + 1)  # just over 1 MiB: two reads
    (tmp_path / "big").write_bytes(body)
    assert sha256_file(tmp_path / "big") == hashlib.sha256(body).hexdigest()


def test_the_manifest_file_name_is_never_listed(tmp_path: Path):
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / MANIFEST_NAME).write_bytes(b"{}")
    assert [e.path for e in build_manifest(tmp_path).files] == ["a"]


def test_every_defect_of_a_bad_manifest_is_named_by_its_dotted_place_in_one_line() -> None:
    good = '{"version": 1, "files": [{"path": "a", "size": 1, "sha256": "%s"}]}' % ("0" * 64)
    Manifest.from_json(good)
    bad = '{"version": 1, "files": [{"path": "a", "size": -1, "sha256": "XY"}]}'
    with pytest.raises(ManifestError) as err:
        Manifest.from_json(bad)
    message = str(err.value)
    assert message.startswith("invalid manifest: files.0.size: ") and "\n" not in message
    # one defect after another, each at its own place
    places = [
        part.split(": ")[0] for part in message.removeprefix("invalid manifest: ").split("; ")
    ]
    assert places[:2] == ["files.0.size", "files.0.sha256"]


def test_a_fifo_in_a_staged_directory_is_refused_naming_it_and_the_fix(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ManifestError) as err:
        sha256_file(fifo)
    assert str(err.value).startswith(f"{fifo}: not a regular file (mode p")
    assert str(err.value).endswith("; only regular files can be staged, remove it")
