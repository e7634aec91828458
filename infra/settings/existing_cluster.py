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

import ipaddress
import re

from pydantic import BaseModel, ConfigDict, field_validator
from trnspec.boundary.user_input import Text

#: EKS cluster names (CreateCluster API): 1-100 characters, a letter or digit first, then
#: letters, digits, hyphens and underscores.
_EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")


def vpc_cidr_problem(text: str) -> str | None:
    """Why `text` is not a VPC's IPv4 CIDR block (an address, a prefix length, no host bits), or
    None: the one rule for `cluster.existing.vpc_cidr` and `manifests --vpc-cidr`."""
    try:
        if "/" not in text:
            raise ValueError(text)
        net = ipaddress.IPv4Network(text, strict=False)
    except ValueError:
        return (
            "not an IPv4 CIDR: use the VPC's CidrBlock, e.g. 10.0.0.0/16 (aws ec2 "
            "describe-vpcs --vpc-ids VPC --query 'Vpcs[0].CidrBlock')"
        )
    if net.network_address != ipaddress.IPv4Address(text.partition("/")[0]):
        return f"has host bits set: use {net}"
    if str(net) != text:
        return f"not in the VPC's CidrBlock form: use {net}"
    return None


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
        if not _EKS_NAME.match(v):
            raise ValueError(
                "not an EKS cluster name (1-100 letters, digits, '-' or '_', a letter or digit "
                "first): use the name `aws eks list-clusters` prints"
            )
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
        if v is not None and not _ROLE_ARN.match(v):
            raise ValueError(
                "not an IAM role ARN: use arn:aws:iam::ACCOUNT:role/NAME of a role that trusts "
                "lambda.amazonaws.com and has a cluster-admin access entry, or leave it unset "
                "for the stack to make one"
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
