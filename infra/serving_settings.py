"""Typed settings for the serving workload: the `serving:` section of a deployment profile.

The serving *engine* is described by the engine's own schema (`trnspec.config`: a profile plus
`--set` overrides); these settings only say how the cluster runs it (namespace, replicas,
autoscaling target, exposure, monitoring, storage). Keeping the two apart means infra/ never
re-defines a vLLM flag.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from trnspec.problems import InputError, Problem, problems_from_validation
from trnspec.user_input import Int, Text

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_OVERRIDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*=.*$", re.DOTALL)
_SECTION = "serving"


class ServingSettingsError(InputError):
    """Every problem of a `serving:` section, one per line: `serving.<field>=<value>: <fix>`.

    Raised together so one run shows all of them.
    """

    heading = "invalid serving settings:"


class ServingSettings(BaseModel):
    """How the cluster runs one serving profile."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: Text = Field("qwen3-32b-draft", description="Engine profile (trnspec.config).")
    overrides: tuple[Text, ...] = Field(
        (), description="Engine `--set dotted.path=value` overrides applied to the profile."
    )
    name: Text | None = Field(
        None, description="Kubernetes object name; defaults to the profile name."
    )
    namespace: Text = Field("trnspec", description="Namespace of the serving objects.")
    min_replicas: Int = Field(1, ge=1, le=64, description="Replicas kept while there is no load.")
    max_replicas: Int = Field(2, ge=1, le=64, description="Upper bound for the autoscaler.")
    scale_to_zero: bool = Field(
        False, description="Let KEDA remove the last replica when idle (see docs/workload.md)."
    )
    waiting_requests_per_replica: Int = Field(
        4, ge=1, le=1024, description="Target of vllm:num_requests_waiting per replica."
    )
    internal_nlb: bool = Field(
        False, description="Also expose the service on an internal NLB (AWS LB Controller)."
    )
    prometheus: Literal["in-cluster", "existing"] = Field(
        "in-cluster",
        description="in-cluster: install kube-prometheus-stack; existing: use prometheus_url.",
    )
    prometheus_url: Text | None = Field(
        None, description="Prometheus HTTP API base URL, only with prometheus: existing."
    )
    monitoring_namespace: Text = Field("monitoring", description="Namespace of Prometheus/Grafana.")
    weights_storage: Literal["node-local", "ebs"] = Field(
        "node-local",
        description="node-local: emptyDir on the kubelet's disk; ebs: ephemeral PVC per pod.",
    )
    weights_volume_gib: Int = Field(
        300,
        ge=10,
        le=16384,
        description="Scratch for staged weights + compiled graphs (Llama-3.1-70B bf16 is 141 GB); "
        "with node-local it must fit the node's disk next to the images.",
    )
    ebs_storage_class: Text = Field("gp3", description="StorageClass for weights_storage: ebs.")
    shm_gib: Int = Field(32, ge=1, le=512, description="Size of the /dev/shm memory emptyDir.")
    max_startup_minutes: Int = Field(
        90, ge=5, le=24 * 60, description="Startup probe budget: staging + load (+ compile)."
    )
    max_request_seconds: Int = Field(
        600, ge=10, le=3600, description="Longest request to drain before a pod is killed."
    )
    precompile_on_deploy: bool = Field(
        True, description="Run the precompile Job at deploy; otherwise it is created suspended."
    )
    precompile_timeout_hours: Int = Field(
        6, ge=1, le=48, description="Deadline of the precompile Job."
    )
    compile_cache_retention_days: Int = Field(
        30, ge=1, le=3650, description="Compiled artifacts not rewritten for this long expire."
    )
    models_from_bucket: bool = Field(
        True,
        description="Point target/draft sources at s3://<model bucket>/models/<served name>/.",
    )

    @property
    def app_name(self) -> str:
        """Kubernetes name of the workload: `name`, or the profile name made DNS-safe."""
        if self.name:
            return self.name
        return re.sub(r"[^a-z0-9-]+", "-", self.profile.lower()).strip("-")[:40].strip("-")


def cross_check(s: ServingSettings) -> list[Problem]:
    """Rules over several fields (or beyond a type), run once every field is individually valid;
    every problem is collected so one run shows all of them."""
    problems: list[Problem] = []

    def bad(field: str, value: object, fix: str) -> None:
        problems.append(Problem(f"{_SECTION}.{field}", value, fix))

    for field in ("namespace", "monitoring_namespace"):
        value = getattr(s, field)
        if not _DNS_LABEL.match(value) or len(value) > 63:
            bad(
                field,
                value,
                "use a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)",
            )
    if s.name is not None and (not _DNS_LABEL.match(s.name) or len(s.name) > 40):
        bad(
            "name",
            s.name,
            "use a DNS-1123 label of at most 40 characters "
            "(suffixes such as '-precompile-<hash>' are appended)",
        )
    if s.max_replicas < s.min_replicas:
        bad("max_replicas", s.max_replicas, f"must be >= min_replicas ({s.min_replicas})")
    for i, item in enumerate(s.overrides):
        if not _OVERRIDE.match(item):
            bad(
                f"overrides.{i}",
                item,
                "use 'dotted.path=value', e.g. 'speculation.num_speculative_tokens=5'",
            )
    if s.prometheus == "existing" and not s.prometheus_url:
        bad(
            "prometheus_url",
            None,
            "required with prometheus: existing (e.g. http://prometheus-server.monitoring.svc:9090)",
        )
    if s.prometheus == "in-cluster" and s.prometheus_url is not None:
        bad(
            "prometheus_url",
            s.prometheus_url,
            "only allowed with prometheus: existing (in-cluster derives the address)",
        )
    if s.prometheus_url is not None and not s.prometheus_url.startswith(("http://", "https://")):
        bad("prometheus_url", s.prometheus_url, "use an http:// or https:// URL")
    if s.shm_gib >= s.weights_volume_gib and s.weights_storage == "node-local":
        bad(
            "shm_gib",
            s.shm_gib,
            f"must be smaller than weights_volume_gib ({s.weights_volume_gib})",
        )
    return problems


def load_serving_settings(raw: dict[str, Any] | None) -> ServingSettings:
    """Build settings from the `serving:` section of a deployment profile (None means defaults).

    Raises ServingSettingsError listing every problem, never a bare pydantic traceback.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ServingSettingsError(
            [Problem(_SECTION, raw, "must be a mapping of settings (or omitted for defaults)")]
        )
    try:
        settings = ServingSettings.model_validate(raw)
    except ValidationError as error:
        raise ServingSettingsError(
            problems_from_validation(error, ServingSettings, prefix=f"{_SECTION}.")
        ) from None
    problems = cross_check(settings)
    if problems:
        raise ServingSettingsError(problems)
    return settings
