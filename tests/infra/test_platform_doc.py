"""docs/platform.md's first-deploy walk follows what is deployed now: the default's name in its
commands, the figures it quotes for the startup budget and the ramp, and `npx cdk` commands
written as they run (without the Node 20 banner)."""

from __future__ import annotations

import re
from pathlib import Path

from platform_synth import ADMIN

from infra.app.composition import check_profile
from infra.serving.manifests.autoscaling import scale_up_pods_per_period, time_to_peak_seconds
from infra.serving.manifests.server import startup_budget_seconds

DOC = (Path(__file__).resolve().parents[2] / "docs" / "platform.md").read_text()
DEFAULT = check_profile("default", ADMIN).workload


def test_the_walk_names_the_deployment_the_default_deploys() -> None:
    name = DEFAULT.spec.name
    assert f"kubectl -n {DEFAULT.spec.namespace} logs deploy/{name}`" in DOC
    assert f"(`{name}`, `max_num_seqs=" in DOC
    # No command names another deployment of the default (the walk once named the drafter's).
    assert set(re.findall(r"logs deploy/([a-z0-9-]+)", DOC)) == {name}


def test_the_figures_quoted_are_the_ones_derived() -> None:
    hours, minutes = divmod(round(startup_budget_seconds(DEFAULT.settings) / 60), 60)
    assert f"about {hours} h {minutes} min in all" in DOC
    settings = DEFAULT.settings
    pods = scale_up_pods_per_period(settings)
    assert f"{pods} for {settings.min_replicas} -> {settings.max_replicas}" in DOC
    assert f"within {time_to_peak_seconds(settings) // 60} minutes" in DOC


def test_every_npx_cdk_block_silences_the_node_banner_first() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", DOC, re.DOTALL)
    with_cdk = [b for b in blocks if "npx cdk" in b]
    assert with_cdk
    for block in with_cdk:
        silenced = block.find("export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=")
        assert 0 <= silenced < block.find("npx cdk"), block
