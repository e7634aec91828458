"""Rules spanning several sections of the deployment settings, run once every field is
individually valid; one problem per broken rule (field, value, fix).

(Not the engine's config checks, `trnspec.checks`: these are about the deployment, not vLLM.)
"""

from __future__ import annotations

from trnspec.boundary.problems import ABSENT, Problem
from trnspec.hardware.topology import instance

from infra.contracts import NEURON_SCHEDULER_NAME
from infra.settings.models import DeploymentSettings, Trn2PoolSettings


def deployment_cross_checks(s: DeploymentSettings) -> list[Problem]:
    """Rules spanning several sections: each Trn2 pool against the region, the VPC and the
    autoscaler, the Neuron components the pods need, the VPC against the region and account."""
    problems: list[Problem] = []
    names = [p.name for p in s.trn2_pools]
    for i, pool in enumerate(s.trn2_pools):
        at = f"trn2_pools.{i}"
        if names.count(pool.name) > 1:
            problems.append(Problem(f"{at}.name", pool.name, "pool names must be unique"))
        problems += _pool_zone_problems(s, at, pool)
        problems += _pool_efa_problems(at, pool)
        if s.autoscaler == "karpenter":
            problems += _karpenter_pool_problems(at, pool)
    if not s.neuron.scheduler_extension:
        problems.append(
            Problem(
                "neuron.scheduler_extension",
                False,
                "the workload's pods name the Neuron scheduler extension (schedulerName "
                f"{NEURON_SCHEDULER_NAME}) and would stay Pending without it: keep it true",
            )
        )
    return problems + _vpc_problems(s)


def _pool_zone_problems(s: DeploymentSettings, at: str, pool: Trn2PoolSettings) -> list[Problem]:
    """A pool's AZ in the region and the VPC, its subnets in an existing VPC, and an AZ for
    AZ-bound capacity."""
    problems: list[Problem] = []
    if pool.availability_zone:
        if s.region is None:
            problems.append(
                Problem("region", ABSENT, f"set region: {at}.availability_zone pins an AZ")
            )
        elif not pool.availability_zone.startswith(s.region):
            problems.append(
                Problem(f"{at}.availability_zone", pool.availability_zone, f"not in {s.region}")
            )
        if s.vpc.vpc_id is None and pool.availability_zone not in s.vpc.availability_zones:
            problems.append(
                Problem(
                    f"{at}.availability_zone",
                    pool.availability_zone,
                    f"add it to vpc.availability_zones {list(s.vpc.availability_zones)}",
                )
            )
    if pool.subnet_ids and s.vpc.vpc_id is None:
        problems.append(
            Problem(f"{at}.subnet_ids", list(pool.subnet_ids), "only with an existing vpc.vpc_id")
        )
    if pool.capacity.kind != "on-demand" and not (pool.availability_zone or pool.subnet_ids):
        problems.append(
            Problem(
                f"{at}.availability_zone",
                ABSENT,
                f"{pool.capacity.kind} is AZ-bound: set availability_zone or subnet_ids",
            )
        )
    return problems


def _pool_efa_problems(at: str, pool: Trn2PoolSettings) -> list[Problem]:
    """EFA needs an instance type with EFA devices and one AZ for its placement group."""
    if not pool.efa:
        return []
    problems: list[Problem] = []
    if instance(pool.instance_type).efa_interfaces == 0:
        problems.append(
            Problem(
                f"{at}.efa",
                True,
                f"{pool.instance_type} has no EFA device: set {at}.efa=false, or use "
                "an instance type with EFA (trn2.48xlarge)",
            )
        )
    if not (pool.availability_zone or pool.subnet_ids):
        problems.append(
            Problem(
                f"{at}.efa",
                True,
                "EFA needs a cluster placement group in one AZ: set availability_zone",
            )
        )
    return problems


def _karpenter_pool_problems(at: str, pool: Trn2PoolSettings) -> list[Problem]:
    """Karpenter launches nodes for pending pods: no standing nodes, no EFA wiring."""
    problems: list[Problem] = []
    if pool.min_size or pool.desired_size:
        problems.append(
            Problem(
                f"{at}.min_size/desired_size",
                (pool.min_size, pool.desired_size),
                "Karpenter launches nodes for pending pods: use 0 and 0",
            )
        )
    if pool.efa:
        problems.append(Problem(f"{at}.efa", True, "EFA is wired for managed node groups only"))
    return problems


def _vpc_problems(s: DeploymentSettings) -> list[Problem]:
    """Named AZs need a region (and belong to it), an existing VPC needs account and region,
    and EKS needs two AZs."""
    problems: list[Problem] = []
    if s.vpc.availability_zones and s.region is None:
        problems.append(Problem("region", ABSENT, "set region: vpc.availability_zones names AZs"))
    if s.vpc.vpc_id and (s.account is None or s.region is None):
        problems.append(
            Problem("account/region", (s.account, s.region), "an existing vpc.vpc_id needs both")
        )
    if s.vpc.availability_zones and s.region:
        for az in s.vpc.availability_zones:
            if not az.startswith(s.region):
                problems.append(Problem("vpc.availability_zones", az, f"not in {s.region}"))
    if len(s.vpc.availability_zones) == 1:
        problems.append(
            Problem("vpc.availability_zones", list(s.vpc.availability_zones), "EKS needs >= 2 AZs")
        )
    return problems
