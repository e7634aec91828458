"""The serving image: built from image/Dockerfile by `cdk deploy` and pushed to the CDK assets ECR
repo. Its context is the repository root (it carries trnspec_tools too, for the calibration Job),
narrowed to what the Dockerfile copies by the root .dockerignore, which CDK reads for the asset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import aws_ecr_assets as ecr_assets
from constructs import Construct
from trnspec.config.images import ImageGeneration, image_spec

REPO_DIR = Path(__file__).resolve().parents[2]
#: The Dockerfile, relative to the build context.
DOCKERFILE = "image/Dockerfile"
#: Build argument of image/Dockerfile that selects the Neuron base image.
BASE_IMAGE_BUILD_ARG = "BASE_IMAGE"
#: Never part of the build context, whatever .dockerignore allows: local build products, caches
#: and tests would only churn the hash (the allow-list itself is the root .dockerignore).
EXCLUDE = ["**/__pycache__", "**/*.egg-info", "**/.pytest_cache", "**/.ruff_cache", "**/tests"]


def base_image_reference(generation: ImageGeneration | str) -> str:
    """The pinned base image of a generation (with its digest when trnspec knows it)."""
    spec = image_spec(generation)
    if not spec.runs_on_trn2:
        raise ValueError(
            f"image={spec.generation.value!r}: has no container image (local CPU engine only); "
            "use a Trn2 generation such as 'neuron-fork' or 'neuron-plugin'"
        )
    return f"{spec.uri}@{spec.digest}" if spec.digest else spec.uri


def docker_tag_prefix(generation: ImageGeneration | str) -> str:
    """ECR tag prefix, e.g. `neuron-fork-<asset hash>`: the tag says which vLLM build it is."""
    return f"{ImageGeneration(generation).value}-"


@dataclass(frozen=True)
class ServingImageProps:
    """Inputs of the serving image asset."""

    generation: ImageGeneration | str
    """Which pinned Neuron base image (and vLLM build) to build on."""
    directory: Path = REPO_DIR
    """Build context (the repository root; its .dockerignore keeps what the Dockerfile copies)."""
    file: str = DOCKERFILE
    """The Dockerfile, relative to `directory`."""


class ServingImage(Construct):
    """Docker image asset of the serving package on the generation's pinned Neuron base image.

    CDK names asset tags by content hash; the generation becomes part of the tag through the
    stack synthesizer's `docker_tag_prefix` (see ServingStack), so the hash still guarantees a
    rebuild on any change and the tag still reads as the image generation.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        props: ServingImageProps,
    ) -> None:
        super().__init__(scope, id)
        self.generation = ImageGeneration(props.generation)
        self.base_image = base_image_reference(self.generation)
        self.asset = ecr_assets.DockerImageAsset(
            self,
            "Asset",
            directory=str(props.directory),
            file=props.file,
            build_args={BASE_IMAGE_BUILD_ARG: self.base_image},
            platform=ecr_assets.Platform.LINUX_AMD64,
            display_name=f"trnspec-{self.generation.value}",
            exclude=EXCLUDE,
        )
        self.image_uri = self.asset.image_uri
