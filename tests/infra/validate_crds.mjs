// Validates custom resources (KEDA, Karpenter, Prometheus Operator) with the validators that the
// @kubernetes-models packages generate from those projects' CRD schemas (pinned in package.json).
// Reads a JSON array of objects on stdin; writes a JSON array with one error list per object.
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { NodePool } from "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool";
import { EC2NodeClass } from "@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";

const MODELS = [ScaledObject, NodePool, EC2NodeClass, ServiceMonitor, PodMonitor];

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map((obj) => {
  const Model = MODELS.find((m) => m.apiVersion === obj.apiVersion && m.kind === obj.kind);
  if (!Model) return [`no validator for ${obj.apiVersion} ${obj.kind}`];
  try {
    new Model(obj).validate();
    return [];
  } catch (err) {
    return [String(err.message)];
  }
});
process.stdout.write(JSON.stringify(results));
