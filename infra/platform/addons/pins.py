"""Every chart and image the platform installs, pinned, with the Kubernetes minors each supports.

One table (`PINS`) so a version bump is one line and the compatibility check reads the same data
as the constructs. Each pin names its source: where the supported range was read. Synth refuses a
cluster version outside the range of any pin an installed add-on uses (`compatibility_problems`).

EKS add-ons (vpc-cni, kube-proxy, coredns, eks-pod-identity-agent, aws-ebs-csi-driver) are not
pinned: EKS installs its default build for the cluster's version, which EKS keeps compatible
(a pinned build would break on a version bump). They are listed for the docs' table.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@dataclass(frozen=True)
class KubeRange:
    """Kubernetes minors an artifact supports; `max` None means no upper bound is published."""

    min: str
    max: str | None = None

    def contains(self, version: str) -> bool:
        v = _minor(version)
        return _minor(self.min) <= v and (self.max is None or v <= _minor(self.max))

    def __str__(self) -> str:
        return f"{self.min} to {self.max}" if self.max else f">= {self.min}"


@dataclass(frozen=True)
class ChartPin:
    """A Helm chart at one version."""

    addon: str
    """Add-on name (a module of infra/platform/addons or a platform construct)."""
    chart: str
    repository: str
    version: str
    kubernetes: KubeRange
    source: str
    """Where the supported range comes from."""


@dataclass(frozen=True)
class ImagePin:
    """A container image whose tag follows the cluster's minor (one tag per supported minor)."""

    addon: str
    repository: str
    tags: dict[str, str] = field(default_factory=dict)
    source: str = ""

    def tag_for(self, kubernetes_version: str) -> str:
        return self.tags[kubernetes_version]

    @property
    def kubernetes(self) -> KubeRange:
        minors = sorted(self.tags, key=_minor)
        return KubeRange(minors[0], minors[-1])


@dataclass(frozen=True)
class EksAddonPin:
    """An EKS managed add-on at EKS's default build for the cluster version."""

    addon: str
    name: str
    source: str = "EKS picks the add-on build for the cluster version (DescribeAddonVersions)"


NEURON_CHART = ChartPin(
    addon="neuron",
    chart="neuron-helm-chart",
    repository="oci://public.ecr.aws/neuron/neuron-helm-chart",
    # Ships device plugin / scheduler 2.32.0.0 and lists trn2 types by default.
    version="1.10.0",
    # The chart declares no kubeVersion; its scheduler extension runs the kube-scheduler image
    # below, one build per minor, which bounds the range.
    kubernetes=KubeRange("1.35", "1.36"),
    source="no kubeVersion in the chart; bounded by the kube-scheduler builds pinned below",
)
#: kube-scheduler for the Neuron scheduler extension, one EKS Distro build per cluster minor:
#: Kubernetes' skew policy allows a kube-scheduler at most one minor older than the API server,
#: and the chart's default (v1.31.12-eks-1-31-30 in chart 1.9.0 and 1.10.0) is five behind 1.36.
NEURON_KUBE_SCHEDULER = ImagePin(
    addon="neuron",
    repository="public.ecr.aws/eks-distro/kubernetes/kube-scheduler",
    tags={
        "1.35": "v1.35.6-eks-1-35-13",
        "1.36": "v1.36.2-eks-1-36-7",
    },
    source=(
        "aws/eks-distro docs/contents/releases/<minor>/<release>/index.md, newest documented "
        "release per minor (1-35 release 13, 1-36 release 7; August 2026)"
    ),
)
NEURON_MONITOR_IMAGE = "public.ecr.aws/neuron/neuron-monitor:1.3.0"

