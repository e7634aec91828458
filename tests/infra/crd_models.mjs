// The models (and their validators) that the @kubernetes-models packages generate from the KEDA,
// Karpenter and Prometheus Operator CRD schemas (pinned in package.json), by apiVersion and kind.
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { NodePool } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool";
import { EC2NodeClass } from "@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";

const MODELS = [ScaledObject, NodePool, EC2NodeClass, ServiceMonitor, PodMonitor];

export function modelOf(obj) {
  return MODELS.find((m) => m.apiVersion === obj.apiVersion && m.kind === obj.kind);
}

export async function readStdinJson() {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  return JSON.parse(input);
}
