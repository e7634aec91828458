"""The serving image asset: image/Dockerfile built from the repository root, whose .dockerignore
keeps only what the Dockerfile copies, so the asset hash (the image tag) changes with those files
and with nothing else in the repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from aws_cdk import App, Stack

from infra.serving.image import DOCKERFILE, REPO_DIR, ServingImage, ServingImageProps

#: The context's allowed entries (.dockerignore), copied to build a minimal context.
ALLOWED = (
    ".dockerignore",
    "image/Dockerfile",
    "image/pyproject.toml",
    "image/tools/pyproject.toml",
    "image/trnspec",
    "trnspec_tools",
)
#: Files a working copy has that must never reach the image or move its hash.
JUNK = (
    ".venv/lib/python3.11/site-packages/torch/__init__.py",
    ".cache/huggingface/hub/weights.safetensors",
    "node_modules/aws-cdk/package.json",
    "cdk.out/manifest.json",
    "reports/bench.json",
    "tests/test_new.py",
    "docs/new.md",
    "infra/new.py",
    "trnspec_tools/__pycache__/cli.cpython-311.pyc",
    "image/trnspec/cli/__pycache__/main.cpython-311.pyc",
    "image/trnspec.egg-info/PKG-INFO",
)


def asset_hash(context: Path, outdir: Path) -> str:
    app = App(outdir=str(outdir))
    stack = Stack(app, "S")
    image = ServingImage(
        stack, "Image", ServingImageProps(generation="neuron-plugin", directory=context)
    )
    return image.asset.asset_hash


@pytest.fixture
def context(tmp_path: Path) -> Path:
    """A copy of the repository's allowed context entries, nothing else."""
    root = tmp_path / "context"
    for entry in ALLOWED:
        source, target = REPO_DIR / entry, root / entry
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.py[co]", "*.egg-info")
            shutil.copytree(source, target, ignore=ignore)
        else:
            shutil.copy2(source, target)
    return root


def test_the_dockerfile_is_image_dockerfile_of_the_repository_root() -> None:
    assert (REPO_DIR / DOCKERFILE).is_file()
    assert ServingImageProps(generation="neuron-plugin").directory == REPO_DIR


def test_the_repository_hashes_as_its_allowed_entries_alone(context: Path, tmp_path: Path) -> None:
    assert asset_hash(REPO_DIR, tmp_path / "a") == asset_hash(context, tmp_path / "b")


def test_junk_in_the_context_leaves_the_hash_alone(context: Path, tmp_path: Path) -> None:
    before = asset_hash(context, tmp_path / "a")
    for junk in JUNK:
        (context / junk).parent.mkdir(parents=True, exist_ok=True)
        (context / junk).write_text("junk\n")
    assert asset_hash(context, tmp_path / "b") == before


@pytest.mark.parametrize(
    "changed", ["trnspec_tools/calibration/run.py", "image/trnspec/cli/main.py", "image/Dockerfile"]
)
def test_a_change_to_what_the_image_copies_changes_the_hash(
    changed: str, context: Path, tmp_path: Path
) -> None:
    before = asset_hash(context, tmp_path / "a")
    with (context / changed).open("a") as f:
        f.write("\n# changed\n")
    assert asset_hash(context, tmp_path / "b") != before