CLUSTER_AUTOSCALER_CHART = ChartPin(
    addon="cluster_autoscaler",
    chart="cluster-autoscaler",
    repository="https://kubernetes.github.io/autoscaler",
    # Defaults to image v1.35.0; the image is chosen per minor below. Its ClusterRole grants
    # watch/list/get on resource.k8s.io deviceclasses, resourceslices and resourceclaims (and
    # storage.k8s.io volumeattachments), every rule of v1.36.1's own AWS example
    # (cloudprovider/aws/examples/cluster-autoscaler-autodiscover.yaml); charts from
    # CLUSTER_AUTOSCALER_DRA_RBAC_SINCE on have them.
    version="9.59.0",
    kubernetes=KubeRange("1.35", "1.36"),
    source="bounded by the per-minor image table below",
)
#: First cluster-autoscaler chart whose ClusterRole reads the `resource.k8s.io` API
#: (templates/clusterrole.yaml at tag cluster-autoscaler-chart-9.54.0; 9.53.0 lacks it): the
#: 1.36 autoscaler's scheduler simulation lists DeviceClasses, ResourceSlices and
#: ResourceClaims, and without the rule it is refused by the API server.
CLUSTER_AUTOSCALER_DRA_RBAC_SINCE = "9.54.0"
#: The autoscaler minor must match the cluster minor (its scheduler simulation is vendored).
CLUSTER_AUTOSCALER_IMAGE = ImagePin(
    addon="cluster_autoscaler",
    repository="registry.k8s.io/autoscaling/cluster-autoscaler",
    tags={"1.35": "v1.35.0", "1.36": "v1.36.1"},
    source="kubernetes/autoscaler README 'Releases' (one minor per Kubernetes minor)",
)

KARPENTER_CHART = ChartPin(
    addon="karpenter",
    chart="karpenter",
    repository="oci://public.ecr.aws/karpenter/karpenter",
    # 1.14.x: capacity blocks and ODCRs as the `reserved` capacity type (ReservedCapacity gate).
    version="1.14.1",
    kubernetes=KubeRange("1.30", "1.36"),
    source="karpenter.sh compatibility matrix as published at v1.14.1 "
    "(website/content/en/docs/upgrading/compatibility.md: Kubernetes 1.30 to 1.36; the "
    "generator's compatibility.yaml says minK8sVersion 1.26, which no published table shows)",
)
#: Karpenter's CRDs as their own release: Helm never upgrades a chart's crds/ directory.
KARPENTER_CRD_CHART = ChartPin(
    addon="karpenter",
    chart="karpenter-crd",
    repository="oci://public.ecr.aws/karpenter/karpenter-crd",
    version=KARPENTER_CHART.version,
    kubernetes=KARPENTER_CHART.kubernetes,
    source="same release as the karpenter chart (karpenter.sh upgrade guide, 'CRD Upgrades')",
)

KEDA_CHART = ChartPin(
    addon="keda",
    chart="keda",
    repository="https://kedacore.github.io/charts",
    # KEDA 2.21 is the first release listed for Kubernetes 1.36 (2.20 stops at 1.35).
    version="2.21.0",
    kubernetes=KubeRange("1.34", "1.36"),
    source="keda.sh/docs/2.22/operate/cluster 'Kubernetes Compatibility' (v2.21: v1.34 - v1.36)",
)

