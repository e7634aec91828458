"""What each profile deploys, as an inventory: resource types and counts, outputs, Helm releases.

This replaces whole-template snapshots: a change that adds or drops a resource, an output or a
chart (or moves a chart's version) shows here as one readable line of `inventory.json`, while the
details of each resource are pinned by the assertions of the tests beside this one. After an
intended change, regenerate the file and review its diff:

    PYTHONPATH=tests/infra .venv/bin/python tests/infra/test_inventory.py
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from platform_synth import PROFILES, Synth, synth_profile

HELM = "Custom::AWSCDK-EKS-HelmChart"
EXPECTED_FILE = Path(__file__).with_name("inventory.json")


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


def _expected(key: str) -> dict[str, Any]:
    return json.loads(EXPECTED_FILE.read_text())[key]


@pytest.mark.parametrize("profile", PROFILES)
def test_platform_stack_deploys_the_expected_inventory(
    platform_synth: Callable[[str], Synth], profile: str
) -> None:
    assert inventory(platform_synth(profile).raw) == _expected(f"{profile}/platform")


@pytest.mark.parametrize("profile", PROFILES)
def test_serving_stack_deploys_the_expected_inventory(
    platform_synth: Callable[[str], Synth], profile: str
) -> None:
    assert inventory(platform_synth(profile).serving_raw) == _expected(f"{profile}/serving")


def _regenerate() -> None:
    out: dict[str, Any] = {}
    for profile in PROFILES:
        synth = synth_profile(profile, Path(tempfile.mkdtemp(prefix=f"inventory-{profile}-")))
        out[f"{profile}/platform"] = inventory(synth.raw)
        out[f"{profile}/serving"] = inventory(synth.serving_raw)
    EXPECTED_FILE.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    _regenerate()
