"""One Trn2 managed node group on the Neuron AMI, tainted, with its launch template."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from aws_cdk import Fn, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct
from trnspec.hardware.topology import instance

from infra.platform.cluster.neuron_node import (
    NEURON_AMI_TYPE,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NEURON_TAINT_VALUE,
    custom_node_labels,
    mime_user_data,
    node_template_tags,
)
from infra.platform.cluster.root_volume import root_volume
from infra.settings import Trn2PoolSettings

TAINT_EFFECTS = {"NoSchedule": eks.TaintEffect.NO_SCHEDULE}
CAPACITY_TYPES = {
    "on-demand": eks.CapacityType.ON_DEMAND,
    "reservation": eks.CapacityType.ON_DEMAND,
    "capacity-block": eks.CapacityType.CAPACITY_BLOCK,
}


@dataclass(frozen=True)
class Trn2NodegroupProps:
    """Inputs of one Trn2 pool."""

    pool: Trn2PoolSettings
    """Instance type, sizes, capacity, placement, EFA, LNC."""
    cluster: eks.Cluster
    """The cluster the nodes join."""
    cluster_name: str
    """Literal cluster name (node group names and tags)."""
    vpc: ec2.IVpc
    """For the EFA security group."""
    subnets: ec2.SubnetSelection
    """Private subnets; narrowed to the pool's AZ or subnet ids here."""
    node_role: iam.IRole
    """Instance role of Trn2 nodes."""


class Trn2Nodegroup(Construct):
    """Managed node group for one pool; scales from zero with the Cluster Autoscaler."""

    def __init__(self, scope: Construct, construct_id: str, props: Trn2NodegroupProps) -> None:
        super().__init__(scope, construct_id)
        pool = props.pool
        self.pool = pool
        self.nodegroup_name = f"{props.cluster_name}-{pool.name}"
        subnets = self._subnets(props)
        root = root_volume(pool)
        # Raw CloudFormation shape, set as one property override below: passed as a plain dict
        # to `launch_template_data`, its keys were lost in the jsii struct conversion.
        lt_data: dict[str, object] = {
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/xvda",
                    "Ebs": {
                        "VolumeSize": root.size_gib,
                        "VolumeType": "gp3",
                        "Iops": root.iops,
                        "Throughput": root.throughput_mibps,
                        "Encrypted": True,
                        "DeleteOnTermination": True,
                    },
                }
            ],
            "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 2},
            "UserData": Fn.base64(mime_user_data(pool)),
        }
        if pool.capacity.reservation_id:
            lt_data["CapacityReservationSpecification"] = {
                "CapacityReservationTarget": {"CapacityReservationId": pool.capacity.reservation_id}
            }
        # EKS wants a capacity-block group's instance type in its launch template, not the group.
        block = pool.capacity.kind == "capacity-block"
        if block:
            lt_data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
            lt_data["InstanceType"] = pool.instance_type
        if pool.efa:
            lt_data.update(self._efa(props))
        self.launch_template = ec2.CfnLaunchTemplate(
            self,
            "LaunchTemplate",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(),
        )
        self.launch_template.add_property_override("LaunchTemplateData", lt_data)
        self.nodegroup = eks.Nodegroup(
            self,
            "Nodegroup",
            cluster=props.cluster,
            nodegroup_name=self.nodegroup_name,
            # Built as STANDARD and overridden below: aws_eks_v2 2.275 rejects the Neuron AMI
            # type for trn2 (its accelerated-instance list lacks trn2).
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            instance_types=None if block else [ec2.InstanceType(pool.instance_type)],
            capacity_type=CAPACITY_TYPES[pool.capacity.kind],
            min_size=pool.min_size,
            desired_size=pool.desired_size,
            max_size=pool.max_size,
            labels=custom_node_labels(pool),
            taints=[
                eks.TaintSpec(
                    key=NEURON_TAINT_KEY,
                    value=NEURON_TAINT_VALUE,
                    effect=TAINT_EFFECTS[NEURON_TAINT_EFFECT],
                )
            ],
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.launch_template.ref,
                version=self.launch_template.attr_latest_version_number,
            ),
            node_role=props.node_role,
            subnets=subnets,
            # EKS does not copy these to the ASG; AsgNodeTemplateTags does (scale from zero).
            tags=node_template_tags(pool),
        )
        cfn = cast(eks.CfnNodegroup, self.nodegroup.node.default_child)
        cfn.add_property_override("AmiType", NEURON_AMI_TYPE)

    @staticmethod
    def _subnets(props: Trn2NodegroupProps) -> ec2.SubnetSelection:
        pool = props.pool
        if pool.subnet_ids:
            return ec2.SubnetSelection(
                subnets=[
                    ec2.Subnet.from_subnet_id(props.vpc, f"Subnet-{pool.name}-{i}", sid)
                    for i, sid in enumerate(pool.subnet_ids)
                ]
            )
        if pool.availability_zone:
            return ec2.SubnetSelection(
                subnet_type=props.subnets.subnet_type,
                availability_zones=[pool.availability_zone],
            )
        return props.subnets

    def _efa(self, props: Trn2NodegroupProps) -> dict[str, object]:
        """The EFA interfaces of the type (`efa_interfaces`) and the placement group, as the EC2
        user guide lays them out; EFA traffic needs a security group admitting all traffic from
        itself."""
        sg = ec2.SecurityGroup(
            self,
            "EfaSecurityGroup",
            vpc=props.vpc,
            description=f"EFA traffic between {props.pool.name} nodes",
            allow_all_outbound=False,
        )
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "EFA from pool members")
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), "EFA to pool members")
        sg.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.HTTPS, "AWS APIs, image pulls")
        Tags.of(sg).add("Name", f"{props.cluster_name}-{props.pool.name}-efa")
        groups = [props.cluster.cluster_security_group_id, sg.security_group_id]
        cards = instance(props.pool.instance_type).efa_interfaces
        data: dict[str, object] = {
            "NetworkInterfaces": [
                {**nic, "Groups": groups, "DeleteOnTermination": True}
                for nic in efa_network_interfaces(cards)
            ]
        }
        group = self._placement_group(props.pool)
        if group is not None:
            data["Placement"] = {"GroupName": group}
        return data

    def _placement_group(self, pool: Trn2PoolSettings) -> str | None:
        """On-demand: a new cluster placement group. Reserved capacity already has its place:
        an ODCR created in a cluster placement group launches only into that group (the
        pool's `capacity.placement_group`, else none), and EC2 places a capacity block's
        instances together in an UltraCluster; a new group could only refuse the launch."""
        if pool.capacity.kind == "on-demand":
            return ec2.CfnPlacementGroup(self, "PlacementGroup", strategy="cluster").ref
        return pool.capacity.placement_group


def efa_network_interfaces(cards: int) -> list[dict[str, object]]:
    """EC2's layout for EFA on an instance with several network cards ("Maximize network
    bandwidth on Amazon EC2 instances with multiple network cards"): an ENA interface as the
    primary (card 0, device 0; an EFA-only interface cannot be primary), an EFA-only interface
    on card 0 at device 1, and one EFA-only interface at device 0 of every other card."""
    ena = {"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}
    efa_only = [
        {
            "NetworkCardIndex": card,
            "DeviceIndex": 1 if card == 0 else 0,
            "InterfaceType": "efa-only",
        }
        for card in range(cards)
    ]
    return [ena, *efa_only]
