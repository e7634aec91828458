"""The calibration deployment: the speculative arm beside the main (plain) Deployment, and the Job
that measures both (`serving.calibration`, infra/settings/calibration.py).

- The arm is the main workload's builders applied to a second WorkloadSpec (the speculative
  profile, named `<name>-spec`): its own ConfigMap, Deployment, ClusterIP Service and
  NetworkPolicy, exactly as the main ones are built, and a weights Job for the models only it
  needs (a drafter). Its pods run as the main workload's service accounts (serve, weights): same
  permissions, no new role. It compiles on its own start (no precompile Job) and, like any
  serving pod after a miss, publishes its graphs to compile-cache/ (the serve role may write
  there), so the next calibration of the same arm loads them.
- The arm runs only while a calibration Job's pod does: its ScaledObject (KEDA's
  kubernetes-workload scaler, which counts the pods of a selector that have not Succeeded or
  Failed) holds CALIBRATION_ARM_REPLICAS while the Job's pod is Pending or Running and 0 after
  (cooldownPeriod ARM_COOLDOWN_SECONDS), so the finished calibration no longer keeps its chips
  (its node, with scale to zero) billed; a new calibration (a new Job) brings it back. KEDA lists
  the pods with its own identity: no role or network path of ours is involved. The same trigger
  on the main ScaledObject keeps one plain replica while the Job runs, so a calibration also
  runs with `scale_to_zero`. Neither Deployment sets `replicas` (the HPA owns the count; a
  re-apply must not reset it).
- Both arms must run on the same hardware (instance type, LNC and Neuron devices: one chip each
  in the default), serve the same target and admit every level; otherwise synth refuses with
  one line per problem. On a node the minimum already pays for, the arm takes one more chip.
- The Job, from the serving image, waits until both Services answer, runs
  `python -m trnspec_tools calibrate run` (ABBA rounds at every level) and writes
  calibration.json and trn2_rows.yaml to s3://BUCKET/calibration/<UTC stamp>/. Its runner
  waits for the arms as long as they may take to start, read from both rendered Deployments'
  startup probes (`job_clock`: KEDA's poll, the pod's start on a new node, the probe budget);
  the Job is bounded (activeDeadlineSeconds: its own pod's start, that wait, deadline_minutes),
  never retried (backoffLimit 0: a bad prompt file fails once), and named by a hash of what it
  measures (`serving.calibration.rerun` included) so a changed calibration, or a new rerun
  token, is a new Job. It runs as its own service account `<name>-calibration`
  (infra/serving/calibration_identity.py: write calibration/, read the prompt file and the API
  key). Its pods carry the client labels and one more policy lets them reach both arms.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from trnspec.boundary.problems import Problem
from trnspec.config.calibration_arm import (
    ARM_COOLDOWN_SECONDS,
    ARM_POLLING_SECONDS,
    CALIBRATION_ARM_REPLICAS,
    job_deadline_for_wait,
    ready_wait_minutes,
)
from trnspec.config.pod_contract import CALIBRATE_COMMAND, ENV_API_KEY_SECRET, TOOLS_ENTRYPOINT
from trnspec.hardware.pricing import PRICES
from trnspec.hardware.topology import instance

from infra.compliance.scan_skips import WEIGHTS_POD_SKIPS
from infra.contracts import APP_LABEL, COMPONENT_LABEL
from infra.serving.manifests.autoscaling import deployment_scaled_object
from infra.serving.manifests.config_map import serving_config_map
from infra.serving.manifests.job import job, node_pod_spec
from infra.serving.manifests.network_policy import (
    _egress_only_policy,
    egress,
    serve_policy,
    weights_policy,
)
from infra.serving.manifests.pod import (
    SERVE_COMPONENT,
    WEIGHTS_COMPONENT,
    Manifest,
    container_security_context,
    labels,
    metadata,
    selector_labels,
    service_account_name,
)
from infra.serving.manifests.server import deployment
from infra.serving.manifests.service import SERVICE_PORT, cluster_service
from infra.serving.manifests.spec import (
    ClusterWorkloadError,
    WorkloadSpec,
    derive_workload,
    resolve_serving_config,
)
from infra.serving.manifests.weights import weights_job
from infra.settings.calibration import CalibrationSettings
from infra.settings.serving import ServingSettings

CALIBRATION_COMPONENT = "calibration"
ARM_SUFFIX = "-spec"
#: Where the Job writes its files before the upload (an emptyDir: the root is read-only).
OUT_DIR = "/tmp/calibration"
#: The runner's own deadline ends this long before the Job's, so the results are written first.
WRITE_MARGIN_MINUTES = 5
CPU_REQUEST, CPU_LIMIT = "1", "2"
MEMORY_REQUEST, MEMORY_LIMIT = "1Gi", "2Gi"
_FIELD = "serving.calibration"
#: The annotations an annotation-driven Prometheus scrapes by (the main server's, server.py).
PROMETHEUS_ANNOTATION_PREFIX = "prometheus.io/"


def arm_name(spec: WorkloadSpec) -> str:
    return f"{spec.name[: 40 - len(ARM_SUFFIX)]}{ARM_SUFFIX}"


def arm_settings(settings: ServingSettings, spec: WorkloadSpec) -> ServingSettings:
    """The main settings with the speculative arm's profile, overrides and name. The arm's
    replicas follow the calibration Job's pods, not its load, so the main Deployment's KEDA
    target (streams_per_replica, bounded by the main's max_num_seqs) is not the arm's: a plan
    whose arm batches less than the main (max_num_seqs=1 beside 32) must still deploy."""
    cal = _calibration(settings)
    return settings.model_copy(
        update={
            "profile": cal.speculative.profile,
            "overrides": cal.speculative.overrides,
            "name": arm_name(spec),
            "streams_per_replica": None,
            "calibration": None,
            "plan_figures": None,
        }
    )


def _calibration(settings: ServingSettings) -> CalibrationSettings:
    if settings.calibration is None:
        raise ValueError("serving.calibration is not set")
    return settings.calibration


def arm_spec(spec: WorkloadSpec, settings: ServingSettings) -> WorkloadSpec:
    """The speculative arm's WorkloadSpec, derived by the main workload's own path (engine
    loader and checks, then derive_workload), with the main spec's deploy-time values; or
    ClusterWorkloadError naming every reason it cannot run beside the main one."""
    from trnspec.config.serving import ConfigError

    arm = arm_settings(settings, spec)
    try:
        cfg = resolve_serving_config(arm, spec.bucket_name)
        derived = derive_workload(
            cfg,
            arm,
            image_uri=spec.image_uri,
            bucket_name=spec.bucket_name,
            region=spec.region,
            vpc_cidr=spec.vpc_cidr,
        )
    except (ConfigError, ClusterWorkloadError) as err:
        raise ClusterWorkloadError(
            [
                dataclasses.replace(p, field=f"{_FIELD}.speculative.{p.field.lstrip('-')}")
                for p in err.problems
            ]
        ) from None
    problems = pairing_problems(spec, derived, cfg.max_num_seqs, _calibration(settings))
    if problems:
        raise ClusterWorkloadError(problems)
    # Models the main workload's weights Job does not copy already (a drafter).
    copies = tuple(c for c in derived.hub_copies if c not in spec.hub_copies)
    return dataclasses.replace(
        derived,
        api_key_secret_arn=spec.api_key_secret_arn,
        hf_token_secret_arn=spec.hf_token_secret_arn,
        hub_copies=copies,
    )


def pairing_problems(
    plain: WorkloadSpec, spec: WorkloadSpec, spec_max_num_seqs: int, cal: CalibrationSettings
) -> list[Problem]:
    """The arms must share the hardware and target, and admit every level (plain's max_num_seqs
    is its KEDA target's bound: streams_per_replica <= max_num_seqs)."""
    problems = []
    for field in ("instance_type", "lnc", "neuron_devices", "served_model_name"):
        mine, main = getattr(spec, field), getattr(plain, field)
        if mine != main:
            problems.append(
                Problem(
                    f"{_FIELD}.speculative.profile",
                    cal.speculative.profile,
                    f"its {field} is {mine} and the plain arm's {main}: both arms must run the "
                    "same target on the same hardware for the costs to compare",
                )
            )
    top = max(cal.concurrency)
    if top > spec_max_num_seqs:
        problems.append(
            Problem(
                f"{_FIELD}.concurrency",
                list(cal.concurrency),
                f"the speculative arm runs at most max_num_seqs={spec_max_num_seqs} streams; "
                f"measure up to it, or raise it in speculative.overrides",
            )
        )
    if cal.num_prompts < top:
        problems.append(
            Problem(
                f"{_FIELD}.num_prompts",
                cal.num_prompts,
                f"fewer requests than the top level ({top}) never fill it; use at least {top}",
            )
        )
    return problems


def _as_arm_identity(manifest: Manifest, spec: WorkloadSpec, component: str) -> Manifest:
    """The pod template of `manifest` runs as the main workload's account of `component`."""
    pod = manifest["spec"]["template"]["spec"]
    pod["serviceAccountName"] = service_account_name(spec, component)
    return manifest


def arm_manifests(
    spec: WorkloadSpec, arm: WorkloadSpec, settings: ServingSettings
) -> list[Manifest]:
    """The speculative arm: policies first, then its config, weights, server and Service."""
    # No `replicas` (as the main Deployment): its ScaledObject owns the count.
    server = _as_arm_identity(deployment(arm, settings), spec, SERVE_COMPONENT)
    # Not scraped by annotation: such a scrape labels it only by namespace and model name, which
    # it shares with the main Deployment, whose KEDA query would count its requests. In-cluster,
    # its own ServiceMonitor scrapes it under `service=<arm>` (monitoring.py).
    annotations = server["spec"]["template"]["metadata"]["annotations"]
    for key in [k for k in annotations if k.startswith(PROMETHEUS_ANNOTATION_PREFIX)]:
        del annotations[key]
    out = [serve_policy(arm, settings)]
    if arm.hub_copies:
        out.append(weights_policy(arm, settings))
    out.append(serving_config_map(arm))
    if arm.hub_copies:
        out.append(_as_arm_identity(weights_job(arm, settings), spec, WEIGHTS_COMPONENT))
    return [*out, server, cluster_service(arm)]


def calibration_job_trigger(spec: WorkloadSpec) -> dict[str, Any]:
    """KEDA's kubernetes-workload trigger on the calibration Job's pods (those not Succeeded or
    Failed): one replica of the scaled Deployment per such pod."""
    pods = selector_labels(spec, CALIBRATION_COMPONENT)
    return {
        "type": "kubernetes-workload",
        "metricType": "AverageValue",
        "metadata": {"podSelector": ",".join(f"{k}={v}" for k, v in pods.items()), "value": "1"},
    }


def arm_scaled_object(spec: WorkloadSpec, arm: WorkloadSpec) -> Manifest:
    """The arm's replicas: CALIBRATION_ARM_REPLICAS while the Job's pod runs, else 0."""
    return deployment_scaled_object(
        arm,
        (0, CALIBRATION_ARM_REPLICAS),
        polling_s=ARM_POLLING_SECONDS,
        cooldown_s=ARM_COOLDOWN_SECONDS,
        triggers=[calibration_job_trigger(spec)],
    )


def with_calibration_trigger(
    scaled_object: Manifest, spec: WorkloadSpec, settings: ServingSettings
) -> Manifest:
    """The main ScaledObject, with the Job trigger when `serving.calibration` is set (a copy):
    at least one plain replica while the Job's pod runs, scale to zero or not."""
    if settings.calibration is None:
        return scaled_object
    out = copy.deepcopy(scaled_object)
    out["spec"]["triggers"].append(calibration_job_trigger(spec))
    return out


def service_url(spec: WorkloadSpec) -> str:
    return f"http://{spec.name}.{spec.namespace}.svc.cluster.local:{SERVICE_PORT}"


@dataclass(frozen=True)
class JobClock:
    """The calibration Job's waits, read from the arms' rendered Deployments."""

    #: The longer arm's startup probe budget: initialDelaySeconds + failureThreshold x
    #: periodSeconds of its container's startupProbe.
    arm_startup_probe_s: int
    #: `--wait-ready-minutes`: KEDA's poll, the arm pod's start, then that budget.
    wait_minutes: int
    #: `--deadline-minutes`, counted by the runner from its start (the wait included): the wait,
    #: then the measurement less the margin to write the results.
    runner_deadline_minutes: int
    #: activeDeadlineSeconds: the Job's own pod's start, the wait, then the measurement.
    deadline_s: int


def startup_probe_budget_s(deployment: Manifest) -> int:
    """initialDelaySeconds + failureThreshold x periodSeconds of the startupProbe of the
    Deployment's serving container (Kubernetes' defaults where unset: 0, 3, 10)."""
    (probe,) = [
        c["startupProbe"]
        for c in deployment["spec"]["template"]["spec"]["containers"]
        if "startupProbe" in c
    ]
    return int(probe.get("initialDelaySeconds", 0)) + int(probe.get("failureThreshold", 3)) * int(
        probe.get("periodSeconds", 10)
    )


def job_clock(arm_deployments: list[Manifest], cal: CalibrationSettings) -> JobClock:
    """The Job's wait covers the slower arm's start; its deadline covers the wait and the
    measurement (image/trnspec/config/calibration_arm.py)."""
    probe = max(startup_probe_budget_s(d) for d in arm_deployments)
    wait = ready_wait_minutes(probe)
    return JobClock(
        arm_startup_probe_s=probe,
        wait_minutes=wait,
        runner_deadline_minutes=wait + cal.deadline_minutes - WRITE_MARGIN_MINUTES,
        deadline_s=job_deadline_for_wait(wait, cal.deadline_minutes),
    )


def calibration_job_name(spec: WorkloadSpec, arm: WorkloadSpec, cal: CalibrationSettings) -> str:
    """A Job's template is immutable: a change to either arm or to the calibration (its `rerun`
    token included) is a new Job."""
    key = f"{spec.config_sha256}/{arm.config_sha256}/{cal.model_dump_json()}"
    return f"{spec.name}-calibration-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def arm_price_per_hour(arm: WorkloadSpec) -> float | None:
    """The hourly price of the chips one replica holds: the instance's on-demand price (the
    pricing table) times its share of the node's chips; None when the table has no price."""
    price = PRICES.get(arm.instance_type)
    if price is None or price.usd_per_hour is None:
        return None
    return round(price.usd_per_hour * arm.neuron_devices / instance(arm.instance_type).chips, 6)


def runner_args(
    spec: WorkloadSpec, arm: WorkloadSpec, settings: ServingSettings, k: int, clock: JobClock
) -> list[str]:
    """`calibrate run`'s arguments for the Job."""
    cal = _calibration(settings)
    prompts = f"s3://{spec.bucket_name}/{cal.prompts_key}" if cal.prompts_key else "default"
    args = [
        *CALIBRATE_COMMAND,
        "--plain", service_url(spec), "--speculative", service_url(arm),
        "--concurrency", ",".join(str(c) for c in cal.concurrency),
        "--rounds", str(cal.rounds),
        "--num-prompts", str(cal.num_prompts),
        "--output-len", str(cal.output_len),
        "--prompts", prompts,
        "--k", str(k),
        "--plain-profile", settings.profile,
        "--speculative-profile", cal.speculative.profile,
        "--bucket", spec.bucket_name,
        "--out-dir", OUT_DIR,
        "--wait-ready-minutes", str(clock.wait_minutes),
        "--deadline-minutes", str(clock.runner_deadline_minutes),
        "--timeout", str(settings.max_request_seconds),
    ]  # fmt: skip
    for flag, target in (("--price-per-hour-plain", spec), ("--price-per-hour-speculative", arm)):
        price = arm_price_per_hour(target)
        if price is not None:
            args += [flag, f"{price:g}"]
    return args


def _job_env(spec: WorkloadSpec) -> list[dict[str, str]]:
    env = [
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "XDG_CACHE_HOME", "value": "/tmp/cache"},
    ]
    if spec.region:
        env.append({"name": "AWS_REGION", "value": spec.region})
    if spec.api_key_secret_arn is not None:
        # The runner reads the key from the same secret the servers read theirs from.
        env.append({"name": ENV_API_KEY_SECRET, "value": spec.api_key_secret_arn})
    return env


def calibration_job(
    spec: WorkloadSpec, arm: WorkloadSpec, settings: ServingSettings, k: int, clock: JobClock
) -> Manifest:
    cal = _calibration(settings)
    runner = {
        "name": "calibrate",
        "image": spec.image_uri,
        "imagePullPolicy": "IfNotPresent",
        "command": list(TOOLS_ENTRYPOINT),
        "args": runner_args(spec, arm, settings, k, clock),
        "env": _job_env(spec),
        "resources": {
            "requests": {"cpu": CPU_REQUEST, "memory": MEMORY_REQUEST},
            "limits": {"cpu": CPU_LIMIT, "memory": MEMORY_LIMIT},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": container_security_context(),
    }
    pod = node_pod_spec(
        spec,
        service_account=service_account_name_for_calibration(spec),
        containers=[runner],
        volumes=[{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
    )
    template_labels = {**labels(spec, CALIBRATION_COMPONENT), **settings.client_pod_labels}
    return job(
        spec,
        name=calibration_job_name(spec, arm, cal),
        component=CALIBRATION_COMPONENT,
        skips=WEIGHTS_POD_SKIPS,
        # Bad input (an unreadable prompt file) fails the same way twice: never retried.
        backoff_limit=0,
        # Its pod's start, the runner's wait for both arms, then the measurement.
        deadline_seconds=clock.deadline_s,
        template={"metadata": {"labels": template_labels}, "spec": pod},
    )


def service_account_name_for_calibration(spec: WorkloadSpec) -> str:
    return f"{spec.name}-{CALIBRATION_COMPONENT}"


def calibration_policies(
    spec: WorkloadSpec, arm: WorkloadSpec, settings: ServingSettings
) -> list[Manifest]:
    """The Job: egress to both arms' server port, S3, credentials and DNS, no ingress; and both
    arms admit it (it carries the client labels, which `client_namespaces` may not cover)."""
    servers = {
        "matchExpressions": [
            {"key": APP_LABEL, "operator": "In", "values": [spec.name, arm.name]},
            {"key": COMPONENT_LABEL, "operator": "In", "values": [SERVE_COMPONENT]},
        ]
    }
    port = [{"protocol": "TCP", "port": spec.port}]
    job_pods = {"matchLabels": selector_labels(spec, CALIBRATION_COMPONENT)}
    job = _egress_only_policy(
        spec,
        f"{spec.name}-calibration",
        CALIBRATION_COMPONENT,
        [*egress(spec, settings), {"to": [{"podSelector": servers}], "ports": port}],
    )
    meta = metadata(spec, f"{spec.name}-calibration-arms", CALIBRATION_COMPONENT)
    admit = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": {
            "podSelector": servers,
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": job_pods}], "ports": port}],
        },
    }
    return [job, admit]


def calibration_arm(spec: WorkloadSpec, settings: ServingSettings) -> WorkloadSpec | None:
    """The speculative arm's WorkloadSpec, None without `serving.calibration`."""
    return arm_spec(spec, settings) if settings.calibration is not None else None


def calibration_manifests(
    spec: WorkloadSpec, settings: ServingSettings, arm: WorkloadSpec | None = None
) -> list[Manifest]:
    """Everything `serving.calibration` adds (nothing when it is unset); `arm` is the arm's
    spec when the caller derived it already."""
    if settings.calibration is None:
        return []
    from trnspec.config.serving import apply_overrides, load_profile

    arm = arm if arm is not None else arm_spec(spec, settings)
    cfg = apply_overrides(
        load_profile(settings.calibration.speculative.profile),
        list(settings.calibration.speculative.overrides),
    )
    k = cfg.speculation.num_speculative_tokens
    arm_objects = arm_manifests(spec, arm, settings)
    # The plain arm is the main Deployment (built again here as build_manifests builds it).
    servers = [deployment(spec, settings), *(m for m in arm_objects if m["kind"] == "Deployment")]
    clock = job_clock(servers, _calibration(settings))
    return [
        *calibration_policies(spec, arm, settings),
        *arm_objects,
        calibration_job(spec, arm, settings, k, clock),
    ]


def calibration_details(manifests: list[Manifest]) -> dict[str, Any]:
    """For tests and docs: the Job and the arm's Deployment among `manifests`."""
    job = [m for m in manifests if m["kind"] == "Job" and "-calibration-" in m["metadata"]["name"]]
    arm = [
        m
        for m in manifests
        if m["kind"] == "Deployment" and m["metadata"]["name"].endswith(ARM_SUFFIX)
    ]
    return {"job": job[0] if job else None, "arm": arm[0] if arm else None}
