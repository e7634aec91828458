"""docs/platform.md's first-deploy walk follows what is deployed now: the default's name in its
commands, the figures it quotes for the startup budget and the ramp, and `npx cdk` commands
written as they run (without the Node 20 banner)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from platform_synth import ADMIN
from trnspec.hardware.topology import instance

from infra.app.composition import check_profile
from infra.contracts import MAX_HELM_TIMEOUT_MINUTES
from infra.platform.addons.pins import KEDA_HTTP_CHART
from infra.serving.manifests.autoscaling import scale_up_pods_per_period, time_to_peak_seconds
from infra.serving.manifests.server import startup_budget_seconds
from infra.settings.models import AddonSettings

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


WORKLOAD_DOC = (Path(__file__).resolve().parents[2] / "docs" / "workload.md").read_text()


def test_the_helm_wait_quoted_is_the_one_the_settings_allow() -> None:
    """The reference row and the add-on section give the default and ceiling the settings hold
    (13 minutes since the Helm wait must end before the kubectl Lambda's 900 s)."""
    default = AddonSettings().helm_timeout_minutes
    assert default == MAX_HELM_TIMEOUT_MINUTES
    (row,) = re.findall(r"^\| `helm_timeout_minutes` \| int \| (\d+) \| 5 to (\d+):", DOC, re.M)
    assert row == (str(default), str(MAX_HELM_TIMEOUT_MINUTES))
    assert f"(default and maximum {MAX_HELM_TIMEOUT_MINUTES}: the kubectl provider" in DOC
    assert f"at most about {MAX_HELM_TIMEOUT_MINUTES}\nminutes per release" in DOC


def test_every_http_add_on_version_named_is_the_pinned_one() -> None:
    named = re.findall(r"`keda-add-ons-http` (\d+\.\d+\.\d+)", DOC)
    assert named and set(named) == {KEDA_HTTP_CHART.version}


def test_the_compile_cache_is_described_as_the_bucket_keeps_it() -> None:
    """Current compile-cache entries never expire (the retention is for old versions), and
    serving pods, the calibration's arm among them, refill the cache after a miss."""
    (row,) = [r for r in WORKLOAD_DOC.splitlines() if r.startswith("| `compile_cache_retention")]
    assert "replaced or deleted" in row and "current entries never expire" in row
    assert "not rewritten for this long expire" not in WORKLOAD_DOC
    assert "its graphs are not cached" not in DOC
    assert "the serve role cannot (least privilege)" not in WORKLOAD_DOC


def _idle_floor_row() -> str:
    (row,) = [r for r in DOC.splitlines() if r.startswith("| `scale_to_zero: true` | the platform")]
    return row


def test_the_idle_floor_lists_what_the_templates_create_and_prices_nothing_it_cannot(
    platform_synth: Any,
) -> None:
    """The platform's idle items, counted in the synthesized default (both stacks); the floor is
    not priced, since the price table holds Trn2 instances only (the old '$350' was derived from
    nothing)."""
    synth = platform_synth("default")
    resources = [*synth.raw["Resources"].values(), *synth.serving_raw["Resources"].values()]

    def count(cfn_type: str, **props: Any) -> int:
        return sum(
            r["Type"] == cfn_type and all(r["Properties"].get(k) == v for k, v in props.items())
            for r in resources
        )

    words = {2: "two", 5: "five", 6: "six", 1: "one"}
    row = _idle_floor_row()
    groups = [r["Properties"] for r in resources if r["Type"] == "AWS::EKS::Nodegroup"]
    (system,) = [g for g in groups if g["NodegroupName"].endswith("system")]
    nodes = system["ScalingConfig"]["DesiredSize"]
    assert f"{words[nodes]} {system['InstanceTypes'][0]} system nodes" in row
    assert f"{words[count('AWS::EC2::NatGateway')]} NAT gateway" in row
    endpoints = count("AWS::EC2::VPCEndpoint", VpcEndpointType="Interface")
    assert f"{words[endpoints]} interface endpoints" in row
    assert f"{words[count('AWS::KMS::Key')]} customer-managed KMS keys" in row
    assert "$" not in row.split("the platform's floor")[1]


def test_deploying_needs_no_docker_since_no_stack_has_an_image_asset(platform_synth: Any) -> None:
    synth = platform_synth("default")
    manifests = list(synth.outdir.glob("*.assets.json"))
    assert manifests
    for manifest in manifests:
        assert not json.loads(manifest.read_text()).get("dockerImages"), manifest.name
    assert "- **No Docker**: no stack builds an image." in DOC
    assert "- **Docker**" not in DOC


def test_the_workload_gaps_say_what_is_installed_and_which_disk_holds_weights() -> None:
    assert "not installed here" not in WORKLOAD_DOC
    assert instance("trn2.3xlarge").instance_store_gb is not None
    assert instance("trn2u.48xlarge").instance_store_gb is None
    assert "the instance store of trn2u.48xlarge (left out" in WORKLOAD_DOC
    assert "trn2.3xlarge / trn2u.48xlarge" not in WORKLOAD_DOC
