"""The bundle's bytes: the `trnspec` package (image/trnspec, with its profiles/ and data/ files)
and `trnspec_tools`, as one deterministic zip.

Pure: the same source files give the same bytes (entries sorted, one fixed timestamp and mode,
fixed compression), so the same source gives the same CDK asset hash and a change to any file
that ships gives a new one. Build products and tests never ship (__pycache__, *.pyc, tests/,
*.egg-info), so a working copy's leftovers leave the bytes alone.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[3]
#: (directory in the repository, top-level package name in the bundle).
PACKAGES = (("image/trnspec", "trnspec"), ("trnspec_tools", "trnspec_tools"))
#: Path parts that never ship, and file suffixes that never ship.
EXCLUDED_PARTS = frozenset({"__pycache__", "tests", ".pytest_cache", ".ruff_cache", ".mypy_cache"})
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".egg-info")
#: Every entry's timestamp (the earliest a zip can hold) and mode (rw-r--r--).
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o644


@dataclass(frozen=True)
class Bundle:
    """The zip and its sha256 (hex), which the pods check before they extract it."""

    data: bytes
    sha256: str

    @property
    def file_name(self) -> str:
        return f"trnspec-bundle-{self.sha256[:16]}.zip"


def ships(relative: Path) -> bool:
    """Whether a file under a package directory goes into the bundle."""
    if any(part in EXCLUDED_PARTS or part.endswith(".egg-info") for part in relative.parts):
        return False
    return not relative.name.endswith(EXCLUDED_SUFFIXES) and not relative.name.startswith(".")


def bundle_files(repo_dir: Path = REPO_DIR) -> list[tuple[str, Path]]:
    """(name in the zip, source file) of everything that ships, sorted by name."""
    out: list[tuple[str, Path]] = []
    for source_dir, package in PACKAGES:
        root = repo_dir / source_dir
        if not (root / "__init__.py").is_file():
            raise FileNotFoundError(f"{root}: no Python package there to bundle")
        for path in root.rglob("*"):
            relative = path.relative_to(root)
            if path.is_file() and ships(relative):
                out.append((f"{package}/{relative.as_posix()}", path))
    return sorted(out)


def build_bundle(repo_dir: Path = REPO_DIR) -> Bundle:
    """The deterministic zip of `bundle_files(repo_dir)`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, path in bundle_files(repo_dir):
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | FILE_MODE) << 16
            info.create_system = 3  # Unix, whatever the building machine is
            archive.writestr(info, path.read_bytes(), compresslevel=9)
    data = buffer.getvalue()
    return Bundle(data=data, sha256=hashlib.sha256(data).hexdigest())
