"""trnspec.boundary.write: regular targets only, no output over another, atomic, and a named
fallback when a target fails."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.write import (
    OutputError,
    moved_lines,
    output_clash,
    write_file,
    write_outputs,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_a_device_is_never_replaced(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="it is a device"):
        write_file(Path("/dev/null"), "x")
    assert Path("/dev/null").is_char_device()


def test_a_fifo_or_directory_target_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OutputError, match="a FIFO"):
        write_file(tmp_path / "fifo", "x")
    with pytest.raises(OutputError, match="a directory"):
        write_file(tmp_path, "x")


def test_a_write_leaves_no_temporary_file_and_replaces_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    write_file(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


@SETTINGS
@given(
    st.lists(st.sampled_from(["a.json", "a.md", "b.json", "./a.json", "sub/../a.md"]), max_size=5)
)
def test_no_output_ever_overwrites_another(names):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = [(root / name, f"content {i}") for i, name in enumerate(names)]
        clash = output_clash([(f"output {i}", p) for i, (p, _) in enumerate(files)])
        resolved = [os.path.normpath(p) for p, _ in files]
        assert (clash is None) == (len(set(resolved)) == len(resolved))
        written = write_outputs("prop", files)
        for (target, data), w in zip(files, written, strict=True):
            assert w.target == target and w.path is not None
            assert w.path.read_text() == data  # each output's bytes are somewhere, intact
        assert len({os.path.normpath(w.path) for w in written}) == len(written)


def test_a_failed_target_is_kept_in_a_named_fallback_and_said_so(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    (tmp_path / "file").write_text("x")
    written = write_outputs("tune", [(tmp_path / "file" / "r.json", "{}\n")])
    [line] = moved_lines(written)
    assert written[0].path is not None and written[0].path.read_text() == "{}\n"
    assert str(written[0].path) in line and "trnspec-tune-" in line
