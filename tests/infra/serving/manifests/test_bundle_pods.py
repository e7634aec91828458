"""Every pod that runs trnspec installs the bundle first: the init container (the pod's own
public image, the bundle's URI and sha256 as rendered), its emptyDir, and PYTHONPATH in every
container that runs `python -m trnspec` or `python -m trnspec_tools`; nothing else is touched."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from trnspec.config.pod_contract import (
    CALIBRATE_COMMAND,
    ENTRYPOINT,
    SERVE_COMMAND,
    TOOLS_ENTRYPOINT,
)
from workload_cases import TRN2_PROFILES, by_kind

from infra.serving.bundle.requirements import declared
from infra.serving.image import base_image_reference
from infra.serving.manifests.bundle import (
    BUNDLE_DIR,
    BUNDLE_VOLUME,
    INIT_CONTAINER,
    install_script,
    pod_templates,
    with_bundle,
)
from infra.serving.manifests.manifests import WorkloadManifests
from infra.serving.manifests.placeholders import (
    BUCKET_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    DeployValues,
    bind,
)
from infra.serving.manifests.spec import check_serving
from infra.serving.preflight import workload_preflight

URI = "s3://cdk-hnb659fds-assets-123456789012-us-east-2/0123abcd.zip"
SHA = "ab" * 32
CALIBRATION = {
    "calibration": {"speculative": {"profile": "qwen3-4b-dflash"}, "concurrency": [1, 2, 4]}
}
SECTIONS: list[dict[str, Any]] = [
    {},  # the default profile, weights from the Hub
    *({"profile": p} for p in TRN2_PROFILES),
    {"profile": "qwen3-4b-baseline", **CALIBRATION},
    {"scale_to_zero": True},
]


def rendered(section: dict[str, Any]) -> WorkloadManifests:
    """The manifests as the serving stack applies them: preflight, then its values bound."""
    return rendered_with_image(section)[0]


def rendered_with_image(section: dict[str, Any]) -> tuple[WorkloadManifests, str]:
    """The bound manifests and the image the stack renders (the profile's generation's)."""
    checked = check_serving(section, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    preflight = workload_preflight(checked)
    values = DeployValues(
        bucket_name="trnspec-models-real",
        image_uri=base_image_reference(preflight.config.image),
        region="us-east-2",
        vpc_cidr="10.0.0.0/16",
        api_key_secret_arn="arn:aws:secretsmanager:us-east-2:123456789012:secret:k",
        hf_token_secret_arn="arn:aws:secretsmanager:us-east-2:123456789012:secret:hf",
        bundle_uri=URI,
        bundle_sha256=SHA,
    )
    return bind(preflight.manifests, values), values.image_uri


def runs_trnspec(container: dict[str, Any]) -> bool:
    argv = [*container.get("command", []), *container.get("args", [])]
    return any(
        argv[i : i + 2] == ["-m", m] for i in range(len(argv)) for m in ("trnspec", "trnspec_tools")
    )


def bundle_problems(manifests: list[dict[str, Any]], image: str) -> list[str]:
    """What is wrong with how `manifests` install the bundle: one line per problem."""
    problems = []
    for m in manifests:
        for pod in pod_templates(m):
            name = f"{m['kind']}/{m['metadata']['name']}"
            users = [c for c in pod["containers"] if runs_trnspec(c)]
            for c in [*pod["containers"], *pod.get("initContainers", [])]:
                if "dkr.ecr" in c["image"] or ("neuron" in c["image"] and c["image"] != image):
                    problems.append(f"{name} {c['name']}: image {c['image']}")
            if not users:
                continue
            inits = pod.get("initContainers", [])
            if not inits or inits[0]["name"] != INIT_CONTAINER:
                problems.append(f"{name}: no {INIT_CONTAINER} init container first")
                continue
            init = inits[0]
            command = init["command"]
            if init["image"] != image or command[:3] != ["python", "-c", install_script()]:
                problems.append(f"{name}: the init container is not the install script on {image}")
            flags = dict(zip(command[3::2], command[4::2], strict=False))
            if flags.get("--uri") != URI or flags.get("--sha256") != SHA:
                problems.append(
                    f"{name}: init installs {flags.get('--uri')} {flags.get('--sha256')}"
                )
            if flags.get("--dest") != BUNDLE_DIR:
                problems.append(f"{name}: init extracts into {flags.get('--dest')}")
            volumes = {v["name"]: v for v in pod["volumes"]}
            if "emptyDir" not in volumes.get(BUNDLE_VOLUME, {}):
                problems.append(f"{name}: no {BUNDLE_VOLUME} emptyDir")
            for c in users:
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                mounts = {x["mountPath"]: x for x in c.get("volumeMounts", [])}
                if env.get("PYTHONPATH") != BUNDLE_DIR:
                    problems.append(f"{name} {c['name']}: PYTHONPATH={env.get('PYTHONPATH')}")
                if mounts.get(BUNDLE_DIR, {}).get("name") != BUNDLE_VOLUME:
                    problems.append(f"{name} {c['name']}: the bundle is not mounted")
    return problems


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: json.dumps(s)[:40])
def test_every_trnspec_container_gets_the_bundle_and_the_public_image(
    section: dict[str, Any],
) -> None:
    bound, image = rendered_with_image(section)
    manifests = bound.all()
    pods = [p for m in manifests for p in pod_templates(m)]
    assert any(runs_trnspec(c) for p in pods for c in p["containers"])
    assert bundle_problems(manifests, image) == []


def test_the_default_deploy_installs_the_bundle_in_every_pod_that_runs_trnspec() -> None:
    """Serving Deployment, precompile, weights and calibration Jobs, and the calibration arm."""
    manifests = rendered({"profile": "qwen3-4b-baseline", **CALIBRATION})
    with_init = {
        m["metadata"]["name"]
        for m in manifests.all()
        for p in pod_templates(m)
        if p.get("initContainers", [{}])[0].get("name") == INIT_CONTAINER
    }
    parts = ("-precompile-", "-weights-", "-calibration-", "-spec")
    assert all(any(part in n for n in with_init) for part in parts), with_init
    assert any(n == "qwen3-4b-baseline" or n.endswith("baseline") for n in with_init), with_init


def test_the_serving_container_runs_the_doctor_first_serve_from_the_bundle() -> None:
    """`python -m trnspec serve`: the entrypoint that checks the config and runs the doctor
    before it stages anything (trnspec.serve), from the bundle on PYTHONPATH."""
    manifests = rendered({})
    deployment = by_kind(manifests, "Deployment")
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    assert c["command"] + c["args"][:1] == [*ENTRYPOINT, SERVE_COMMAND]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["PYTHONPATH"] == BUNDLE_DIR and env["PYTHONUNBUFFERED"] == "1"


def test_the_calibration_job_runs_calibrate_run_from_the_bundle() -> None:
    manifests = rendered({"profile": "qwen3-4b-baseline", **CALIBRATION})
    job = by_kind(manifests, "Job", "-calibration-")
    (c,) = job["spec"]["template"]["spec"]["containers"]
    assert c["command"] + c["args"][:2] == [*TOOLS_ENTRYPOINT, *CALIBRATE_COMMAND]
    assert {"name": "PYTHONPATH", "value": BUNDLE_DIR} in c["env"]


def test_the_init_container_checks_every_declared_dependency() -> None:
    deployment = by_kind(rendered({}), "Deployment")
    (init,) = deployment["spec"]["template"]["spec"]["initContainers"]
    requires = [a.removeprefix("--require=") for a in init["command"] if a.startswith("--require=")]
    assert requires == [r.argument() for r in declared()]
    assert {r.split("=")[0] for r in requires} >= {"pydantic", "yaml", "boto3", "httpx", "rich"}
    assert init["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize(
    "plant",
    ["drop the init container", "wrong sha", "no PYTHONPATH", "an ECR image", "no volume"],
)
def test_a_planted_bundle_bug_is_found(plant: str) -> None:
    manifests = copy.deepcopy(rendered({}).all())
    image = base_image_reference("neuron-plugin")
    job = next(m for m in manifests if "-weights-" in m["metadata"]["name"])
    pod = job["spec"]["template"]["spec"]
    if plant == "drop the init container":
        del pod["initContainers"]
    elif plant == "wrong sha":
        command = pod["initContainers"][0]["command"]
        command[command.index("--sha256") + 1] = "cd" * 32
    elif plant == "no PYTHONPATH":
        pod["containers"][0]["env"] = [
            e for e in pod["containers"][0]["env"] if e["name"] != "PYTHONPATH"
        ]
    elif plant == "an ECR image":
        pod["containers"][0]["image"] = "123456789012.dkr.ecr.us-east-2.amazonaws.com/x:y"
    else:
        pod["volumes"] = [v for v in pod["volumes"] if v["name"] != BUNDLE_VOLUME]
    assert bundle_problems(manifests, image) != []


def test_with_bundle_leaves_pods_that_do_not_run_trnspec_alone() -> None:
    manifests = rendered({"scale_to_zero": True}).all()
    others = [
        m
        for m in manifests
        for p in pod_templates(m)
        if not any(runs_trnspec(c) for c in p["containers"])
    ]
    assert others  # the wake path's responder
    for m in others:
        assert all("initContainers" not in p for p in pod_templates(m))
        assert with_bundle(m, None) == m  # type: ignore[arg-type]
