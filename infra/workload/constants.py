"""Names shared by the workload manifests, the serving constructs and the platform's Neuron chart.

They live in one module because a mismatch between two of them (the scheduler the pods ask for and
the scheduler the Neuron chart installs, the taint the pods tolerate and the taint the node group
carries) fails silently on a real cluster: pods stay Pending with no error in CloudFormation.
"""

from __future__ import annotations

# The pod contract (data dir, image user, vLLM's health and metrics paths) is the engine's, in an
# import-free module: re-exported here so the manifest builders keep importing one module.
from trnspec.pod_contract import DATA_DIR, HEALTH_PATH, IMAGE_UID, METRICS_PATH  # noqa: F401

# The node contract (taint, device resource, scheduler name, node labels) is the platform's:
# re-exported here so the manifest builders keep importing one module.
from infra.addons.node_contract import (  # noqa: F401
    INSTANCE_TYPE_LABEL,
    LNC_NODE_LABEL,
    NEURON_DEVICE_RESOURCE,
    NEURON_SCHEDULER_NAME,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NEURON_TAINT_VALUE,
)

#: Bucket layout. The serving role may read MODELS_PREFIX and COMPILE_CACHE_PREFIX; only the
#: precompile role may write, and only under COMPILE_CACHE_PREFIX.
MODELS_PREFIX = "models/"
COMPILE_CACHE_PREFIX = "compile-cache/"

#: Where the pod finds its serving config (the ConfigMap is mounted there).
CONFIG_DIR = "/etc/trnspec"
CONFIG_FILE = "serving.yaml"
# DATA_DIR (trnspec.pod_contract): scratch space for staged weights and compiled artifacts (NVMe
# emptyDir or EBS ephemeral volume); the engine stages under DATA_DIR/models and DATA_DIR/compiled.

#: Seconds a terminating pod keeps serving before SIGTERM, so the Service/NLB stops routing new
#: requests to it first (endpoint and target deregistration are asynchronous).
DRAIN_SECONDS = 20

# Chart pins live in infra/addons/pins.py; the monitoring add-ons' names the workload addresses
# are the platform's (infra/addons/monitoring_contract.py).
from infra.addons.monitoring_contract import (  # noqa: E402, F401
    GRAFANA_DASHBOARD_LABEL,
    KEDA_NAMESPACE,
    KUBE_PROMETHEUS_STACK_FULLNAME,
    NEURON_MONITOR_POD_LABELS,
    NEURON_MONITOR_PORT,
    PROMETHEUS_PORT,
)

#: Kubernetes minor version the manifests are validated against (kubernetes-validate --strict).
VALIDATED_KUBERNETES_VERSION = "1.36.0"

#: Common label keys.
APP_LABEL = "app.kubernetes.io/name"
COMPONENT_LABEL = "app.kubernetes.io/component"
PART_OF_LABEL = "app.kubernetes.io/part-of"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
PART_OF = "trnspec"

#: Names the network policies address (docs/workload.md, "Security").
#: CoreDNS pods in kube-system carry `k8s-app: kube-dns` on EKS (the CoreDNS add-on keeps the
#: kube-dns label for compatibility); every namespace carries kubernetes.io/metadata.name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DNS_NAMESPACE = "kube-system"
DNS_POD_LABELS: dict[str, str] = {"k8s-app": "kube-dns"}
DNS_PORT = 53
#: The EKS Pod Identity agent: a hostNetwork DaemonSet listening on this link-local address and
#: port 80 (IPv4; [fd00:ec2::23] on IPv6), where the SDKs fetch the pod's credentials
#: (AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.23/v1/credentials; EKS user guide,
#: "Set up the Amazon EKS Pod Identity Agent").
POD_IDENTITY_AGENT_CIDR = "169.254.170.23/32"
POD_IDENTITY_AGENT_PORT = 80
HTTPS_PORT = 443
#: Prometheus Operator labels every Prometheus pod with the name of its Prometheus object
#: (prometheus-operator pkg/prometheus/server statefulset.go: podSelectorLabels).
PROMETHEUS_OPERATOR_NAME_LABEL = "operator.prometheus.io/name"
#: Private (RFC 1918) and link-local IPv4 ranges: cut out of the pods' HTTPS-to-S3 rule, so it
#: cannot reach other private networks or the instance metadata service (the VPC CIDR is opened
#: separately, for the interface endpoints).
NON_PUBLIC_IPV4_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16")
