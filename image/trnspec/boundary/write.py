"""The one function that writes a tool's output files.

`write_file` (one file) and `write_outputs` (a report's several files) hold four rules:
- only a regular file (or a new path) is a target: `--out /dev/null`, a FIFO or a directory is
  refused, so a run as root never replaces a device with a regular file;
- no output overwrites another: the targets of one report must be distinct paths (`--out r.md`
  would have its JSON replaced by the Markdown summary), checked before anything is written and,
  by the tools, before the run (`output_clash`);
- atomic: the bytes go to a temporary file in the target's directory, then a rename, so a reader
  never sees half a file;
- nothing is lost: when a target cannot be written, the file is kept in a fallback directory
  (`fallback_dir`, under the system temporary directory) and the result says where.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trnspec.boundary.errors import BoundaryError


class OutputError(OSError):
    """A target that must not be written (not a regular file, or another output's path)."""


def _umask_mode() -> int:
    """0666 minus the process umask: the mode open() would give a new file (mkstemp gives 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def target_problem(path: Path) -> str | None:
    """Why `path` cannot be an output file (it exists and is not a regular file), else None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    return f"it is {kind}; give a path to a regular file"


def same_path(a: Path, b: Path) -> bool:
    """Whether two paths name one file (absolute, case-folded where the OS folds case)."""
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def output_clash(targets: Sequence[tuple[str, Path]]) -> BoundaryError | None:
    """The first target that is another's path or not a regular file, as the error to raise
    (field = the name of the output, e.g. "--out"), else None. Pure apart from one stat each."""
    for i, (name, path) in enumerate(targets):
        for other_name, other in targets[:i]:
            if same_path(path, other):
                return BoundaryError(
                    name,
                    str(path),
                    f"is also the path of {other_name}; one output would overwrite the other"
                    " (give --out a .json name)",
                )
        if (problem := target_problem(path)) is not None:
            return BoundaryError(name, str(path), problem)
    return None


def write_file(path: Path, data: bytes | str) -> Path:
    """Write `data` to `path` atomically (temporary file, then rename); refuse a target that
    exists and is not a regular file (OutputError)."""
    path = Path(path)
    if (problem := target_problem(path)) is not None:
        raise OutputError(f"{path}: {problem}")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.chmod(tmp, _umask_mode())
        # checked again just before the rename: the path may have been replaced meanwhile
        if (problem := target_problem(path)) is not None:
            raise OutputError(f"{path}: {problem}")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def fallback_dir(tool: str) -> Path:
    """Where a tool's outputs go when their targets fail: a new directory named after the tool
    and the time, under the system temporary directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.mkdtemp(prefix=f"trnspec-{tool}-{stamp}-"))


@dataclass(frozen=True)
class Written:
    """One output: where it was meant to go, where it is (None if nowhere), and why it moved."""

    target: Path
    path: Path | None
    error: str | None = None

    @property
    def moved(self) -> bool:
        return self.path is None or not same_path(self.path, self.target)


def write_outputs(tool: str, files: Sequence[tuple[Path, bytes | str]]) -> list[Written]:
    """Write each (target, data); a target that fails (or clashes with an earlier one) is kept
    in one fallback directory instead, and its `Written` says where and why."""
    out: list[Written] = []
    fallback: Path | None = None
    for i, (target, data) in enumerate(files):
        error: str | None = None
        if any(same_path(target, earlier) for earlier, _ in files[:i]):
            error = "the path of another output of this run"
        else:
            try:
                out.append(Written(target, write_file(target, data)))
                continue
            except OSError as exc:
                error = str(exc) if isinstance(exc, OutputError) else exc.strerror or str(exc)
        try:
            fallback = fallback or fallback_dir(tool)
            kept = write_file(fallback / f"{i}-{Path(target).name}", data)
        except OSError:
            kept = None
        out.append(Written(target, kept, error))
    return out


def moved_lines(written: Sequence[Written]) -> list[str]:
    """One line per output that is not where it was asked for, saying where it is and why."""
    return [
        f"cannot write {w.target} ({w.error}); "
        + (f"kept it at {w.path}" if w.path is not None else "it could not be saved anywhere")
        for w in written
        if w.moved
    ]
