// Validates custom resources (KEDA, Karpenter, Prometheus Operator) with the validators that the
// @kubernetes-models packages generate from those projects' CRD schemas (pinned in package.json).
// Reads a JSON array of objects on stdin; writes a JSON array with one error list per object.
import { modelOf, readStdinJson } from "./crd_models.mjs";

const results = (await readStdinJson()).map((obj) => {
  const Model = modelOf(obj);
  if (!Model) return [`no validator for ${obj.apiVersion} ${obj.kind}`];
  try {
    new Model(obj).validate();
    return [];
  } catch (err) {
    return [String(err.message)];
  }
});
process.stdout.write(JSON.stringify(results));
