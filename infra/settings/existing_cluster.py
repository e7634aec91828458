"""Settings for bringing your own cluster: `cluster.existing` names an EKS cluster that already
runs Trn2 nodes, and the app then deploys only the serving workload onto it (no platform stack,
no node groups, no add-ons; docs/platform.md, "Existing cluster").

What the imported cluster needs in CDK (aws_eks_v2 2.275, `Cluster.from_cluster_attributes`): its
name, and a kubectl provider to apply manifests with. An imported cluster ignores
`kubectl_provider_options` (only a created `Cluster` builds a provider from them), so the serving
stack builds its own provider (`eks.KubectlProvider`, the same kubectl-v36 layer as the platform)
and hands it to the import. Its Lambda runs as `kubectl_role_arn` when given (a role that trusts
lambda.amazonaws.com and already has a cluster-admin access entry), else as a new role to which
the stack gives an EKS access entry with AmazonEKSClusterAdminPolicy (the cluster's
authentication mode must then allow access entries: API or API_AND_CONFIG_MAP).

The VPC's CIDR is a setting, not a lookup: the network policies need it (egress to the VPC's
interface endpoints, the internal NLB's sources) and a lookup would need credentials at synth.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator
from trnspec.boundary.aws_names import (
    eks_cluster_name_problem,
    iam_role_arn_problem,
    vpc_cidr_problem,
)
from trnspec.boundary.user_input import Text

__all__ = ["ClusterSettings", "ExistingClusterSettings", "vpc_cidr_problem"]


class ExistingClusterSettings(BaseModel):
    """An EKS cluster made elsewhere (eksctl, Terraform, another CDK app) with Trn2 nodes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Text
    """The EKS cluster's name (`aws eks list-clusters`)."""
    vpc_cidr: Text
    """The cluster VPC's IPv4 CIDR (`aws ec2 describe-vpcs`): the network policies allow the
    pods' egress to the VPC's endpoints and the internal NLB's sources from it."""
    kubectl_role_arn: Text | None = None
    """IAM role the serving stack's kubectl Lambda runs as: it must trust lambda.amazonaws.com
    and hold a cluster-admin access entry on the cluster. Unset: the stack makes the role and
    its access entry (the cluster's authentication mode must allow access entries)."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if (problem := eks_cluster_name_problem(v)) is not None:
            raise ValueError(problem)
        return v

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        if (problem := vpc_cidr_problem(v)) is not None:
            raise ValueError(problem)
        return v

    @field_validator("kubectl_role_arn")
    @classmethod
    def _role(cls, v: str | None) -> str | None:
        if v is not None and (problem := iam_role_arn_problem(v)) is not None:
            raise ValueError(
                f"{problem}; the role must trust lambda.amazonaws.com and have a cluster-admin "
                "access entry, or leave it unset for the stack to make one"
            )
        return v


class ClusterSettings(BaseModel):
    """Where the workload runs: on the cluster the platform stack makes (default), or on an
    existing one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    existing: ExistingClusterSettings | None = None
    """Set: deploy only the serving stack onto this cluster; every platform setting (VPC, pools,
    autoscaler, add-ons, admins) is then unused."""

    @field_validator("existing", mode="before")
    @classmethod
    def _section(cls, v: object) -> object:
        if v is not None and not isinstance(v, dict | ExistingClusterSettings):
            raise ValueError(
                "a section, not a value: -c cluster.existing.name=NAME "
                "-c cluster.existing.vpc_cidr=CIDR (and optionally kubectl_role_arn)"
            )
        return v
