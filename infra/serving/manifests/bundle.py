"""How trnspec reaches the pods: every pod that runs `python -m trnspec` or
`python -m trnspec_tools` gets the bundle installed by an init container, through `with_bundle`
alone, applied to every manifest of the workload (infra/serving/manifests/manifests.py), so no
pod can miss it.

The pods run AWS's public Neuron vLLM image as published (trnspec.config.images; a digest is
appended once one is recorded). The init container runs that same image (no second pull): it
reads the bundle zip the serving stack uploads as a CDK file asset
(infra/serving/bundle/asset.py) from S3 with boto3, checks the sha256 rendered here, extracts it
into an emptyDir, and checks the image has trnspec's declared runtime dependencies
(infra/serving/bundle/install.py, rendered as `python -c <that file>`). boto3 (with the AWS CLI
v2) is what AWS's own Dockerfile of the 0.24.0.1.1.0 vLLM image installs
(github.com/aws-neuron/deep-learning-containers, vllm/inference/0.24.0.1.1.0/Dockerfile.neuronx);
that the 0.29 image carries it, httpx and rich too is checked by this init container at the first
deploy, not here. The trnspec containers then find the packages on PYTHONPATH.

What image/Dockerfile used to give the pods is set here too: unbuffered Python, the engine's
data dir and ready file, a working directory on a writable volume, and a USER for libraries
that ask who they run as (the pods run as IMAGE_UID, which has no passwd entry in the image).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trnspec.config.pod_contract import (
    DATA_DIR,
    ENTRYPOINT,
    ENV_DATA_DIR,
    ENV_READY_FILE,
    READY_FILE,
    TOOLS_ENTRYPOINT,
)

from infra.serving.bundle import install
from infra.serving.bundle.requirements import declared
from infra.serving.manifests.pod import Manifest, container_security_context
from infra.serving.manifests.spec import WorkloadSpec

#: Where the bundle is extracted (an emptyDir) and what PYTHONPATH names.
BUNDLE_DIR = "/opt/trnspec"
BUNDLE_VOLUME = "trnspec-bundle"
INIT_CONTAINER = "install-trnspec"
#: The extracted packages are under 2 MB.
BUNDLE_SIZE_LIMIT = "64Mi"
#: The commands that need the bundle: the engine's and the tools'.
BUNDLE_ENTRYPOINTS = (tuple(ENTRYPOINT), tuple(TOOLS_ENTRYPOINT))
#: The name libraries get from getpass.getuser() (IMAGE_UID has no passwd entry in the image).
RUN_AS_USER_NAME = "trnspec"
#: What image/Dockerfile set for every process; the pod's own values win.
IMAGE_ENV = {
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",  # the bundle volume is mounted read-only
    ENV_DATA_DIR: DATA_DIR,
    ENV_READY_FILE: READY_FILE,
    "USER": RUN_AS_USER_NAME,
}
#: Working directory, the first of these the container mounts (the image's was DATA_DIR).
WORKING_DIRS = (DATA_DIR, "/tmp")


def install_script() -> str:
    """The init container's program: infra/serving/bundle/install.py, verbatim."""
    return Path(install.__file__).read_text(encoding="utf-8")


def install_command(spec: WorkloadSpec) -> list[str]:
    """The init container's exact command."""
    requires = [f"--require={r.argument()}" for r in declared()]
    return [
        "python",
        "-c",
        install_script(),
        "--uri",
        spec.bundle_uri,
        "--sha256",
        spec.bundle_sha256,
        "--dest",
        BUNDLE_DIR,
        *requires,
    ]


def runs_trnspec(container: dict[str, Any]) -> bool:
    """Whether a container's command is `python -m trnspec` or `python -m trnspec_tools`."""
    return tuple(container.get("command", ())[:3]) in BUNDLE_ENTRYPOINTS


def init_container(spec: WorkloadSpec) -> dict[str, Any]:
    env = [
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "USER", "value": RUN_AS_USER_NAME},
    ]
    if spec.region:
        env.append({"name": "AWS_REGION", "value": spec.region})
    return {
        "name": INIT_CONTAINER,
        "image": spec.image_uri,
        "imagePullPolicy": "IfNotPresent",
        "command": install_command(spec),
        "env": env,
        "resources": {
            "requests": {"cpu": "250m", "memory": "256Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        },
        "volumeMounts": [{"name": BUNDLE_VOLUME, "mountPath": BUNDLE_DIR}],
        "securityContext": container_security_context(),
    }


def pod_templates(manifest: Manifest) -> Iterator[dict[str, Any]]:
    """The pod spec of a Pod, Deployment or Job (none for other kinds)."""
    kind = manifest.get("kind")
    if kind == "Pod":
        yield manifest["spec"]
    elif kind in {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}:
        yield manifest["spec"]["template"]["spec"]
    elif kind == "CronJob":
        yield manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def _with_env(container: dict[str, Any]) -> None:
    env = container.setdefault("env", [])
    names = {e["name"] for e in env}
    if "PYTHONPATH" in names:
        raise ValueError(f"container {container['name']!r} sets PYTHONPATH; the bundle owns it")
    env.append({"name": "PYTHONPATH", "value": BUNDLE_DIR})
    env.extend({"name": k, "value": v} for k, v in IMAGE_ENV.items() if k not in names)
    mounts = container.setdefault("volumeMounts", [])
    mounts.append({"name": BUNDLE_VOLUME, "mountPath": BUNDLE_DIR, "readOnly": True})
    mounted = {m["mountPath"] for m in mounts}
    workdir = next((d for d in WORKING_DIRS if d in mounted), None)
    if workdir is not None:
        container.setdefault("workingDir", workdir)


def with_bundle(manifest: Manifest, spec: WorkloadSpec) -> Manifest:
    """`manifest`, with the bundle installed in every pod it templates that runs trnspec: the
    init container first, its emptyDir, and PYTHONPATH (and the image's environment) in every
    container that runs `python -m trnspec*`. Other manifests come back unchanged."""
    out = copy.deepcopy(manifest)
    for pod in pod_templates(out):
        users = [c for c in pod["containers"] if runs_trnspec(c)]
        if not users:
            continue
        for container in users:
            _with_env(container)
        pod["initContainers"] = [init_container(spec), *pod.get("initContainers", [])]
        pod.setdefault("volumes", []).append(
            {"name": BUNDLE_VOLUME, "emptyDir": {"sizeLimit": BUNDLE_SIZE_LIMIT}}
        )
    return out
