"""The synthesized templates of every shipped profile (both node autoscalers, every capacity
kind), platform and serving stack together, pass the API server's rules with nothing assumed:
every object a pod names is in them. And what the preflight assumes the stacks create beside the
workload's manifests (its service accounts, the platform's StorageClass) is really there."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from platform_synth import PROFILES, Synth, cfn_text

from infra.compliance.api_server import ObjectRef, api_server_findings
from infra.serving.preflight import provided_objects


def _objects(synth: Synth) -> list[dict[str, Any]]:
    """Every object the two stacks apply (the serving stack's service accounts included)."""
    out = []
    for template in (synth.raw, synth.serving_raw):
        for resource in template["Resources"].values():
            if resource["Type"] == "Custom::AWSCDK-EKS-KubernetesResource":
                out += json.loads(cfn_text(resource["Properties"]["Manifest"]))
    return out


@pytest.mark.parametrize("profile", PROFILES)
def test_every_synthesized_manifest_passes_with_every_reference_in_the_templates(
    platform_synth: Callable[[str], Synth], profile: str
) -> None:
    objects = _objects(platform_synth(profile))
    assert [str(f) for f in api_server_findings(objects)] == []
    assert {"Deployment", "Job", "DaemonSet", "ServiceAccount", "StorageClass"} <= {
        o["kind"] for o in objects
    }


def test_what_the_preflight_assumes_the_stacks_create_is_in_the_templates(
    platform_synth: Callable[[str], Synth],
) -> None:
    synth = platform_synth("default")
    created = {
        ObjectRef(
            o["kind"],
            o["metadata"]["name"],
            None if o["kind"] == "StorageClass" else o["metadata"].get("namespace"),
        )
        for o in _objects(synth)
    }
    assumed = provided_objects(synth.serving.spec, synth.serving.settings)
    assert set(assumed) <= created
