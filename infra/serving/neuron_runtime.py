"""A serving image must carry a Neuron runtime the nodes' Neuron driver accepts.

The Trn2 nodes run the EKS AL2023 Neuron AMI: managed node groups take the AMI release EKS
publishes for the cluster's Kubernetes version (this project sets no release pin), Karpenter the
`karpenter_ami_alias` release (2026 releases for Kubernetes 1.36). Their Neuron driver is 2.29 or
later, which requires runtime 2.33 or later (trnspec.config.images.runtime_refusal); the 0.9.1 fork
image carries runtime 2.28, and no pool setting pins an AMI release old enough for it, so a
deployment of it is refused here. `trnspec check` still checks the config itself and says so.
"""

from __future__ import annotations

from trnspec.boundary.problems import Problem
from trnspec.config.images import ImageGeneration, image_spec, runtime_refusal
from trnspec.config.serving import ServingConfig


def runtime_problems(cfg: ServingConfig, field: str = "serving.profile") -> list[Problem]:
    """One problem when `cfg`'s image carries a runtime older than the nodes' driver accepts."""
    reason = runtime_refusal(image_spec(cfg.image))
    if reason is None:
        return []
    supported = image_spec(ImageGeneration.NEURON_PLUGIN).generation.value
    return [
        Problem(
            field,
            cfg.name,
            f"{reason}, and no pool setting pins an older AMI release; deploy a {supported} "
            f"profile instead (e.g. qwen3-4b-dflash or llama31-8b-eagle3)",
        )
    ]
