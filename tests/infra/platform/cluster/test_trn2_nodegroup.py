"""A Trn2 pool's launch template as the EC2 user guide lays out EFA: ENA primary, EFA-only on
every EFA network card, and a new cluster placement group only where no reservation has one."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from infra.platform.cluster.trn2_nodegroup import (
    Trn2Nodegroup,
    Trn2NodegroupProps,
    efa_network_interfaces,
)
from infra.settings import Trn2PoolSettings

RESERVATION = "cr-0123456789abcdef0"


def _launch_template(pool: dict[str, Any]) -> tuple[dict[str, Any], Template]:
    """One pool's node group on an imported cluster, alone in a stack."""
    stack = Stack(App(), "Pool")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    cluster = eks.Cluster.from_cluster_attributes(
        stack,
        "Cluster",
        cluster_name="c",
        cluster_security_group_id="sg-0123456789abcdef0",
        vpc=vpc,
    )
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    Trn2Nodegroup(
        stack,
        "Trn2",
        Trn2NodegroupProps(
            pool=Trn2PoolSettings.model_validate({"name": "p", "efa": True, **pool}),
            cluster=cluster,
            cluster_name="c",
            vpc=vpc,
            subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            node_role=role,
        ),
    )
    template = Template.from_stack(stack)
    (lt,) = template.find_resources("AWS::EC2::LaunchTemplate").values()
    return lt["Properties"]["LaunchTemplateData"], template


def test_primary_interface_is_ena_and_every_efa_card_has_an_efa_only_interface() -> None:
    nics = efa_network_interfaces(16)
    assert nics[0] == {"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}
    assert nics[1] == {"NetworkCardIndex": 0, "DeviceIndex": 1, "InterfaceType": "efa-only"}
    rest = nics[2:]
    assert [n["NetworkCardIndex"] for n in rest] == list(range(1, 16))
    assert {(n["DeviceIndex"], n["InterfaceType"]) for n in rest} == {(0, "efa-only")}


def test_an_on_demand_efa_pool_gets_a_new_cluster_placement_group() -> None:
    data, template = _launch_template({})
    assert len(data["NetworkInterfaces"]) == 17  # ENA + one EFA-only per card of trn2.48xlarge
    assert all(n["DeleteOnTermination"] for n in data["NetworkInterfaces"])
    template.resource_count_is("AWS::EC2::PlacementGroup", 1)
    assert "Ref" in data["Placement"]["GroupName"]


@pytest.mark.parametrize(
    "capacity",
    [
        {"kind": "capacity-block", "reservation_id": RESERVATION},
        {"kind": "reservation", "reservation_id": RESERVATION},
    ],
    ids=["capacity-block", "reservation"],
)
def test_reserved_capacity_gets_no_new_placement_group(capacity: dict[str, str]) -> None:
    data, template = _launch_template({"capacity": capacity})
    template.resource_count_is("AWS::EC2::PlacementGroup", 0)
    assert "Placement" not in data
    assert data["NetworkInterfaces"][0]["InterfaceType"] == "interface"


def test_a_reservation_made_in_a_placement_group_launches_into_that_group() -> None:
    capacity = {"kind": "reservation", "reservation_id": RESERVATION, "placement_group": "odcr-pg"}
    data, template = _launch_template({"capacity": capacity})
    template.resource_count_is("AWS::EC2::PlacementGroup", 0)
    assert data["Placement"] == {"GroupName": "odcr-pg"}
