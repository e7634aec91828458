"""Switching a deployment between the shipped profiles of one stack updates it in place.

README's step 3 and docs/platform.md deploy `-c profile=capacity-block` (or karpenter) over a
default deploy: the same stack, `TrnspecPlatform`. CloudFormation replaces an AWS::EKS::Cluster
whose `Name` changes (and a subnet whose `AvailabilityZone` or CIDR does, which the cluster's
subnets then follow), and a replaced cluster changes the values the platform stack exports to the
serving stack, which CloudFormation refuses while an import uses them ("Cannot update export ...
as it is in use by ..."). Each shipped profile once named its own cluster (`trnspec-cb`,
`trnspec-kp`), so every switch was refused (issue 48, finding 9).

Read from the synthesized templates, resolved as CloudFormation would in us-east-2 (where the
default must run for the switch to be the same stack: an env-agnostic stack deploys to the CLI's
region): the cluster's replacement properties, the network resources behind it and the export
values the serving stack imports are the same in every shipped profile of that stack and region;
only the node groups (new logical ids: created, then the old ones deleted) differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from platform_synth import Synth

REGION = "us-east-2"
#: EC2 DescribeAvailabilityZones for us-east-2, in the order Fn::GetAZs returns them.
AZS = ["us-east-2a", "us-east-2b", "us-east-2c"]
#: Profiles deployed as the same stack in us-east-2 (first-node: ap-south-2, another stack).
SWITCHABLE = ("default", "capacity-block", "karpenter")
#: Properties whose change makes CloudFormation replace the resource (AWS resource reference:
#: AWS::EKS::Cluster Name, RoleArn, ResourcesVpcConfig.SubnetIds, EncryptionConfig,
#: KubernetesNetworkConfig; AWS::EC2::Subnet AvailabilityZone, CidrBlock, VpcId;
#: AWS::EC2::VPC CidrBlock).
REPLACING = {
    "AWS::EKS::Cluster": ("Name", "RoleArn", "EncryptionConfig", "KubernetesNetworkConfig"),
    "AWS::EC2::Subnet": ("AvailabilityZone", "CidrBlock", "VpcId"),
    "AWS::EC2::VPC": ("CidrBlock",),
}


def resolve(value: Any) -> Any:
    """The intrinsics that differ between an env-agnostic and a region-pinned template, resolved
    in REGION; references stay as they are (same logical id, same resource)."""
    if isinstance(value, list):
        return [resolve(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::Select"}:
        index, items = value["Fn::Select"]
        items = resolve(items)
        return items[index] if isinstance(items, list) else {"Fn::Select": [index, items]}
    if set(value) == {"Fn::GetAZs"}:
        return AZS
    if value == {"Ref": "AWS::Region"}:
        return REGION
    return {k: resolve(v) for k, v in value.items()}


def replacing_properties(synth: Synth) -> dict[str, dict[str, Any]]:
    out = {}
    for logical_id, resource in synth.raw["Resources"].items():
        names = REPLACING.get(resource["Type"])
        if names:
            props = resource.get("Properties", {})
            out[logical_id] = {n: resolve(props.get(n)) for n in names}
            if resource["Type"] == "AWS::EKS::Cluster":
                out[logical_id]["SubnetIds"] = resolve(props["ResourcesVpcConfig"]["SubnetIds"])
    return out


def exports(synth: Synth) -> dict[str, Any]:
    """The platform stack's exports (what the serving stack imports) and their values."""
    return {
        o["Export"]["Name"]: resolve(o["Value"])
        for o in synth.raw["Outputs"].values()
        if "Export" in o
    }


@pytest.mark.parametrize("profile", SWITCHABLE[1:])
def test_a_switch_from_the_default_replaces_no_cluster_and_no_export(
    platform_synth: Callable[[str], Synth], profile: str
) -> None:
    default, other = platform_synth("default"), platform_synth(profile)
    assert other.stack.stack_name == default.stack.stack_name
    assert other.stack.settings.region in (None, REGION)
    assert replacing_properties(other) == replacing_properties(default)
    assert exports(other) == exports(default)
