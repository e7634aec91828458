"""Typed settings for the serving workload: the `serving:` section of a deployment profile.

The serving *engine* is described by the engine's own schema (`trnspec.config.serving`: a profile
plus `--set` overrides); these settings only say how the cluster runs it (namespace, replicas,
autoscaling target, exposure, monitoring, storage). Keeping the two apart means infra/ never
re-defines a vLLM flag.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from trnspec.boundary.problems import InputError, Problem, problems_from_validation
from trnspec.boundary.user_input import Int, Text
from trnspec.plan.deployment_schema import (
    DEFAULT_MAX_STARTUP_MINUTES,
    DEFAULT_SCALE_TO_ZERO,
    StartupMinutes,
)

from infra.settings.calibration import CalibrationSettings
from infra.settings.plan_figures import PlanFigures
from infra.settings.wake import WakeSettings

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: A DNS-1123 subdomain (at most 253 characters): what Kubernetes requires of most object names,
#: a StorageClass's among them (kubernetes.io/docs/concepts/overview/working-with-objects/names).
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_OVERRIDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*=.*$", re.DOTALL)
_SECTION = "serving"
#: Kubernetes label key (optional DNS prefix + name) and value syntax.
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


class ServingSettingsError(InputError):
    """Every problem of a `serving:` section, one per line: `serving.<field>=<value>: <fix>`.

    Raised together so one run shows all of them.
    """

    heading = "invalid serving settings:"


class ServingSettings(BaseModel):
    """How the cluster runs one serving profile."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: Text = Field("qwen3-4b-dflash", description="Engine profile (trnspec.config.serving).")
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
        DEFAULT_SCALE_TO_ZERO,
        description="Let KEDA remove the last replica when idle (see docs/workload.md).",
    )
    wake: WakeSettings = Field(
        WakeSettings(),
        description="With scale_to_zero: what a request at zero replicas meets.",
    )
    streams_per_replica: Int | None = Field(
        None,
        ge=1,
        le=1024,
        description="KEDA target: requests in flight (vLLM's running + waiting) per replica; "
        "unset: the engine's max_num_seqs, so replicas = ceil(streams / max_num_seqs) and no "
        "replica runs a batch larger than the one it was planned at.",
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
    monitor_labels: dict[str, str] = Field(
        default_factory=dict,
        description="Labels on the ServiceMonitors and the PodMonitor (prometheus: in-cluster), "
        "for a Prometheus that selects monitors by label: a stock kube-prometheus-stack selects "
        "`release: <its release name>` only. The platform's Prometheus selects every monitor.",
    )
    weights_storage: Literal["node-local", "ebs"] = Field(
        "node-local",
        description="node-local: emptyDir on the kubelet's disk; ebs: ephemeral PVC per pod.",
    )
    weights_volume_gib: Int | None = Field(
        None,
        ge=10,
        le=16384,
        description="Scratch for staged weights + compiled graphs; unset: sized from the model "
        "(trnspec packing.staged_storage_gib: target + draft weights, their compiled copy, "
        "graphs, 25 % headroom). With node-local it must fit the node's disk next to the images.",
    )
    ebs_storage_class: Text = Field("gp3", description="StorageClass for weights_storage: ebs.")
    weights_rerun: Text | None = Field(
        None,
        description="Any token: it enters the weights Jobs' names, so a new token copies the "
        "models again (`cdk deploy -c serving.weights_rerun=2` after a failed copy); keep it in "
        "later deploys, or the Job of the previous token runs again.",
    )
    shm_gib: Int = Field(32, ge=1, le=512, description="Size of the /dev/shm memory emptyDir.")
    max_startup_minutes: StartupMinutes = Field(
        DEFAULT_MAX_STARTUP_MINUTES,
        description="Startup budget after the engine's waits for weights: staging + load "
        "(+ compile); the startup probe adds those waits (trnspec.config.pod_contract).",
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
        30,
        ge=1,
        le=3650,
        description="Days a replaced or deleted compile-cache object is kept as an old version; "
        "current entries never expire (S3 counts expiry from creation, not last read).",
    )
    models_from_bucket: bool = Field(
        True,
        description="Point target/draft sources at s3://<model bucket>/models/<served name>/.",
    )
    # --- who may call the model (docs/workload.md, "Security") ---
    api_key: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Require a bearer API key (Secrets Manager); auto: on with internal_nlb.",
    )
    client_namespaces: tuple[str, ...] = Field(
        (), description="Namespaces whose client pods may call the server; empty: its own."
    )
    client_pod_labels: dict[str, str] = Field(
        default_factory=lambda: {"trnspec.io/client": "true"},
        description="Labels a pod must carry to call the server (NetworkPolicy).",
    )
    nlb_source_cidrs: tuple[str, ...] = Field(
        (),
        description="Client CIDRs the internal NLB admits (loadBalancerSourceRanges); "
        "empty: the VPC CIDR.",
    )
    scraper_pod_labels: dict[str, str] = Field(
        default_factory=lambda: {"app.kubernetes.io/name": "prometheus"},
        description="Labels of the Prometheus pods (in monitoring_namespace) that scrape /metrics.",
    )
    scraper_cidrs: tuple[str, ...] = Field(
        (),
        description="Scrapers that are not pods (e.g. an Amazon Managed Prometheus collector's "
        "ENIs): CIDRs also allowed to the server port.",
    )
    s3_egress_cidrs: tuple[str, ...] = Field(
        ("0.0.0.0/0",),
        description="Where pods may send HTTPS besides the VPC (S3 through its gateway endpoint "
        "keeps S3's public addresses); private ranges stay closed.",
    )
    calibration: CalibrationSettings | None = Field(
        None,
        description="Measure a speculative arm beside this (plain) Deployment with a Job "
        "(infra/settings/calibration.py); unset: no arm, no Job.",
    )
    plan_figures: PlanFigures | None = Field(
        None,
        description="What the deployed plan predicted (plan.chosen, plan.speculative_arm): set "
        "from the plan file (serving.plan) only; the dashboard shows it beside the measured.",
    )

    @property
    def api_key_enabled(self) -> bool:
        """Whether the server requires the API key: `on`, or `auto` with the internal NLB."""
        return self.api_key == "on" or (self.api_key == "auto" and self.internal_nlb)

    @property
    def app_name(self) -> str:
        """Kubernetes name of the workload: `name`, or the profile name made DNS-safe."""
        if self.name:
            return self.name
        return re.sub(r"[^a-z0-9-]+", "-", self.profile.lower()).strip("-")[:40].strip("-")


