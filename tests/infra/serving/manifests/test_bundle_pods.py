"""Every pod that runs trnspec installs the bundle first: the init container (the pod's own
public image, the bundle's URI and sha256 as rendered), its emptyDir, and PYTHONPATH in every
container that runs `python -m trnspec` or `python -m trnspec_tools`; nothing else is touched."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import kubernetes_validate
import pytest
from api_rules import enum_problems, mount_problems, resource_name_problems
from trnspec.config.pod_contract import (
    CALIBRATE_COMMAND,
    DATA_DIR,
    ENTRYPOINT,
    SERVE_COMMAND,
    TOOLS_ENTRYPOINT,
)
from workload_cases import IMAGE, TRN2_PROFILES, build, by_kind

from infra.compliance.api_server import api_server_findings
from infra.serving.bundle.requirements import declared
from infra.serving.image import base_image_reference
from infra.serving.manifests.bundle import (
    BUNDLE_DIR,
    BUNDLE_SIZE_LIMIT,
    BUNDLE_VOLUME,
    IMAGE_ENV,
    INIT_CONTAINER,
    RUN_AS_USER_NAME,
    init_container,
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
from infra.serving.manifests.spec import WorkloadSpec, check_serving
from infra.serving.preflight import workload_preflight
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS

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


# --- with_bundle on one pod, field by field ------------------------------------------------------

#: The pod paths of the kinds that template pods, as the Kubernetes API nests them.
POD_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    **{
        kind: ("spec", "template", "spec")
        for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")
    },
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _spec(**changes: Any) -> WorkloadSpec:
    return dataclasses.replace(build()[1], bundle_uri=URI, bundle_sha256=SHA, **changes)


def _container(name: str, command: list[str], **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "command": command, **fields}


def _deployment(*containers: dict[str, Any], **pod: Any) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "w"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w", "namespace": "trnspec", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [*containers], **pod},
            },
        },
    }


def _pod(manifest: dict[str, Any]) -> dict[str, Any]:
    (pod,) = pod_templates(manifest)
    return pod


def test_a_trnspec_container_gets_the_bundle_read_only_and_the_image_environment() -> None:
    """A container with nothing of its own: PYTHONPATH, the image's environment, the bundle
    mounted read-only (what the init container extracted is not changed by the server); the
    pod gets the init container and the emptyDir. A sidecar and the input stay as they were."""
    spec = _spec()
    engine = _container("engine", [*ENTRYPOINT, SERVE_COMMAND])  # the subcommand in `command`
    sidecar = _container("sidecar", ["sleep", "infinity"])
    manifest = _deployment(engine, sidecar)
    before = copy.deepcopy(manifest)
    pod = _pod(with_bundle(manifest, spec))
    assert manifest == before
    bundled, untouched = pod["containers"]
    assert untouched == sidecar
    assert bundled["env"] == [
        {"name": "PYTHONPATH", "value": BUNDLE_DIR},
        *({"name": k, "value": v} for k, v in IMAGE_ENV.items()),
    ]
    assert bundled["volumeMounts"] == [
        {"name": BUNDLE_VOLUME, "mountPath": BUNDLE_DIR, "readOnly": True}
    ]
    assert "workingDir" not in bundled  # neither the data dir nor /tmp is mounted
    assert pod["initContainers"] == [init_container(spec)]
    assert pod["volumes"] == [{"name": BUNDLE_VOLUME, "emptyDir": {"sizeLimit": BUNDLE_SIZE_LIMIT}}]


@pytest.mark.parametrize(
    ("mounted", "own", "workdir"),
    [
        ((DATA_DIR, "/tmp"), None, DATA_DIR),
        (("/tmp", DATA_DIR), None, DATA_DIR),
        (("/tmp",), None, "/tmp"),
        ((DATA_DIR,), "/srv", "/srv"),
    ],
)
def test_the_working_dir_is_the_first_mounted_of_the_data_dir_and_tmp_unless_the_pod_sets_one(
    mounted: tuple[str, ...], own: str | None, workdir: str
) -> None:
    mounts = [{"name": f"v{i}", "mountPath": path} for i, path in enumerate(mounted)]
    fields: dict[str, Any] = {"volumeMounts": mounts, "env": [{"name": "USER", "value": "me"}]}
    if own:
        fields["workingDir"] = own
    engine = _container("engine", [*TOOLS_ENTRYPOINT, *CALIBRATE_COMMAND], **fields)
    (bundled,) = _pod(with_bundle(_deployment(engine), _spec()))["containers"]
    assert bundled["workingDir"] == workdir
    # The pod's own value wins over the image's environment.
    assert [e["value"] for e in bundled["env"] if e["name"] == "USER"] == ["me"]


def test_a_container_that_sets_pythonpath_is_refused_by_name() -> None:
    engine = _container("engine", [*ENTRYPOINT], env=[{"name": "PYTHONPATH", "value": "/x"}])
    with pytest.raises(
        ValueError, match=r"^container 'engine' sets PYTHONPATH; the bundle owns it$"
    ):
        with_bundle(_deployment(engine), _spec())


def test_the_install_runs_first_and_the_pods_own_init_containers_keep_their_order() -> None:
    engine = _container("engine", [*ENTRYPOINT])
    own = [_container("a", ["true"]), _container("b", ["true"])]
    pod = _pod(with_bundle(_deployment(engine, initContainers=own), _spec()))
    assert [c["name"] for c in pod["initContainers"]] == [INIT_CONTAINER, "a", "b"]


@pytest.mark.parametrize("region", ["us-east-2", None])
def test_the_init_container_runs_the_pods_image_as_its_user_into_the_writable_volume(
    region: str | None,
) -> None:
    """Same image as the pod (pulled once), the bundle's region for boto3, a HOME and USER for
    a UID without a passwd entry, no bytecode beside the extracted packages, and the bundle
    volume writable (it extracts there)."""
    spec = _spec(region=region)
    init = init_container(spec)
    assert (init["image"], init["imagePullPolicy"]) == (spec.image_uri, "IfNotPresent")
    env = {"HOME": "/tmp/home", "PYTHONDONTWRITEBYTECODE": "1", "USER": RUN_AS_USER_NAME}
    assert init["env"] == [
        {"name": k, "value": v}
        for k, v in {**env, **({"AWS_REGION": region} if region else {})}.items()
    ]
    assert init["volumeMounts"] == [{"name": BUNDLE_VOLUME, "mountPath": BUNDLE_DIR}]


@pytest.mark.parametrize("kind", sorted(POD_PATHS))
def test_every_kind_that_templates_a_pod_gets_the_bundle_in_that_pod(kind: str) -> None:
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "w"}}
    node = manifest
    for key in POD_PATHS[kind][:-1]:
        node = node.setdefault(key, {})
    node[POD_PATHS[kind][-1]] = {"containers": [_container("engine", [*ENTRYPOINT])]}
    out = with_bundle(manifest, _spec())
    pod = out
    for key in POD_PATHS[kind]:
        pod = pod[key]
    assert list(pod_templates(out)) == [pod]
    assert pod["initContainers"][0]["name"] == INIT_CONTAINER


def test_a_kind_without_a_pod_is_left_alone() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    assert list(pod_templates(config)) == []
    assert with_bundle(config, _spec()) == config


def test_a_bundled_pod_is_what_the_api_server_accepts() -> None:
    """Strictly valid for the newest Kubernetes the platform deploys (no field the API does not
    declare), and by the API server's own rules (names, quantities, requests under limits,
    resource names, value sets, mounts of the pod's volumes)."""
    engine = _container("engine", [*ENTRYPOINT, SERVE_COMMAND])
    bundled = with_bundle(_deployment(engine), _spec())
    kubernetes_validate.validate(bundled, f"{SUPPORTED_KUBERNETES_VERSIONS[-1]}.0", strict=True)
    assert api_server_findings([bundled]) == []
    rules = (enum_problems, resource_name_problems, mount_problems)
    assert [p for rule in rules for p in rule(bundled)] == []
