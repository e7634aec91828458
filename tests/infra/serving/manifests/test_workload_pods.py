"""The serving Deployment and the precompile Job.

Scheduling, storage, probes, shutdown and security."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from trnspec.cli.main import build_parser
from trnspec.cli.serve import resolve_options
from trnspec.config.pod_contract import READY_FILE
from trnspec.config.serving import load_config
from trnspec.serve.runner import ServeOptions
from workload_cases import build, by_kind

from infra.contracts import (
    COMPILE_CACHE_PREFIX,
    CONFIG_DIR,
    CONFIG_FILE,
    DATA_DIR,
    DRAIN_SECONDS,
    IMAGE_UID,
    INSTANCE_TYPE_LABEL,
    LNC_NODE_LABEL,
    NEURON_SCHEDULER_NAME,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
)
from infra.serving.manifests.precompile import precompile_job_name


def _pod(kind: str, **settings: Any) -> dict[str, Any]:
    return by_kind(build(**settings)[2], kind)["spec"]["template"]["spec"]


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_go_through_the_neuron_scheduler_onto_a_matching_trn2_node(kind: str) -> None:
    cfg = build()[0]
    pod = _pod(kind)
    assert pod["schedulerName"] == NEURON_SCHEDULER_NAME
    assert {"key": NEURON_TAINT_KEY, "operator": "Exists", "effect": NEURON_TAINT_EFFECT} in pod[
        "tolerations"
    ]
    assert pod["nodeSelector"] == {
        INSTANCE_TYPE_LABEL: cfg.hardware.instance_type,
        LNC_NODE_LABEL: str(cfg.hardware.lnc),
    }


def test_scheduler_and_lnc_label_are_the_platforms() -> None:
    from infra.platform.cluster.neuron_node import LNC_LABEL
    from infra.platform.cluster.neuron_node import NEURON_TAINT_KEY as PLATFORM_TAINT

    assert LNC_LABEL == LNC_NODE_LABEL
    assert PLATFORM_TAINT == NEURON_TAINT_KEY


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_dev_shm_is_a_memory_emptydir(kind: str) -> None:
    pod = _pod(kind, shm_gib=48)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "48Gi"}
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["/dev/shm"] == "dshm"


def test_weights_go_to_node_nvme_with_an_ephemeral_storage_request() -> None:
    pod = _pod("Deployment", weights_volume_gib=900)
    data = {v["name"]: v for v in pod["volumes"]}["data"]
    assert data["emptyDir"] == {"sizeLimit": "900Gi"}
    assert pod["containers"][0]["resources"]["requests"]["ephemeral-storage"] == "900Gi"


def test_weights_can_go_to_an_ebs_ephemeral_volume() -> None:
    pod = _pod("Deployment", weights_storage="ebs", weights_volume_gib=700, ebs_storage_class="gp3")
    claim = {v["name"]: v for v in pod["volumes"]}["data"]["ephemeral"]["volumeClaimTemplate"]
    assert claim["spec"]["storageClassName"] == "gp3"
    assert claim["spec"]["resources"]["requests"]["storage"] == "700Gi"
    assert "ephemeral-storage" not in pod["containers"][0]["resources"]["requests"]


def test_startup_probe_covers_the_whole_load_budget() -> None:
    c = _pod("Deployment", max_startup_minutes=120)["containers"][0]
    startup = c["startupProbe"]
    # Every wait the engine makes before staging (its own defaults: weights not published yet,
    # staging retries), then the staging, load and compile budget.
    engine = ServeOptions()
    waits = sum(engine.weights_wait_delays) + sum(engine.stage_retry_delays)
    assert waits > 2 * 3600 > 90 * 60  # the old probe (90 minutes) gave up before the wait did
    assert startup["periodSeconds"] * startup["failureThreshold"] >= waits + 120 * 60
    deadline = build(max_startup_minutes=120)[2]
    progress = by_kind(deadline, "Deployment")["spec"]["progressDeadlineSeconds"]
    assert progress > startup["periodSeconds"] * startup["failureThreshold"]
    # The precompile Job makes the same waits before its compile budget.
    job = by_kind(build(precompile_timeout_hours=1)[2], "Job")["spec"]
    assert job["activeDeadlineSeconds"] >= waits + 1 * 3600
    # Liveness would kill a pod after this long; it must be far shorter than a load, which is
    # why it only starts after the startup probe has passed.
    live = c["livenessProbe"]
    assert (
        live["periodSeconds"] * live["failureThreshold"]
        < startup["periodSeconds"] * startup["failureThreshold"]
    )
    # Readiness and startup watch the engine's ready file (present only while the model answers).
    ready = ["test", "-f", READY_FILE]
    assert c["readinessProbe"]["exec"]["command"] == ready
    assert startup["exec"]["command"] == ready
    assert live["httpGet"]["path"] == "/health"


def test_termination_grace_outlasts_the_longest_request_plus_drain() -> None:
    pod = _pod("Deployment", max_request_seconds=900)
    assert pod["terminationGracePeriodSeconds"] > 900 + DRAIN_SECONDS
    assert pod["containers"][0]["lifecycle"]["preStop"] == {"sleep": {"seconds": DRAIN_SECONDS}}


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_security_context_is_locked_down(kind: str) -> None:
    pod = _pod(kind)
    sc = pod["containers"][0]["securityContext"]
    assert sc["privileged"] is False
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == IMAGE_UID
    assert not any("hostPath" in v for v in pod["volumes"])


def test_deployment_runs_the_engine_entrypoint_with_the_mounted_config() -> None:
    c = _pod("Deployment")["containers"][0]
    assert c["command"] + c["args"] == [
        "python",
        "-m",
        "trnspec",
        "serve",
        "--config",
        f"{CONFIG_DIR}/{CONFIG_FILE}",
    ]


def test_deployment_leaves_replicas_to_the_autoscaler_and_surges_during_rollout() -> None:
    dep = by_kind(build()[2], "Deployment")
    assert "replicas" not in dep["spec"]
    assert dep["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_config_map_holds_exactly_the_config_the_engine_loads(tmp_path) -> None:
    cfg, spec, manifests, _ = build()
    cm = by_kind(manifests, "ConfigMap", "-config-")
    path = tmp_path / CONFIG_FILE
    path.write_text(cm["data"][CONFIG_FILE])
    assert load_config(path) == cfg
    assert cm["immutable"] is True
    assert spec.short_hash in cm["metadata"]["name"]


def test_a_config_change_renames_the_config_map_and_the_job() -> None:
    a = build()
    b = build(overrides=["speculation.num_speculative_tokens=5"])
    assert (
        by_kind(a[2], "ConfigMap", "-config-")["metadata"]["name"]
        != by_kind(b[2], "ConfigMap", "-config-")["metadata"]["name"]
    )
    assert precompile_job_name(a[1]) != precompile_job_name(b[1])
    assert (
        yaml.safe_load(by_kind(b[2], "ConfigMap", "-config-")["data"][CONFIG_FILE])["speculation"][
            "num_speculative_tokens"
        ]
        == 5
    )


@pytest.mark.parametrize(("on_deploy", "suspended"), [(True, False), (False, True)])
def test_precompile_job_runs_on_deploy_or_waits_suspended(on_deploy: bool, suspended: bool) -> None:
    job = by_kind(build(precompile_on_deploy=on_deploy)[2], "Job")
    assert job["spec"]["suspend"] is suspended
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["serviceAccountName"].endswith("-compile")
    assert "--compile-only" in pod["containers"][0]["args"]
    assert "startupProbe" not in pod["containers"][0]


def test_serving_and_compile_pods_use_different_service_accounts() -> None:
    assert _pod("Deployment")["serviceAccountName"].endswith("-serve")
    assert _pod("Job")["serviceAccountName"].endswith("-compile")


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_run_as_the_contracts_user_with_a_writable_home_and_workdir(kind: str) -> None:
    """The public image has no such user: its name, home and working directory come from the
    pod spec, each on a volume the pod mounts (the root filesystem is read-only)."""
    pod = _pod(kind)
    assert pod["securityContext"]["runAsUser"] == IMAGE_UID
    (c,) = pod["containers"]
    env = {e["name"]: e["value"] for e in c["env"]}
    mounts = [m["mountPath"] for m in c["volumeMounts"]]
    assert env["USER"] and env["HOME"].startswith("/tmp/") and "/tmp" in mounts
    assert c["workingDir"] == DATA_DIR and DATA_DIR in mounts


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_engine_reads_the_pods_args_and_env_as_its_staging_dirs_cache_and_drain(kind: str) -> None:
    """Parsed by the engine's own CLI and option resolver, as the container will run them."""
    _, spec, _, _ = build(max_request_seconds=900)
    c = _pod(kind, max_request_seconds=900)["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    args = build_parser().parse_args(c["args"])
    options = resolve_options(args, env)
    assert options.models_root.startswith(DATA_DIR)
    assert options.compiled_root.startswith(DATA_DIR)
    assert options.compile_cache == f"s3://{spec.bucket_name}/{COMPILE_CACHE_PREFIX}"
    assert options.ready_file == READY_FILE
    assert options.drain_timeout == 900
    assert options.compile_only is (kind == "Job")
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {DATA_DIR, "/tmp", "/var/tmp"} <= mounts


def test_the_default_weights_volume_is_sized_from_what_the_pod_stages() -> None:
    """Unset weights_volume_gib: the request is the model's staged storage (trnspec packing),
    48 GiB for Qwen3-4B + its DFlash drafter, so 16 replicas fit one node's instance store."""
    from trnspec.config.serving import load_profile
    from trnspec.hardware.packing import staged_storage_gib

    from infra.settings.serving import ServingSettings

    assert ServingSettings().weights_volume_gib is None
    for profile, gib in (("qwen3-4b-dflash", 48), ("qwen3-32b-draft", 184)):
        pod = _pod("Deployment", profile=profile)
        staged = staged_storage_gib(load_profile(profile))
        assert staged is not None and staged.gib == gib
        assert pod["containers"][0]["resources"]["requests"]["ephemeral-storage"] == f"{gib}Gi"
