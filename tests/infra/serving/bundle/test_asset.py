"""The bundle as a CDK file asset: built under the assembly's output directory (never the source
tree), hashed by content, and readable by exactly one object's statement."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from aws_cdk import App, Stack

from infra.serving.bundle.archive import PACKAGES, REPO_DIR, build_bundle
from infra.serving.bundle.asset import BUILD_SUBDIR, ServingBundle, ServingBundleProps


def staged(repo: Path, outdir: Path) -> tuple[ServingBundle, Stack]:
    app = App(outdir=str(outdir))
    stack = Stack(app, "S")
    bundle = ServingBundle(stack, "Bundle", ServingBundleProps(repo_dir=repo))
    app.synth()
    return bundle, stack


def copy_source(root: Path) -> Path:
    for directory, _ in PACKAGES:
        shutil.copytree(
            REPO_DIR / directory, root / directory, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


def test_the_same_source_is_the_same_asset_and_a_change_a_new_one(tmp_path: Path) -> None:
    source = copy_source(tmp_path / "src")
    first, _ = staged(REPO_DIR, tmp_path / "a")
    second, _ = staged(source, tmp_path / "b")
    assert first.asset.asset_hash == second.asset.asset_hash
    assert first.sha256 == second.sha256 == build_bundle().sha256
    with (source / "trnspec_tools" / "cli.py").open("a") as f:
        f.write("\n# changed\n")
    third, _ = staged(source, tmp_path / "c")
    assert third.asset.asset_hash != first.asset.asset_hash
    assert third.sha256 != first.sha256


def test_the_zip_is_written_under_the_outdir_and_staged_as_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staged from a copy of the source with the working directory beside it, all in this test's
    own directory: the one zip there is the outdir's (a zip written into the source tree or the
    working directory would be found beside it). The repository itself is not searched: a
    user's own `cdk synth` leaves a bundle zip in its cdk.out/, as it should."""
    source = copy_source(tmp_path / "src")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    outdir = tmp_path / "cdk.out"
    staged(source, outdir)
    (built,) = (outdir / BUILD_SUBDIR).iterdir()
    assert built.read_bytes() == build_bundle().data
    manifest = json.loads((outdir / "S.assets.json").read_text())
    assert manifest.get("dockerImages", {}) == {}
    (entry,) = [a for a in manifest["files"].values() if a["source"]["path"].endswith(".zip")]
    assert entry["source"]["packaging"] == "file"
    assert (outdir / entry["source"]["path"]).read_bytes() == built.read_bytes()
    assert sorted(tmp_path.rglob("trnspec-bundle-*.zip")) == [built]


def test_the_read_statement_is_get_object_on_the_bundle_alone(tmp_path: Path) -> None:
    bundle, stack = staged(REPO_DIR, tmp_path / "o")
    statement = stack.resolve(bundle.read_statement().to_statement_json())
    assert statement["Action"] == "s3:GetObject"
    resource = json.dumps(statement["Resource"])
    assert (
        resource.endswith(f'/{bundle.asset.s3_object_key}"]}}')
        or bundle.asset.s3_object_key in resource
    )
    assert "*" not in resource