def serving_cross_checks(s: ServingSettings) -> list[Problem]:
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
    if len(s.ebs_storage_class) > 253 or not _DNS_SUBDOMAIN.match(s.ebs_storage_class):
        bad(
            "ebs_storage_class",
            s.ebs_storage_class,
            "name a StorageClass: a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
            "at most 253 characters), e.g. gp3",
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
    if (
        s.weights_volume_gib is not None
        and s.shm_gib >= s.weights_volume_gib
        and s.weights_storage == "node-local"
    ):
        bad(
            "shm_gib",
            s.shm_gib,
            f"must be smaller than weights_volume_gib ({s.weights_volume_gib})",
        )
    problems.extend(_network_problems(s))
    return problems


def _network_problems(s: ServingSettings) -> list[Problem]:
    """Client and scraper selectors, CIDRs and NLB ranges of the NetworkPolicies."""
    problems: list[Problem] = []

    def bad(field: str, value: object, fix: str) -> None:
        problems.append(Problem(f"{_SECTION}.{field}", value, fix))

    for i, ns in enumerate(s.client_namespaces):
        if not _DNS_LABEL.match(ns) or len(ns) > 63:
            bad(
                f"client_namespaces.{i}",
                ns,
                "use a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)",
            )
    for field in ("client_pod_labels", "scraper_pod_labels", "monitor_labels"):
        labels: dict[str, str] = getattr(s, field)
        if not labels and field != "monitor_labels":
            bad(
                field,
                {},
                "name at least one label (an empty selector would admit every pod of the "
                "namespace)",
            )
        for key, value in labels.items():
            if not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
                bad(
                    f"{field}.{key}",
                    value,
                    "use a Kubernetes label key and value (e.g. trnspec.io/client: 'true')",
                )
    for field in ("nlb_source_cidrs", "scraper_cidrs", "s3_egress_cidrs"):
        for i, cidr in enumerate(getattr(s, field)):
            try:
                ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as err:
                bad(f"{field}.{i}", cidr, f"use an IPv4 CIDR such as 10.0.0.0/16 ({err})")
    if s.nlb_source_cidrs and not s.internal_nlb:
        bad(
            "nlb_source_cidrs",
            list(s.nlb_source_cidrs),
            "only used with internal_nlb: true; set it or drop the ranges",
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
    problems = serving_cross_checks(settings)
    if problems:
        raise ServingSettingsError(problems)
    return settings
