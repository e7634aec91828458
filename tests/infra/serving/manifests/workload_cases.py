"""Shared cases for the pure manifest tests: real engine profiles, no CDK (cached builds)."""

from __future__ import annotations

from functools import cache
from typing import Any

from trnspec.config.serving import ServingConfig, list_profiles, load_profile

from infra.serving.image import base_image_reference
from infra.serving.manifests.manifests import WorkloadManifests, build_manifests
from infra.serving.manifests.spec import WorkloadSpec, derive_workload, resolve_serving_config
from infra.settings.serving import ServingSettings

BUCKET = "trnspec-models-test"
#: What the serving stack renders: the public Neuron image of the default generation, as published.
IMAGE = base_image_reference("neuron-plugin")
#: The platform default (infra.settings.VpcSettings.cidr); the stack passes the real one.
VPC_CIDR = "10.0.0.0/16"

#: Profiles that run on Trn2 (the cluster workload); local-tiny is the CPU launcher's.
TRN2_PROFILES = [p for p in list_profiles() if load_profile(p).hardware.instance_type != "cpu"]

Built = tuple[ServingConfig, WorkloadSpec, WorkloadManifests, ServingSettings]


@cache
def _build(profile: str, items: tuple[tuple[str, Any], ...]) -> Built:
    s = ServingSettings(profile=profile, **dict(items))
    cfg = resolve_serving_config(s, BUCKET)
    spec = derive_workload(
        cfg, s, image_uri=IMAGE, bucket_name=BUCKET, region="us-east-2", vpc_cidr=VPC_CIDR
    )
    return cfg, spec, build_manifests(spec, s), s


def build(profile: str = "qwen3-32b-draft", **settings: Any) -> Built:
    """Manifests of a profile under settings; treat the result as read-only (it is cached)."""
    items = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in settings.items()))
    if any(isinstance(v, dict) for _, v in items):  # unhashable: build without the cache
        return _build.__wrapped__(profile, items)
    return _build(profile, items)


#: Two Jobs share the kind: "Job" alone means the precompile Job (the Neuron pod); the weights
#: Job is asked for by name (`by_kind(m, "Job", "-weights-")`).
_DEFAULT_NAME_PART = {"Job": "-precompile-"}


def by_kind(manifests: WorkloadManifests, kind: str, name_part: str = "") -> dict[str, Any]:
    name_part = name_part or _DEFAULT_NAME_PART.get(kind, "")
    found = [m for m in manifests.all() if m["kind"] == kind and name_part in m["metadata"]["name"]]
    assert len(found) == 1, f"expected one {kind} matching {name_part!r}, got {len(found)}"
    return found[0]