#: The KEDA HTTP add-on: interceptor proxy, external scaler and operator (InterceptorRoute CRD).
#: Installed when a workload scales to zero, so a request at zero replicas wakes it.
KEDA_HTTP_CHART = ChartPin(
    addon="keda_http",
    chart="keda-add-ons-http",
    repository="https://kedacore.github.io/charts",
    # App 0.16.0 (chart released 2026-09-16, kedacore/charts#908). Not 0.15.0:
    # - kedacore/http-add-on#1692 (0.15.0 regression: after ~33 min idle one held request's
    #   `requestRate` rounds to 0, so nothing activates and the request gets 504) is fixed by
    #   #1708 (rounding precision 3 -> 6, merged 2026-07-15, "Fixes #1692");
    # - #1730 (the scaler crash-loops when one interceptor stops answering /queue) is fixed by
    #   #1729 (each fetch bounded by the queue tick; keda-docs#1831: "not in v0.15.0").
    # InterceptorRoute stays http.keda.sh/v1beta1; 0.16.0 only adds fields (`staticRoutes`,
    # `coldStart.maxPendingRequests` and `overflow`), none of which the workload sets, and the
    # chart's interceptor shutdown values keep their names. The `external-push` trigger and its
    # gRPC protocol are KEDA core's, unchanged in 2.21 (the KEDA pinned above).
    version="0.16.0",
    kubernetes=KubeRange("1.34", "1.36"),
    source="kedacore/http-add-on .github/workflows/e2e-tests.yaml (kind v1.34.3, v1.35.1, "
    "v1.36.1 at v0.15.0 and on main through June 2026; the v0.16.0 file was not readable here); "
    "chart kubeVersion >=1.23 (kedacore/charts http-add-on/Chart.yaml)",
)
KUBE_PROMETHEUS_STACK_CHART = ChartPin(
    addon="prometheus",
    chart="kube-prometheus-stack",
    repository="https://prometheus-community.github.io/helm-charts",
    version="88.5.3",
    kubernetes=KubeRange("1.25"),
    source="prometheus-community/helm-charts kube-prometheus-stack Chart.yaml "
    "(kubeVersion >=1.25.0-0)",
)

AWS_LOAD_BALANCER_CONTROLLER_CHART = ChartPin(
    addon="aws_load_balancer_controller",
    chart="aws-load-balancer-controller",
    repository="https://aws.github.io/eks-charts",
    # appVersion v3.5.0
    version="3.5.0",
    kubernetes=KubeRange("1.22"),
    source="kubernetes-sigs/aws-load-balancer-controller docs/deploy/installation.md "
    "(v2.5.0+ requires Kubernetes 1.22+)",
)

EBS_CSI_DRIVER = EksAddonPin(addon="ebs_csi", name="aws-ebs-csi-driver")

#: Every chart and per-minor image, for the compatibility check and the docs' table.
PINS: tuple[ChartPin | ImagePin, ...] = (
    NEURON_CHART,
    NEURON_KUBE_SCHEDULER,
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_IMAGE,
    KARPENTER_CHART,
    KARPENTER_CRD_CHART,
    KEDA_CHART,
    KEDA_HTTP_CHART,
    KUBE_PROMETHEUS_STACK_CHART,
    AWS_LOAD_BALANCER_CONTROLLER_CHART,
)


def pin_name(pin: ChartPin | ImagePin) -> str:
    if isinstance(pin, ChartPin):
        return f"chart {pin.chart} {pin.version}"
    return f"image {pin.repository}"


def compatibility_problems(
    kubernetes_version: str,
    addons: frozenset[str],
    pins: tuple[ChartPin | ImagePin, ...] = PINS,
) -> list[str]:
    """One line per pin of an installed add-on that does not support `kubernetes_version`."""
    return [
        f"add-on {pin.addon}: {pin_name(pin)} supports Kubernetes {pin.kubernetes}, "
        f"not {kubernetes_version} (source: {pin.source})"
        for pin in pins
        if pin.addon in addons and not pin.kubernetes.contains(kubernetes_version)
    ]


def markdown_table(pins: tuple[ChartPin | ImagePin, ...] = PINS) -> str:
    """The compatibility table of docs/platform.md (a test keeps the docs equal to it)."""
    rows = [
        "| add-on | artifact | version | Kubernetes | source |",
        "|---|---|---|---|---|",
    ]
    for pin in pins:
        if isinstance(pin, ChartPin):
            artifact, version = f"chart `{pin.chart}` ({pin.repository})", pin.version
        else:
            artifact = f"image `{pin.repository}`"
            version = ", ".join(f"{k}: `{v}`" for k, v in sorted(pin.tags.items()))
        rows.append(f"| {pin.addon} | {artifact} | {version} | {pin.kubernetes} | {pin.source} |")
    return "\n".join(rows)
