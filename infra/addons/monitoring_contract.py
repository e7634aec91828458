"""What the platform's monitoring promises the workload: where Prometheus answers and which
ConfigMaps Grafana loads. Pure names, so the manifest builders import them without CDK."""

from __future__ import annotations

#: `fullnameOverride` of kube-prometheus-stack: fixes the Prometheus Service name to
#: "<this>-prometheus" so the KEDA trigger can address it.
KUBE_PROMETHEUS_STACK_FULLNAME = "kps"
PROMETHEUS_PORT = 9090
#: Namespace of KEDA's operator and metrics server.
KEDA_NAMESPACE = "keda"
#: Grafana's dashboard sidecar (kube-prometheus-stack default) loads ConfigMaps with this label.
GRAFANA_DASHBOARD_LABEL = ("grafana_dashboard", "1")
#: Labels and port of the neuron-monitor DaemonSet pods (Prometheus exporter), as in the Neuron
#: SDK's k8s-neuron-monitor-daemonset.yml; the workload's PodMonitor selects them.
NEURON_MONITOR_POD_LABELS: dict[str, str] = {"app": "neuron-monitor"}
NEURON_MONITOR_PORT = 8000
