"""The workload builders read the pod contract, not the engine: importing them at synth time must
not load the serve entrypoint, S3 staging or the AWS SDK (checked in a fresh interpreter, since
this test session has long imported all of them)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]

IMPORT_EVERY_BUILDER = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    import infra.serving.manifests

    names = [m.name for m in pkgutil.iter_modules(infra.serving.manifests.__path__)]
    for name in names:
        importlib.import_module(f"infra.serving.manifests.{name}")
    print(json.dumps({"builders": names, "loaded": sorted(sys.modules)}))
    """
)

FORBIDDEN = ("trnspec.serve", "trnspec.staging.transfer", "boto3", "botocore")


def test_importing_the_workload_builders_loads_no_engine_runtime_or_aws_sdk() -> None:
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_BUILDER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result = json.loads(out.stdout)
    assert {"pod", "server", "precompile", "manifests"} <= set(result["builders"])
    loaded = result["loaded"]
    leaked = [m for m in loaded if any(m == f or m.startswith(f"{f}.") for f in FORBIDDEN)]
    assert leaked == []
    assert "trnspec.config.pod_contract" in loaded  # the names come from the contract
