"""What each profile deploys, as an inventory: resource types and counts, outputs, Helm releases.

This replaces whole-template snapshots: a change that adds or drops a resource, an output or a
chart (or moves a chart's version) shows here as one readable line, while the details of each
resource are pinned by the assertions of the tests beside this one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from platform_synth import PROFILES, Synth

HELM = "Custom::AWSCDK-EKS-HelmChart"


def inventory(template: dict[str, Any]) -> dict[str, Any]:
    """Resource type counts, output names and `chart@version` of every Helm release."""
    resources = template["Resources"].values()
    return {
        "resources": dict(sorted(Counter(r["Type"] for r in resources).items())),
        "outputs": sorted(template.get("Outputs", {})),
        "charts": sorted(
            f"{r['Properties']['Chart']}@{r['Properties'].get('Version', '?')}"
            for r in resources
            if r["Type"] == HELM
        ),
    }


EXPECTED: dict[str, dict[str, Any]] = {}


@pytest.mark.parametrize("profile", PROFILES)
def test_platform_stack_inventory(platform_synth: Callable[[str], Synth], profile: str) -> None:
    assert inventory(platform_synth(profile).raw) == EXPECTED[f"{profile}/platform"]


@pytest.mark.parametrize("profile", PROFILES)
def test_serving_stack_inventory(platform_synth: Callable[[str], Synth], profile: str) -> None:
    assert inventory(platform_synth(profile).serving_raw) == EXPECTED[f"{profile}/serving"]
