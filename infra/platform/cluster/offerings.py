"""Where EC2 offers each Trn2 instance type, and how it can be bought.

Regions and zones are EC2's DescribeInstanceTypeOfferings (location types `region` and
`availability-zone`), the purchase options its DescribeInstanceTypes `SupportedUsageClasses`, as
captured in the EC2 data moto 5.2.6 bundles (moto/ec2/resources/instance_type_offerings/ and
instance_types.json; tests/infra/platform/cluster/test_offerings.py keeps this table equal to
it). A capture, not a live answer: EC2 adds regions, so before choosing one run
`aws ec2 describe-instance-type-offerings --location-type availability-zone
--filters Name=instance-type,Values=<type> --region <region>`. An offering says EC2 sells the
type there, not that capacity is free: on-demand Trn2 capacity is scarce (capacity blocks and
reservations are the reliable way).
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.boundary.problems import ABSENT, Problem

from infra.settings import DeploymentSettings

SOURCE = (
    "EC2 DescribeInstanceTypeOfferings and DescribeInstanceTypes (SupportedUsageClasses) as "
    "bundled in moto 5.2.6"
)


@dataclass(frozen=True)
class Offering:
    """One instance type in one region."""

    instance_type: str
    region: str
    zones: tuple[str, ...]
    """Availability zones (names) that offer it."""
    purchase: tuple[str, ...]
    """EC2 usage classes: on-demand, spot, capacity-block."""


_USAGE = ("on-demand", "spot", "capacity-block")
OFFERINGS: tuple[Offering, ...] = (
    Offering("trn2.48xlarge", "ap-south-2", ("ap-south-2b",), _USAGE),
    Offering("trn2.48xlarge", "us-east-2", ("us-east-2a", "us-east-2b", "us-east-2c"), _USAGE),
    Offering("trn2.3xlarge", "ap-south-2", ("ap-south-2b",), _USAGE),
    Offering("trn2.3xlarge", "ap-southeast-4", ("ap-southeast-4c",), _USAGE),
    Offering("trn2.3xlarge", "sa-east-1", ("sa-east-1a", "sa-east-1b", "sa-east-1c"), _USAGE),
)


def regions_offering(instance_type: str) -> list[str]:
    return sorted(o.region for o in OFFERINGS if o.instance_type == instance_type)


def offering(instance_type: str, region: str) -> Offering | None:
    for o in OFFERINGS:
        if (o.instance_type, o.region) == (instance_type, region):
            return o
    return None


def offering_problems(
    settings: DeploymentSettings, deploy_region: str | None = None
) -> list[Problem]:
    """A pool whose type EC2 does not offer in the deployment's region (or zone) never gets a
    node: its pods stay Pending for the autoscaler's whole provisioning time. A managed node
    group (the Cluster Autoscaler's) over a subnet in a zone without the type fails to create:
    EKS's CreateNodegroup answers "Your requested instance type (...) is not supported in your
    requested Availability Zone" and the stack rolls back (as reported in eksctl-io/eksctl#6461
    and awslabs/ec2-spot-workshops#154; not run here). Karpenter picks an offered zone itself.

    The region is the settings' own, else `deploy_region`, the one `cdk deploy` targets for an
    environment-agnostic profile (CDK_DEFAULT_REGION); with neither (an offline synth) nothing is
    checked. A type this table does not list is not judged, nor an existing VPC's subnets."""
    region = settings.region or deploy_region
    if not region:
        return []
    problems: list[Problem] = []
    for i, pool in enumerate(settings.trn2_pools):
        regions = regions_offering(pool.instance_type)
        if not regions:
            continue
        found = offering(pool.instance_type, region)
        if found is None:
            problems.append(_not_offered(settings, i, region, regions))
        elif pool.availability_zone:
            if pool.availability_zone not in found.zones:
                problems.append(
                    Problem(
                        f"trn2_pools.{i}.availability_zone",
                        pool.availability_zone,
                        f"EC2 offers {pool.instance_type} in {region} only in "
                        f"{', '.join(found.zones)}; pick one of them",
                    )
                )
        elif not pool.subnet_ids and settings.vpc.vpc_id is None:
            problems += _vpc_zone_problems(settings, i, found)
    return problems


def _not_offered(settings: DeploymentSettings, i: int, region: str, regions: list[str]) -> Problem:
    instance_type = settings.trn2_pools[i].instance_type
    where = (
        f"add the region to infra/platform/cluster/offerings.py if EC2 offers it there now (aws "
        f"ec2 describe-instance-type-offerings); {SOURCE}"
    )
    if settings.region is None:
        return Problem(
            "region",
            ABSENT,
            f"not set, so cdk deploy targets {region} (CDK_DEFAULT_REGION: the AWS profile's "
            f"region or --region), where EC2 does not offer {instance_type} "
            f"(trn2_pools.{i}): set -c region= one of {', '.join(regions)}, or {where}",
        )
    return Problem(
        f"trn2_pools.{i}.instance_type",
        instance_type,
        f"EC2 does not offer it in {region}; deploy to one of {', '.join(regions)}, or {where}",
    )


def _vpc_zone_problems(settings: DeploymentSettings, i: int, found: Offering) -> list[Problem]:
    """An unpinned pool spans every zone of the VPC this app creates: those of
    vpc.availability_zones, or two the region picks at deploy when the profile names none."""
    offered = ", ".join(found.zones)
    managed = settings.autoscaler != "karpenter"
    if settings.region is None:
        if not managed or len(found.zones) >= 2:
            return []  # the two zones picked at deploy are not known here
        return [
            Problem(
                f"trn2_pools.{i}.availability_zone",
                ABSENT,
                f"EC2 offers {found.instance_type} in {found.region} only in {offered}, and a "
                "managed node group over the two zones a new VPC takes there at deploy would "
                f"fail to create: set -c region={found.region}, vpc.availability_zones with "
                f"{found.zones[0]} and another zone, and this pool's availability_zone to "
                f"{found.zones[0]}",
            )
        ]
    zones = settings.vpc.availability_zones
    without = [z for z in zones if z not in found.zones]
    if not without:
        return []
    if not managed:
        if len(without) < len(zones):
            return []
        return [
            Problem(
                "vpc.availability_zones",
                list(zones),
                f"EC2 offers {found.instance_type} in {settings.region} only in {offered}: "
                "add one of them",
            )
        ]
    return [
        Problem(
            f"trn2_pools.{i}.availability_zone",
            ABSENT,
            f"EC2 offers {found.instance_type} in {settings.region} only in {offered}, and a "
            f"managed node group over {', '.join(without)} fails to create: set it to one of "
            f"{offered} (also in vpc.availability_zones)",
        )
    ]
