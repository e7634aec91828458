"""The deployment settings' typed models: one frozen pydantic model per section, every field
with a type, a default and a docstring. Field-level rules live on the fields; rules spanning
sections are in `cross_checks`, reading a profile and `-c` overrides in `loading`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from trnspec.boundary.aws_names import (
    account_problem,
    availability_zone_problem,
    iam_principal_arn_problem,
    region_problem,
    vpc_cidr_problem,
)
from trnspec.boundary.user_input import Int, Text, as_text
from trnspec.hardware.topology import INSTANCE_TYPES
from trnspec.plan.deployment_schema import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_LNC,
    DEFAULT_POOL_MAX_SIZE,
    DEFAULT_POOL_NAME,
    Lnc,
    PoolMaxSize,
    PoolNodes,
)

from infra.contracts import KUBECTL_PROVIDER_TIMEOUT_SECONDS, MAX_HELM_TIMEOUT_MINUTES
from infra.settings.existing_cluster import ClusterSettings

#: Kubernetes minors this app deploys: aws-cdk-lib 2.275 `aws_eks_v2.KubernetesVersion` has them
#: and the kubectl-v36 layer drives them (a test keeps this list in step with the library).
#: Not 1.34: it leaves EKS standard support on 2026-12-02 (EKS user guide, "Kubernetes version
#: lifecycle"), and the kubectl 1.36 client driving the cluster supports one minor of skew.
SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.35", "1.36")
DEFAULT_KUBERNETES_VERSION = SUPPORTED_KUBERNETES_VERSIONS[-1]

#: Newest amazon-eks-ami release checked to ship the AL2023 Neuron AMI for every supported
#: Kubernetes minor (amazon-eks-node-al2023-x86_64-neuron-1.34/1.35/1.36-v20260714 in the
#: awslabs/amazon-eks-ami CHANGELOG). Releases before 1.36 existed have no 1.36 AMI to resolve.
DEFAULT_KARPENTER_AMI_ALIAS = "al2023@v20260714"

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?$"
#: The largest prefix a new VPC takes here (its subnets: infra/platform/cluster/network.py).
NEW_VPC_PREFIX_MAX = 24
#: AWS tag limits (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html and
#: e.g. https://docs.aws.amazon.com/batch/latest/userguide/tag-restrictions.html): keys 1-128 and
#: values 0-256 Unicode characters of letters, digits, spaces and `_ . : / = + - @`; `aws:` is
#: reserved.
TAG_KEY_MAX, TAG_VALUE_MAX = 128, 256
#: A role session's ARN (what `aws sts get-caller-identity` prints), to name the role instead.
_SESSION = re.compile(r"arn:(aws[a-z-]*):sts::([0-9]{12}):assumed-role/([^/]+)/", re.ASCII)
_TAG_TEXT = re.compile(r"^[\w\s.:/=+\-@]*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _checked(value: str | None, rule: Callable[[str], str | None]) -> str | None:
    """`value` if the AWS identifier rule accepts it (None passes), else ValueError."""
    if value is not None and (problem := rule(value)) is not None:
        raise ValueError(problem)
    return value


def _known_trn2(value: str) -> str:
    if value not in INSTANCE_TYPES:
        raise ValueError(f"must be one of {', '.join(INSTANCE_TYPES)}")
    return value


class VpcSettings(_Frozen):
    """The network: a new VPC (default) or an existing one looked up by id."""

    vpc_id: Text | None = Field(default=None, pattern=r"^vpc-[0-9a-f]{8,17}$")
    """Existing VPC to use; needs `account` and `region` (a context lookup at synth)."""
    cidr: Text = "10.0.0.0/16"
    """CIDR of a new VPC (/16 to /24)."""
    availability_zones: tuple[Text, ...] = ()
    """AZs of a new VPC; empty means two AZs chosen at deploy time (env-agnostic synth)."""
    nat_gateways: Int = Field(default=1, ge=0, le=6)
    """NAT gateways of a new VPC; 0 leaves private subnets without internet egress."""

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        _checked(v, vpc_cidr_problem)
        if ipaddress.IPv4Network(v).prefixlen > NEW_VPC_PREFIX_MAX:
            raise ValueError(
                f"a new VPC here is /16 to /{NEW_VPC_PREFIX_MAX} (its subnets are /24 and /19):"
                " use e.g. 10.0.0.0/16"
            )
        return v

    @field_validator("availability_zones")
    @classmethod
    def _az_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [az for az in v if availability_zone_problem(az) is not None]
        if bad:
            raise ValueError(f"{bad} are not AZ names like us-east-2a")
        if len(set(v)) != len(v):
            raise ValueError("duplicate AZs")
        return v


class CapacitySettings(_Frozen):
    """How a Trn2 pool gets its instances."""

    kind: Literal["on-demand", "capacity-block", "reservation"] = "on-demand"
    """on-demand, an EC2 Capacity Block for ML, or an On-Demand Capacity Reservation (ODCR)."""
    reservation_id: Text | None = Field(default=None, pattern=r"^cr-[0-9a-f]{17}$")
    """The cr-... id of the capacity block or reservation; required unless on-demand."""
    placement_group: Text | None = Field(default=None, pattern=r"^[A-Za-z0-9._:+=@/-]{1,255}$")
    """Name of the cluster placement group a `reservation` was created in (an ODCR made in a
    placement group launches only into it); an EFA pool of that kind uses it instead of a new
    group. A capacity block needs none: EC2 places its instances together in an UltraCluster."""

    @model_validator(mode="after")
    def _reservation_matches_kind(self) -> CapacitySettings:
        if self.kind == "on-demand" and self.reservation_id is not None:
            raise ValueError("reservation_id is only for kind capacity-block or reservation")
        if self.kind != "on-demand" and self.reservation_id is None:
            raise ValueError(f"kind {self.kind} needs reservation_id (cr-...)")
        if self.placement_group is not None and self.kind != "reservation":
            raise ValueError(
                f"placement_group names a reservation's group; kind {self.kind} takes none"
            )
        return self


class Trn2PoolSettings(_Frozen):
    """One Trn2 node pool (a managed node group, or a Karpenter NodePool)."""

    name: Text = Field(pattern=_DNS_LABEL)
    """Short DNS-label name; the node group is named <cluster_name>-<name>."""
    instance_type: Text = DEFAULT_INSTANCE_TYPE
    """trn2.48xlarge, trn2u.48xlarge or trn2.3xlarge (the table in trnspec.hardware.topology)."""
    min_size: PoolNodes = 0
    """Minimum nodes; 0 lets the autoscaler release every Trn2 node."""
    desired_size: PoolNodes = 0
    """Nodes at deploy time (the autoscaler owns it afterwards)."""
    max_size: PoolMaxSize = DEFAULT_POOL_MAX_SIZE
    """Upper bound for the autoscaler."""
    capacity: CapacitySettings = CapacitySettings()
    """On-demand, capacity block or capacity reservation."""
    availability_zone: Text | None = None
    """Pin the pool to one AZ (reservations are AZ-bound); needs `region`."""
    subnet_ids: tuple[Text, ...] = ()
    """Pin the pool to these subnets of an existing VPC instead of an AZ."""
    efa: bool = False
    """ENA on the primary interface and an EFA-only interface on every EFA network card of the
    type; on-demand pools get a new cluster placement group, reserved ones use their own."""
    lnc: Lnc = DEFAULT_LNC
    """Logical NeuronCore config written to the node (2 is the Trn2 default)."""
    root_volume_gib: Int | None = Field(default=None, ge=20, le=16384)
    """Root gp3 volume; None sizes it for what it holds (infra/platform/cluster/root_volume.py):
    the OS alone where the kubelet is on the instance store, else 512 GiB of images and
    compiled artifacts."""
    labels: dict[Text, Text] = {}
    """Extra Kubernetes node labels."""

    @field_validator("instance_type")
    @classmethod
    def _instance_type(cls, v: str) -> str:
        return _known_trn2(v)

    @field_validator("availability_zone")
    @classmethod
    def _az(cls, v: str | None) -> str | None:
        return _checked(v, availability_zone_problem)

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [s for s in v if not re.match(r"^subnet-[0-9a-f]{8,17}$", s)]
        if bad:
            raise ValueError(f"{bad} are not subnet ids (subnet-...)")
        return v

    @model_validator(mode="after")
    def _sizes(self) -> Trn2PoolSettings:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"needs min_size <= desired_size <= max_size, got "
                f"{self.min_size} <= {self.desired_size} <= {self.max_size}"
            )
        if self.availability_zone and self.subnet_ids:
            raise ValueError("set availability_zone or subnet_ids, not both")
        return self


class SystemNodeGroupSettings(_Frozen):
    """The small x86 node group for CoreDNS, autoscaler, Karpenter and Neuron control pods."""

    instance_type: Text = Field(default="m7i.large", pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
    """EC2 type of the system nodes."""
    min_size: Int = Field(default=2, ge=1, le=10)
    """At least one node: the autoscaler itself runs here."""
    desired_size: Int = Field(default=2, ge=1, le=10)
    """Nodes at deploy time."""
    max_size: Int = Field(default=3, ge=1, le=10)
    """Upper bound."""
    disk_gib: Int = Field(default=50, ge=20, le=1000)
    """Root volume size."""

    @model_validator(mode="after")
    def _sizes(self) -> SystemNodeGroupSettings:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"needs min_size <= desired_size <= max_size, got "
                f"{self.min_size} <= {self.desired_size} <= {self.max_size}"
            )
        return self


class NeuronSettings(_Frozen):
    """Which parts of the Neuron stack are installed next to the device plugin."""

    scheduler_extension: bool = True
    """Neuron scheduler extension (contiguous core allocation; pods opt in by schedulerName).
    The workload schedules through it, so it must stay on (docs/platform.md, "Neuron
    scheduling")."""
    node_problem_detector: bool = True
    """Neuron node problem detector (marks nodes with hardware errors)."""
    monitor: bool = True
    """neuron-monitor DaemonSet exporting Prometheus metrics on port 8000."""


class AddonSettings(_Frozen):
    """How the platform's cluster add-ons are installed (versions: platform/addons/pins.py)."""

    helm_timeout_minutes: Int = Field(default=MAX_HELM_TIMEOUT_MINUTES, ge=5)
    """How long a deploy waits for each Helm release to be ready before it fails and rolls
    back: at most MAX_HELM_TIMEOUT_MINUTES, so Helm reports before the kubectl provider's
    15-minute Lambda is killed (infra/contracts.py)."""
    prometheus_volume_gib: Int = Field(default=100, ge=10, le=16384)
    """Size of Prometheus' gp3 volume (its TSDB)."""
    prometheus_retention_days: Int = Field(default=15, ge=1, le=3650)
    """How long Prometheus keeps samples (it also drops old blocks at 90 % of the volume)."""

    @field_validator("helm_timeout_minutes")
    @classmethod
    def _helm_wait_ends_before_the_lambda(cls, minutes: int) -> int:
        if minutes > MAX_HELM_TIMEOUT_MINUTES:
            raise ValueError(
                f"at most {MAX_HELM_TIMEOUT_MINUTES}: Helm must report before the kubectl "
                f"provider's {KUBECTL_PROVIDER_TIMEOUT_SECONDS // 60}-minute Lambda is killed "
                "(then CloudFormation waits an hour to roll back); set "
                f"addons.helm_timeout_minutes={MAX_HELM_TIMEOUT_MINUTES} or less"
            )
        return minutes


class DeploymentSettings(_Frozen):
    """Everything the platform stack needs; built by `load_settings`."""

    stack_name: Text = Field(default="TrnspecPlatform", pattern=r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
    """CloudFormation stack name."""
    cluster_name: Text = Field(default="trnspec", pattern=r"^[a-zA-Z][a-zA-Z0-9-]{0,62}$")
    """EKS cluster name (also the autoscaler/Karpenter discovery tag value)."""
    account: Text | None = None
    """Target account; only needed for existing-VPC lookups and AZ pinning."""
    region: Text | None = None
    """Target region; only needed for existing-VPC lookups and AZ pinning."""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    """Kubernetes minor: one of SUPPORTED_KUBERNETES_VERSIONS."""
    endpoint_access: Literal["public-and-private", "private"] = "public-and-private"
    """API server endpoint: reachable publicly and from the VPC, or from the VPC only."""
    admin_principal_arns: tuple[Text, ...] = ()
    """IAM role/user ARNs given cluster-admin access entries."""
    vpc: VpcSettings = VpcSettings()
    """New or existing VPC."""
    system_nodes: SystemNodeGroupSettings = SystemNodeGroupSettings()
    """The non-Trn2 node group."""
    trn2_pools: tuple[Trn2PoolSettings, ...] = Field(
        default=(Trn2PoolSettings(name=DEFAULT_POOL_NAME),), min_length=1
    )
    """Trn2 node pools; names must be unique."""
    autoscaler: Literal["cluster-autoscaler", "karpenter"] = "cluster-autoscaler"
    """Node autoscaler: Cluster Autoscaler over managed node groups, or Karpenter NodePools."""
    karpenter_ami_alias: str = Field(
        default=DEFAULT_KARPENTER_AMI_ALIAS, pattern=r"^al2023@(latest|v[0-9]{8})$"
    )
    """EKS AL2023 AMI release Karpenter launches Trn2 nodes from (it picks the Neuron variant);
    pinned so nodes do not drift with every AMI release. `al2023@latest` follows releases."""
    neuron: NeuronSettings = NeuronSettings()
    """Neuron Helm chart components."""
    addons: AddonSettings = AddonSettings()
    """Helm wait budget and Prometheus storage."""
    tags: dict[Text, Text] = {"project": "trnspec"}
    """Tags on every taggable resource (AWS limits: key 1-128, value 0-256 characters)."""
    serving: dict[str, Any] | None = None
    """The workload's section, validated by infra.settings.serving, not here."""
    cluster: ClusterSettings = ClusterSettings()
    """The platform's own cluster (default), or `cluster.existing`: an EKS cluster made elsewhere
    onto which only the serving stack deploys."""

    @field_validator("account")
    @classmethod
    def _account(cls, v: str | None) -> str | None:
        return _checked(v, account_problem)

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        return _checked(v, region_problem)

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> str:
        text = str(as_text(v))  # `-c kubernetes_version=1.30` is "1.30", not the float 1.3
        if text not in SUPPORTED_KUBERNETES_VERSIONS:
            raise ValueError(f"must be one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}")
        return text

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [
            f"{k!r} (key)" if not 1 <= len(k) <= TAG_KEY_MAX or not _TAG_TEXT.match(k) else ""
            for k in v
        ] + [
            f"{val[:20]!r}... (value of {k!r})"
            if len(val) > TAG_VALUE_MAX or not _TAG_TEXT.match(val)
            else ""
            for k, val in v.items()
        ]
        bad += [f"{k!r} (reserved aws: prefix)" for k in v if k.lower().startswith("aws:")]
        bad = [b for b in bad if b]
        if bad:
            raise ValueError(
                f"{', '.join(bad[:5])}: AWS tags allow keys of 1-{TAG_KEY_MAX} and values of "
                f"0-{TAG_VALUE_MAX} letters, digits, spaces and _ . : / = + - @, no aws: prefix"
            )
        return v

    @field_validator("admin_principal_arns", mode="before")
    @classmethod
    def _one_arn(cls, v: object) -> object:
        """`-c admin_principal_arns=arn:aws:iam::...:role/NAME` (no brackets) names one ARN;
        several need the list form, which the message shows."""
        if isinstance(v, str):
            if "," in v and v.count("arn:") > 1:
                raise ValueError(
                    "several ARNs go in a list: -c admin_principal_arns='[ARN1,ARN2]' "
                    "(one ARN may be given bare)"
                )
            return (v.strip(),)
        return v

    @field_validator("admin_principal_arns")
    @classmethod
    def _arns(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [a for a in v if iam_principal_arn_problem(a) is not None]
        sessions = [_SESSION.match(a) for a in bad]
        roles = [f"arn:{m[1]}:iam::{m[2]}:role/{m[3]}" for m in sessions if m]
        if roles:
            raise ValueError(
                f"{bad} are role sessions (aws sts get-caller-identity), not IAM ARNs: pass the "
                f"role, {roles} (with its path if it has one)"
            )
        if bad:
            raise ValueError(f"{bad[0]!r}: {iam_principal_arn_problem(bad[0])}")
        return v
