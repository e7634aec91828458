"""The contracts between the platform, the workload and the engine: one module of names.

A mismatch between two of them (the scheduler the pods ask for and the scheduler the Neuron chart
installs, the taint the pods tolerate and the taint the node group carries, the Prometheus service
the KEDA trigger addresses) fails silently on a real cluster: pods stay Pending, or never scale,
while CloudFormation reports success. So each name is defined once, here, and both sides import it.
Pure names: no CDK, no I/O. Chart pins live in infra/platform/addons/pins.py.
"""

from __future__ import annotations

# The pod contract (data dir, image user, vLLM's health and metrics paths) is the engine's, in an
# import-free module: re-exported so the manifest builders import one module of names.
from trnspec.config.pod_contract import DATA_DIR, HEALTH_PATH, IMAGE_UID, METRICS_PATH  # noqa: F401

# --- The node contract: what a Trn2 node offers a pod and what a pod must say to land on one.
# The platform defines it (node pools set the taint and labels, the Neuron chart advertises the
# device resources and runs the scheduler); the workload asks for it.

#: Name of the Neuron scheduler extension's kube-scheduler. The Neuron Helm chart deploys it
#: under `scheduler.customScheduler.fullnameOverride` (chart default "my-scheduler"); the Neuron
#: construct passes this constant, and pods name it in `schedulerName`.
NEURON_SCHEDULER_NAME = "my-scheduler"

#: Extended resource the Neuron device plugin advertises: one unit per Trainium2 chip.
NEURON_DEVICE_RESOURCE = "aws.amazon.com/neuron"
#: Extended resource for (logical) NeuronCores.
NEURON_CORE_RESOURCE = "aws.amazon.com/neuroncore"
#: Taint on every Trn2 node (key, value, effect), so only Neuron workloads land there.
NEURON_TAINT_KEY = "aws.amazon.com/neuron"
NEURON_TAINT_VALUE = "true"
NEURON_TAINT_EFFECT = "NoSchedule"
#: Well-known node label; works for managed node groups and Karpenter alike.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: Node label carrying the node's logical NeuronCore config ("1" or "2"), set by the Trn2 pools:
#: a TP group compiled for LNC=2 must not land on an LNC=1 node.
LNC_NODE_LABEL = "trnspec.io/lnc"

# --- The monitoring contract: where Prometheus answers and which ConfigMaps Grafana loads.

#: `fullnameOverride` of kube-prometheus-stack: fixes the Prometheus Service name to
#: "<this>-prometheus" so the KEDA trigger can address it.
KUBE_PROMETHEUS_STACK_FULLNAME = "kps"
PROMETHEUS_PORT = 9090
#: Namespace of KEDA's operator and metrics server.
KEDA_NAMESPACE = "keda"

# --- The deploy's clock for Helm releases: the settings bound the wait, the platform sets it.

#: Timeout of the kubectl provider's handler Lambda, which runs `helm upgrade --wait` for every
#: chart (aws-cdk-lib 2.275 aws-eks-v2/lib/kubectl-provider.js: `timeout: Duration.minutes(15)`;
#: 15 minutes is also Lambda's ceiling). When Helm is still waiting at this point the Lambda is
#: killed, no answer reaches CloudFormation, and the stack waits for the custom resource's own
#: timeout (one hour) before it rolls back.
KUBECTL_PROVIDER_TIMEOUT_SECONDS = 900
#: What the handler spends besides Helm's wait: cold start, kubeconfig, pulling the chart, and
#: reporting Helm's error back; a release's wait ends at least this long before the Lambda's.
HELM_TIMEOUT_MARGIN_SECONDS = 120
#: Longest Helm wait a deploy may ask for (`addons.helm_timeout_minutes`): 13 minutes.
MAX_HELM_TIMEOUT_MINUTES = (KUBECTL_PROVIDER_TIMEOUT_SECONDS - HELM_TIMEOUT_MARGIN_SECONDS) // 60
#: Grafana's dashboard sidecar (kube-prometheus-stack default) loads ConfigMaps with this label.
GRAFANA_DASHBOARD_LABEL = ("grafana_dashboard", "1")
#: Labels and port of the neuron-monitor DaemonSet pods (Prometheus exporter), as in the Neuron
#: SDK's k8s-neuron-monitor-daemonset.yml; the workload's PodMonitor selects them.
NEURON_MONITOR_POD_LABELS: dict[str, str] = {"app": "neuron-monitor"}
NEURON_MONITOR_PORT = 8000

# --- The workload's names: shared by the manifests, the serving constructs and the Neuron chart.


#: Bucket layout. The serving and precompile roles read MODELS_PREFIX and read and write
#: COMPILE_CACHE_PREFIX (a serving pod that compiled publishes its compile); only the weights role
#: writes MODELS_PREFIX.
MODELS_PREFIX = "models/"
COMPILE_CACHE_PREFIX = "compile-cache/"

#: Where the pod finds its serving config (the ConfigMap is mounted there).
CONFIG_DIR = "/etc/trnspec"
CONFIG_FILE = "serving.yaml"
# DATA_DIR (trnspec.config.pod_contract): scratch space for staged weights and compiled artifacts
# (NVMe
# emptyDir or EBS ephemeral volume); the engine stages under DATA_DIR/models and DATA_DIR/compiled.

#: Seconds a terminating pod keeps serving before SIGTERM, so the Service/NLB stops routing new
#: requests to it first (endpoint and target deregistration are asynchronous).
DRAIN_SECONDS = 20

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

# --- The wake contract: the KEDA HTTP add-on (chart keda-add-ons-http, release in KEDA_NAMESPACE)
# that holds requests while KEDA scales the serving Deployment from zero. Service names come
# from the chart's templates ("{{ .Chart.Name }}-<service>", kedacore/charts http-add-on
# templates/interceptor/service-proxy.yaml, templates/scaler/service.yaml, values.yaml at 0.15.0);
# pod labels from the same templates (component + name, plus the release's matchLabels).

#: Helm release name of the HTTP add-on (its pods' app.kubernetes.io/instance).
KEDA_HTTP_RELEASE = "http-add-on"
#: The interceptor's proxy Service and port: clients of a workload that scales to zero send here.
KEDA_HTTP_INTERCEPTOR_SERVICE = "keda-add-ons-http-interceptor-proxy"
KEDA_HTTP_PROXY_PORT = 8080
#: The interceptor's admin port (the scaler reads its request counts there).
KEDA_HTTP_ADMIN_PORT = 9090
#: The external scaler KEDA asks (gRPC) whether a route has requests: `external-push` triggers
#: name it in `scalerAddress`.
KEDA_HTTP_SCALER_ADDRESS = f"keda-add-ons-http-external-scaler.{KEDA_NAMESPACE}:9090"
#: Labels of the interceptor pods and of the scaler pods.
KEDA_HTTP_INTERCEPTOR_POD_LABELS: dict[str, str] = {
    "app.kubernetes.io/component": "interceptor",
    "app.kubernetes.io/name": "http-add-on",
    "app.kubernetes.io/instance": KEDA_HTTP_RELEASE,
}
KEDA_HTTP_SCALER_POD_LABELS: dict[str, str] = {
    "app.kubernetes.io/component": "scaler",
    "app.kubernetes.io/name": "http-add-on",
    "app.kubernetes.io/instance": KEDA_HTTP_RELEASE,
}
