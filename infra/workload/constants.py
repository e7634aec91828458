"""Names shared by the workload manifests, the serving constructs and the platform's Neuron chart.

They live in one module because a mismatch between two of them (the scheduler the pods ask for and
the scheduler the Neuron chart installs, the taint the pods tolerate and the taint the node group
carries) fails silently on a real cluster: pods stay Pending with no error in CloudFormation.
"""

from __future__ import annotations

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

#: Labels and port of the neuron-monitor DaemonSet pods (Prometheus exporter), as in the Neuron
#: SDK's k8s-neuron-monitor-daemonset.yml. The platform's Neuron construct must keep these.
NEURON_MONITOR_POD_LABELS: dict[str, str] = {"app": "neuron-monitor"}
NEURON_MONITOR_PORT = 8000

#: Bucket layout. The serving role may read MODELS_PREFIX and COMPILE_CACHE_PREFIX; only the
#: precompile role may write, and only under COMPILE_CACHE_PREFIX.
MODELS_PREFIX = "models/"
COMPILE_CACHE_PREFIX = "compile-cache/"

#: Where the pod finds its serving config (the ConfigMap is mounted there).
CONFIG_DIR = "/etc/trnspec"
CONFIG_FILE = "serving.yaml"
#: Scratch space for staged weights and compiled artifacts (NVMe emptyDir or EBS ephemeral volume);
#: the engine stages under DATA_DIR/models and DATA_DIR/compiled (trnspec.render's defaults).
DATA_DIR = "/var/lib/trnspec"
#: The non-root user image/Dockerfile creates (`ARG TRNSPEC_UID`); a test keeps them equal.
IMAGE_UID = 10001

#: vLLM's OpenAI server: liveness/health and Prometheus endpoints.
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"

#: Seconds a terminating pod keeps serving before SIGTERM, so the Service/NLB stops routing new
#: requests to it first (endpoint and target deregistration are asynchronous).
DRAIN_SECONDS = 20

# Chart pins live in infra/addons/pins.py; the monitoring add-ons' names the workload addresses
# are the platform's (infra/addons/monitoring_contract.py).
from infra.addons.monitoring_contract import (  # noqa: E402, F401
    GRAFANA_DASHBOARD_LABEL,
    KEDA_NAMESPACE,
    KUBE_PROMETHEUS_STACK_FULLNAME,
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
