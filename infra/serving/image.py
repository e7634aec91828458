"""The image the pods run: AWS's public Neuron vLLM image of the profile's generation, as
published (trnspec.config.images). trnspec itself reaches the pods as a bundle, not an image
(infra/serving/bundle/, infra/serving/manifests/bundle.py), so nothing is built or pushed."""

from __future__ import annotations

from trnspec.config.images import ImageGeneration, image_spec


def base_image_reference(generation: ImageGeneration | str) -> str:
    """The pinned image of a generation (with its digest when trnspec knows it)."""
    spec = image_spec(generation)
    if not spec.runs_on_trn2:
        raise ValueError(
            f"image={spec.generation.value!r}: has no container image (local CPU engine only); "
            "use a Trn2 generation such as 'neuron-fork' or 'neuron-plugin'"
        )
    return f"{spec.uri}@{spec.digest}" if spec.digest else spec.uri
