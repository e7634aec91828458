"""Custom resources validated by the CRD validators of the @kubernetes-models npm packages.

The Kubernetes JSON schemas of kubernetes-validate cover only built-in kinds. For KEDA, Karpenter
and Prometheus Operator objects the tests use validators generated from those projects' CRD
schemas (npm, pinned in package.json, installed by `make setup`), run once per batch in Node.js.
They check types, required fields, enums and formats; unlike `kubectl apply --validate=strict`
they accept unknown fields, which `unknown_custom_fields` finds by probing each field against the
same validators (unknown_crd_fields.mjs). CEL rules are left to the API server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("validate_crds.mjs")
UNKNOWN_FIELDS_SCRIPT = Path(__file__).with_name("unknown_crd_fields.mjs")
REPO = Path(__file__).resolve().parents[2]

#: (apiVersion, kind) the validator knows.
CUSTOM_KINDS = {
    ("keda.sh/v1alpha1", "ScaledObject"),
    ("karpenter.sh/v1", "NodePool"),
    ("karpenter.k8s.aws/v1", "EC2NodeClass"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PodMonitor"),
}
#: Custom kinds no npm validator covers, checked against their API elsewhere: the KEDA HTTP
#: add-on's InterceptorRoute (tests/infra/serving/manifests/test_wake.py, ROUTE_SCHEMA).
OTHER_CUSTOM_KINDS = {("http.keda.sh/v1beta1", "InterceptorRoute")}


def validate_custom(objects: list[dict[str, Any]]) -> list[list[str]]:
    """One list of error messages per object (empty when valid)."""
    return _run(SCRIPT, objects)


def unknown_custom_fields(objects: list[dict[str, Any]]) -> list[list[str]]:
    """One list per object of the JSON-pointer paths of fields its CRD schema does not declare
    (empty when `kubectl apply --validate=strict` would find none)."""
    return _run(UNKNOWN_FIELDS_SCRIPT, objects)


def _packages_root() -> Path:
    """The nearest directory above this file with the npm packages, where Node.js resolves the
    scripts' imports from (the repo; also from a staged copy of the tests below it, as the
    mutation runs' under .cache/mutate are)."""
    for directory in Path(__file__).resolve().parents:
        if (directory / "node_modules" / "@kubernetes-models").is_dir():
            return directory
    raise AssertionError(f"no node_modules/@kubernetes-models above {REPO}: run `make setup`")


def _run(script: Path, objects: list[dict[str, Any]]) -> list[list[str]]:
    node = shutil.which("node")
    assert node, "node is needed (the CDK CLI needs it too): install Node.js 20"
    root = _packages_root()
    done = subprocess.run(
        [node, str(script)],
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
