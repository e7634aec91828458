// The fields of custom resources that their CRD schema does not declare (what `kubectl apply
// --validate=strict` refuses and the API server otherwise drops without a word).
//
// The generated validators accept unknown fields, so each field is probed: its value is replaced
// by a Symbol, which no schema type (string, number, integer, boolean, object, array, or any of
// them) accepts. A field the schema declares, directly or as an entry of a typed map, then fails
// validation at its own path; an undeclared one passes. Fields declared without any type
// (x-kubernetes-preserve-unknown-fields alone) would be reported too: none is rendered here.
// Reads a JSON array of objects on stdin; writes one list of JSON-pointer paths per object.
import { modelOf, readStdinJson } from "./crd_models.mjs";

const PROBE = Symbol("probe");

function pointer(path) {
  return path.map((key) => "/" + String(key).replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}

function withProbe(value, path) {
  if (path.length === 0) return PROBE;
  const [head, ...rest] = path;
  const copy = Array.isArray(value) ? [...value] : { ...value };
  copy[head] = withProbe(value[head], rest);
  return copy;
}

function errorPaths(Model, obj) {
  try {
    new Model(obj).validate();
    return [];
  } catch (err) {
    return (err.errors ?? []).map((e) => e.instancePath);
  }
}

function* fieldPaths(value, path = []) {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) yield* fieldPaths(value[i], [...path, i]);
  } else if (value !== null && typeof value === "object") {
    for (const key of Object.keys(value)) {
      yield [...path, key];
      yield* fieldPaths(value[key], [...path, key]);
    }
  }
}

const results = (await readStdinJson()).map((obj) => {
  const Model = modelOf(obj);
  if (!Model) return [`no validator for ${obj.apiVersion} ${obj.kind}`];
  const unknown = [];
  for (const path of fieldPaths(obj)) {
    const at = pointer(path);
    if (!errorPaths(Model, withProbe(obj, path)).some((p) => p === at || p.startsWith(at + "/"))) {
      unknown.push(at);
    }
  }
  return unknown;
});
process.stdout.write(JSON.stringify(results));
