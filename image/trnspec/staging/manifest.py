"""A sha256 manifest of a model (or compiled-artifact) directory.

The manifest is the contract between whoever publishes a directory to S3 and whoever stages it
back: a reader trusts a file only if its size and sha256 match the manifest, so a partial upload, a
truncated download or an object replaced after publication is detected instead of being loaded.
The publisher writes the manifest last, so its presence means "complete".

No network here; only local file reads, so it is testable without mocks.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trnspec.boundary import json_io
from trnspec.boundary.write import write_file

#: The manifest's file name, inside the directory it describes (excluded from itself).
MANIFEST_NAME = "trnspec-manifest.json"
#: Marks in-flight downloads (boto3 appends its own random extension to it while it writes);
#: a name containing it is never listed in a manifest and never loaded.
PARTIAL_SUFFIX = ".trnspec-partial"
_CHUNK = 1024 * 1024
#: The manifest format this code reads and writes; another version is refused, not guessed at.
MANIFEST_VERSION = 1


def is_partial(name: str) -> bool:
    """An unfinished download: ours (x.trnspec-partial) or boto3's (x.trnspec-partial.1a2B3c)."""
    return PARTIAL_SUFFIX in name


class ManifestError(ValueError):
    """A manifest that cannot be trusted (bad JSON, unsafe path, duplicate entry)."""


class FileEntry(BaseModel):
    """One file: its path relative to the directory (POSIX separators), size and sha256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(description="Relative POSIX path inside the directory.")
    size: int = Field(ge=0, description="Size in bytes.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Lower-case hex sha256.")

    @field_validator("path")
    @classmethod
    def _safe_relative(cls, value: str) -> str:
        # A manifest read from S3 decides where files are written: refuse anything that could
        # escape the destination directory.
        p = PurePosixPath(value)
        if not value or p.is_absolute() or ".." in p.parts or "\\" in value or value != str(p):
            raise ValueError(f"unsafe path {value!r}: must be a normalised relative POSIX path")
        if p.name == MANIFEST_NAME or is_partial(p.name):
            raise ValueError(f"reserved file name {value!r}")
        return value


class Manifest(BaseModel):
    """Every file of a directory; order-independent (entries are kept sorted by path)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(
        default=MANIFEST_VERSION, description="Format version; bump on incompatible change."
    )
    files: tuple[FileEntry, ...] = Field(
        min_length=1, description="Entries sorted by path; a published directory is never empty."
    )

    @field_validator("version", mode="before")
    @classmethod
    def _known_version(cls, value: object) -> object:
        if isinstance(value, bool) or value != MANIFEST_VERSION:
            raise ValueError(
                f"version {value!r} is not the format this trnspec reads ({MANIFEST_VERSION}); "
                "publish again with this release's `python -m trnspec stage upload`"
            )
        return value

    @field_validator("files")
    @classmethod
    def _sorted_unique(cls, value: tuple[FileEntry, ...]) -> tuple[FileEntry, ...]:
        ordered = tuple(sorted(value, key=lambda e: e.path))
        paths = [e.path for e in ordered]
        dupes = sorted({p for p in paths if paths.count(p) > 1})
        if dupes:
            raise ValueError(f"duplicate paths: {', '.join(dupes)}")
        return ordered

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.files)

    def entry(self, path: str) -> FileEntry | None:
        return next((e for e in self.files if e.path == path), None)

    def to_json(self) -> str:
        return json_io.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        """Parse a manifest; every defect becomes one ManifestError naming the problem."""
        try:
            return cls.model_validate_json(text)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()
            )
            raise ManifestError(f"invalid manifest: {problems}") from None


@dataclass(frozen=True)
class Mismatch:
    """Why a local file does not match its manifest entry."""

    path: str
    reason: str  # "missing" | "size" | "sha256" | "extra" (a file the manifest does not list)
    expected: str
    actual: str

    def __str__(self) -> str:
        if self.reason == "missing":
            return f"{self.path}: missing"
        if self.reason == "extra":
            return f"{self.path}: not in the manifest (a stale file; remove it)"
        return f"{self.path}: {self.reason} is {self.actual}, manifest says {self.expected}"


def sha256_file(path: Path) -> str:
    """Stream the file through sha256 (model shards are tens of GB: never read them whole).

    Regular files only: the file is opened without blocking and checked on the open descriptor
    (no race with a rename), so a FIFO, device or socket in a staged directory is a
    ManifestError naming it, never a read that waits forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ManifestError(
                f"{path}: not a regular file (mode {stat.filemode(mode)}); only regular files"
                " can be staged, remove it"
            )
        os.set_blocking(fd, True)
        digest = hashlib.sha256()
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def walk_files(root: Path) -> Iterable[Path]:
    """Every file a manifest of `root` would list, in order (the manifest and partials skipped)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name == MANIFEST_NAME or is_partial(name):
                continue
            yield Path(dirpath) / name


def build_manifest(root: Path) -> Manifest:
    """Hash every regular file under root (symlinks followed, manifest and partials skipped)."""
    root = Path(root)
    if not root.is_dir():
        raise ManifestError(f"{root} is not a directory")
    entries = [
        FileEntry(
            path=p.relative_to(root).as_posix(),
            sha256=sha256_file(p),  # first: it refuses a FIFO or device before anything else
            size=p.stat().st_size,
        )
        for p in walk_files(root)
    ]
    if not entries:
        raise ManifestError(f"{root} has no files")
    return Manifest(files=tuple(entries))


def check_file(root: Path, entry: FileEntry) -> Mismatch | None:
    """Compare the file at root/entry.path with its entry."""
    return check_path(Path(root) / entry.path, entry)


def check_path(path: Path, entry: FileEntry) -> Mismatch | None:
    """Compare any file (e.g. a download's temp name) with an entry; size first, so a wrong size
    costs no hashing."""
    if not path.is_file():
        return Mismatch(entry.path, "missing", "", "")
    size = path.stat().st_size
    if size != entry.size:
        return Mismatch(entry.path, "size", str(entry.size), str(size))
    digest = sha256_file(path)
    if digest != entry.sha256:
        return Mismatch(entry.path, "sha256", entry.sha256, digest)
    return None


def extra_files(root: Path, manifest: Manifest) -> list[str]:
    """Files under root that the manifest does not list (manifest and partials aside), sorted."""
    listed = {e.path for e in manifest.files}
    return sorted(
        rel
        for p in walk_files(Path(root))
        if (rel := p.relative_to(root).as_posix()) not in listed and p.is_file()
    )


def verify(root: Path, manifest: Manifest) -> list[Mismatch]:
    """Every entry whose local file is missing or differs, then every file the manifest does not
    list; empty means the directory is exactly the manifest's files."""
    damaged = [m for e in manifest.files if (m := check_file(root, e)) is not None]
    return damaged + [Mismatch(p, "extra", "", "") for p in extra_files(root, manifest)]


def write_manifest(root: Path, manifest: Manifest) -> Path:
    """Write the manifest into root through the one output writer (atomic, regular file only)."""
    return write_file(Path(root) / MANIFEST_NAME, manifest.to_json())


def read_manifest(root: Path) -> Manifest:
    path = Path(root) / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(f"no {MANIFEST_NAME} in {root}")
    return Manifest.from_json(path.read_bytes())
