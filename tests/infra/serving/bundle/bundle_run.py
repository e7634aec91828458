"""Running the rendered pod commands outside a pod, with only what the image declares importable
(the standard library, the bundle's declared runtime dependencies and what those require, as this
venv has them): the approach image/Dockerfile's test used, seeded from the declared requirements
instead of an installed wheel's metadata. A plain module (not a test file) the bundle tests import.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.requirements import Requirement

from infra.serving.bundle.requirements import declared
from tests.requirement_closure import modules_of, requirement_closure

#: The repository's own packages: importable in the pod only from the bundle, never from here.
BUNDLED = frozenset({"trnspec", "trnspec_tools"})
REPO_PACKAGES = BUNDLED | {"infra", "tests"}


@functools.cache
def declared_importable() -> frozenset[str]:
    """Top-level modules the image is counted on for: the standard library and the modules of
    the declared requirements, closed over those distributions' own requirements."""
    wanted = [Requirement(f"{r.distribution}{r.specifier}") for r in declared()]
    third_party = modules_of(requirement_closure(wanted))
    return frozenset(sys.stdlib_module_names | (third_party - REPO_PACKAGES))


#: Runs argv[2:] (`python -c PROGRAM ARGS` or `python -m MODULE ARGS`) with imports limited to
#: a given set. With an S3 object to serve, moto's in-process S3 holds it first (the mock's own
#: package stays importable: it is not part of the image, and only the init script runs with it).
GUARD = r"""
import importlib.abc, json, runpy, sys
cfg = json.loads(sys.argv[1])
if cfg["s3"]:
    import boto3
    from moto import mock_aws
    mock_aws().start()
    s3 = boto3.client("s3")
    s3.create_bucket(
        Bucket=cfg["s3"]["bucket"],
        CreateBucketConfiguration={"LocationConstraint": cfg["s3"]["region"]},
    )
    with open(cfg["s3"]["file"], "rb") as f:
        s3.put_object(Bucket=cfg["s3"]["bucket"], Key=cfg["s3"]["key"], Body=f.read())
    s3.get_object(Bucket=cfg["s3"]["bucket"], Key=cfg["s3"]["key"])["Body"].read()
    for name in cfg["absent"]:
        assert name not in sys.modules, f"{name} was imported by the mock"
# moto re-imports its own modules per request: the mock's package stays importable.
IMPORTABLE = (set(cfg["importable"]) | ({"moto"} if cfg["s3"] else set())) - set(cfg["absent"])
class ImageOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in IMPORTABLE and not top.startswith("_"):
            raise ModuleNotFoundError(f"No module named {name!r} (not in the image)", name=name)
        return None
sys.meta_path.insert(0, ImageOnly())
argv = cfg["argv"]
assert argv[0] == "python" and argv[1] in ("-c", "-m"), argv
if argv[1] == "-c":
    sys.argv = ["-c", *argv[3:]]
    exec(compile(argv[2], "<string>", "exec"), {"__name__": "__main__"})
else:
    sys.argv = [argv[2], *argv[3:]]
    runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
"""


def run_in_image(
    argv: Sequence[str],
    *,
    cwd: Path,
    pythonpath: Path | None = None,
    importable: frozenset[str] | None = None,
    absent: Sequence[str] = (),
    s3: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`argv` as a container would run it, PYTHONPATH only `pythonpath` (the bundle dir)."""
    allowed = (importable or declared_importable()) | (BUNDLED if pythonpath else frozenset())
    cfg = {
        "argv": list(argv),
        "importable": sorted(allowed),
        "absent": list(absent),
        "s3": dict(s3) if s3 else None,
    }
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}
    environment.update(env or {})
    environment["PYTHONPATH"] = str(pythonpath) if pythonpath else ""
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, "-s", "-c", GUARD, json.dumps(cfg)],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
