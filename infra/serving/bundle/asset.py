"""The trnspec bundle as a CDK file asset: `cdk deploy` uploads the zip (a few hundred KB) to the
bootstrap assets bucket, and the pods fetch it from there (infra/serving/manifests/bundle.py).

The zip is built at synth (infra/serving/bundle/archive.py: offline, deterministic) and written
under the cloud assembly's output directory, never into the source tree; the asset hash is the
zip's content hash, so the same source is the same asset and any shipped change a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Stage
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct
from trnspec.boundary.write import write_file

from infra.serving.bundle.archive import REPO_DIR, build_bundle

#: Where, under the assembly's output directory, the built zip is written before staging.
BUILD_SUBDIR = "trnspec-bundle"


@dataclass(frozen=True)
class ServingBundleProps:
    """Inputs of the bundle asset."""

    repo_dir: Path = REPO_DIR
    """The repository whose image/trnspec and trnspec_tools are bundled."""


class ServingBundle(Construct):
    """The bundle zip as an S3 file asset (read-only attributes: sha256, uri, asset)."""

    def __init__(self, scope: Construct, id: str, props: ServingBundleProps) -> None:
        super().__init__(scope, id)
        bundle = build_bundle(props.repo_dir)
        stage = Stage.of(self)
        outdir = Path(stage.outdir if stage is not None else ".") / BUILD_SUBDIR
        outdir.mkdir(parents=True, exist_ok=True)
        path = outdir / bundle.file_name
        if not path.is_file() or path.read_bytes() != bundle.data:
            write_file(path, bundle.data)
        self.sha256 = bundle.sha256
        self.asset = s3_assets.Asset(self, "Asset", path=str(path), display_name="trnspec bundle")
        self.uri = self.asset.s3_object_url

    def read_statement(self) -> iam.PolicyStatement:
        """s3:GetObject on the bundle's object alone (Asset.grant_read would grant the whole
        assets bucket)."""
        return iam.PolicyStatement(
            sid="ReadTrnspecBundle",
            actions=["s3:GetObject"],
            resources=[self.asset.bucket.arn_for_objects(self.asset.s3_object_key)],
        )
