"""Derived values the manifests need, computed once from the engine's ServingConfig.

Every number a pod asks for (Neuron devices, CPU, memory) comes from the TP degree, the LNC and
the instance table in `trnspec.hardware.topology`, so changing `tensor_parallel_size` in a profile
changes the resource requests with it; nothing here is typed by hand per profile.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError
from trnspec.boundary.problems import ABSENT, InputError, Problem
from trnspec.hardware.packing import NODE_SHARE, pod_requests, staged_storage_gib
from trnspec.hardware.topology import INSTANCE_TYPES, instance

from infra.contracts import MODELS_PREFIX
from infra.serving.manifests.placeholders import BUNDLE_SHA256_PLACEHOLDER, BUNDLE_URI_PLACEHOLDER
from infra.settings.serving import (
    ServingSettings,
    ServingSettingsError,
    load_serving_settings,
    serving_cross_checks,
)

if TYPE_CHECKING:
    from trnspec.config.serving import ServingConfig


@dataclass(frozen=True)
class HubCopy:
    """One model the weights Job copies from the Hugging Face Hub into the model bucket."""

    repo: str
    """Hub repository id (owner/name): the profile's source before the bucket override."""
    revision: str | None
    """Hub revision (branch, tag or commit); None: the default branch."""
    key: str
    """Where in the model bucket the pods read it: models/<served name>/."""


class ClusterWorkloadError(InputError):
    """The serving config cannot run as a cluster workload; lists every reason at once.

    (Not trnspec_tools.bench's WorkloadError, which is about a benchmark's prompts.)"""

    heading = "cannot build the serving workload:"


@dataclass(frozen=True)
class WorkloadSpec:
    """Everything the manifest builders need, already validated and derived."""

    name: str
    namespace: str
    image_uri: str
    #: The ServingConfig as YAML, exactly what `python -m trnspec serve --config` reads.
    config_yaml: str
    #: sha256 of config_yaml (before any CDK token substitution): rolls pods, names the Job.
    config_sha256: str
    served_model_name: str
    instance_type: str
    tensor_parallel_size: int
    lnc: int
    neuron_devices: int
    cpu: int
    memory_gib: int
    #: KEDA's target of requests in flight per replica (serving.streams_per_replica, else the
    #: engine's max_num_seqs).
    streams_per_replica: int
    #: Ephemeral storage of the data volume: serving.weights_volume_gib, else sized from the
    #: model (trnspec.hardware.packing.staged_storage_gib).
    storage_gib: int
    port: int
    bucket_name: str
    region: str | None = None
    #: The VPC's IPv4 CIDR (may be a CloudFormation token): the network policies open HTTPS to
    #: the VPC endpoints and, with the internal NLB, ingress from it.
    vpc_cidr: str | None = None
    #: ARN of the Secrets Manager secret holding the API key (a token), when the key is on.
    api_key_secret_arn: str | None = None
    #: Models the weights Job copies from the Hub to the bucket (empty: nothing to copy).
    hub_copies: tuple[HubCopy, ...] = ()
    #: ARN of the secret holding a Hub token for gated models (a token), with hub_copies.
    hf_token_secret_arn: str | None = None
    #: s3://bucket/key of the trnspec bundle the pods install, and its sha256: the serving
    #: stack's file asset (infra/serving/bundle/asset.py), bound over these placeholders.
    bundle_uri: str = BUNDLE_URI_PLACEHOLDER
    bundle_sha256: str = BUNDLE_SHA256_PLACEHOLDER

    @property
    def short_hash(self) -> str:
        return self.config_sha256[:10]


def model_source_overrides(cfg: ServingConfig, bucket_name: str) -> list[str]:
    """`--set` overrides pointing target (and draft) at the model bucket's models/ prefix.

    The key is the served model name, so uploading a model means
    `python -m trnspec stage upload DIR s3://<bucket>/models/<name>/` (docs/workload.md).
    """
    overrides = [f"target.source=s3://{bucket_name}/{MODELS_PREFIX}{cfg.target.name}/"]
    draft = cfg.speculation.draft
    if cfg.speculation.method != "none" and draft is not None:
        overrides.append(
            f"speculation.draft.source=s3://{bucket_name}/{MODELS_PREFIX}{draft.name}/"
        )
    return overrides


def hub_copies(
    cfg: ServingConfig, settings: ServingSettings, bucket_name: str
) -> tuple[HubCopy, ...]:
    """The models the pods read from the bucket's models/ prefix that the profile takes from the
    Hugging Face Hub: the weights Job copies each (repo at revision) to where the pods read it.
    A source the user pointed elsewhere (an override to S3 or a local directory) is not copied.
    """
    from trnspec.config.s3_uri import is_s3_uri, parse_s3_uri
    from trnspec.config.serving import apply_overrides, load_profile

    if not settings.models_from_bucket:
        return ()
    hub = apply_overrides(load_profile(settings.profile), list(settings.overrides))
    pairs = [(hub.target, cfg.target)]
    if cfg.speculation.method != "none" and cfg.speculation.draft and hub.speculation.draft:
        pairs.append((hub.speculation.draft, cfg.speculation.draft))
    copies = []
    for origin, served in pairs:
        if not is_s3_uri(served.source) or is_s3_uri(origin.source):
            continue
        where = parse_s3_uri(served.source)
        local = origin.source.startswith(("/", ".", "~")) or origin.source.count("/") != 1
        if where.bucket == bucket_name and where.prefix.startswith(MODELS_PREFIX) and not local:
            copies.append(HubCopy(origin.source, origin.revision, f"{where.prefix}/"))
    return tuple(copies)


def resolve_serving_config(settings: ServingSettings, bucket_name: str) -> ServingConfig:
    """The engine config the pods run: profile, then bucket sources, then the user's overrides.

    Uses the engine's own loader and checks, so infra/ carries no second definition of the
    engine's fields; a bad profile or override raises the engine's ConfigError (all problems).
    """
    from trnspec.checks.all_checks import validate
    from trnspec.config.serving import apply_overrides, load_profile

    cfg = load_profile(settings.profile)
    if settings.models_from_bucket:
        cfg = apply_overrides(cfg, model_source_overrides(cfg, bucket_name))
    cfg = apply_overrides(cfg, list(settings.overrides))
    validate(cfg)
    return cfg


def config_to_yaml(cfg: ServingConfig) -> str:
    data: dict[str, Any] = cfg.model_dump(mode="json")
    return yaml.safe_dump(data, sort_keys=False)


def derive_workload(
    cfg: ServingConfig,
    settings: ServingSettings,
    *,
    image_uri: str,
    bucket_name: str,
    region: str | None = None,
    vpc_cidr: str | None = None,
) -> WorkloadSpec:
    """Check that the config can run on one Trn2 node and derive its resource requests."""
    instance_type = cfg.hardware.instance_type
    tp = cfg.tensor_parallel_size
    lnc = cfg.hardware.lnc
    if instance_type not in INSTANCE_TYPES:
        raise ClusterWorkloadError(
            [
                Problem(
                    "hardware.instance_type",
                    instance_type,
                    "the cluster workload runs on Trn2 only; use one of "
                    f"{', '.join(INSTANCE_TYPES)} (the 'cpu' engine is the local launcher's)",
                )
            ]
        )
    node = instance(instance_type)
    devices = node.chips_for(tp, lnc)
    problems = _node_fit_problems(cfg, settings, devices)
    storage, storage_problems = _storage_gib(cfg, settings)
    streams = settings.streams_per_replica or cfg.max_num_seqs
    problems += storage_problems + _streams_problems(cfg, streams)
    if problems or storage is None:
        raise ClusterWorkloadError(problems)
    requests = pod_requests(instance_type, tp, lnc, storage)
    config_yaml = config_to_yaml(cfg)
    return WorkloadSpec(
        name=workload_name(settings, cfg),
        namespace=settings.namespace,
        image_uri=image_uri,
        config_yaml=config_yaml,
        config_sha256=hashlib.sha256(config_yaml.encode()).hexdigest(),
        served_model_name=cfg.target.name,
        instance_type=instance_type,
        tensor_parallel_size=tp,
        lnc=lnc,
        neuron_devices=devices,
        cpu=int(requests.cpu),
        memory_gib=int(requests.memory_gib),
        storage_gib=storage,
        streams_per_replica=streams,
        port=cfg.server.port,
        bucket_name=bucket_name,
        region=region,
        vpc_cidr=vpc_cidr,
        hub_copies=hub_copies(cfg, settings, bucket_name),
    )


#: How profile names spell a speculation method ("qwen3-4b-baseline", "qwen3-32b-draft").
_METHOD_WORD = {"none": "baseline", "draft_model": "draft"}


def _method_word(method: str) -> str:
    return _METHOD_WORD.get(method, method.replace("_", "-"))


def workload_name(settings: ServingSettings, cfg: ServingConfig) -> str:
    """The Deployment's (and Service's) name says what it serves: `serving.name` when set, else
    the profile's name; when overrides change the profile's speculation method (a
    `qwen3-4b-dflash-3xl` run with `speculation.method=none`), the method's word in that name is
    replaced by the one served (`qwen3-4b-baseline-3xl`), or appended when the name has none."""
    name = settings.app_name
    if settings.name:
        return name
    from trnspec.config.serving import load_profile

    planned = _method_word(load_profile(settings.profile).speculation.method)
    served = _method_word(cfg.speculation.method)
    if planned == served:
        return name
    words = name.split("-")
    if planned in words:
        words[words.index(planned)] = served
    else:
        words.append(served)
    return "-".join(words)[:40].strip("-")


def _node_fit_problems(
    cfg: ServingConfig, settings: ServingSettings, devices: int
) -> list[Problem]:
    """One replica must fit one node: its Neuron devices, and its shared memory within the
    memory its share of the node gets."""
    instance_type = cfg.hardware.instance_type
    node = instance(instance_type)
    lnc = cfg.hardware.lnc
    problems: list[Problem] = []
    if devices > node.chips:
        problems.append(
            Problem(
                "tensor_parallel_size",
                cfg.tensor_parallel_size,
                f"needs {devices} Neuron devices at LNC={lnc} but {instance_type} has "
                f"{node.chips}; one replica spanning nodes (LeaderWorkerSet) is not supported, "
                f"use at most {node.logical_cores(lnc)}",
            )
        )
    if settings.shm_gib >= node.memory_gib * devices / node.chips * NODE_SHARE:
        problems.append(
            Problem(
                "serving.shm_gib",
                settings.shm_gib,
                f"larger than the memory one replica gets on {instance_type}; lower it",
            )
        )
    return problems


def _storage_gib(cfg: ServingConfig, settings: ServingSettings) -> tuple[int | None, list[Problem]]:
    """The data volume's size: `serving.weights_volume_gib`, else sized from the model; None
    with the problem when the model's size is not known offline."""
    if settings.weights_volume_gib is not None:
        return settings.weights_volume_gib, []
    staged = staged_storage_gib(cfg)
    if staged is not None:
        return staged.gib, []
    problem = Problem(
        "serving.weights_volume_gib",
        ABSENT,
        f"the size of {cfg.target.name} is not known offline, so the staged storage cannot be "
        "sized: set serving.weights_volume_gib (GiB of weights + compiled graphs + headroom)",
    )
    return None, [problem]


def _streams_problems(cfg: ServingConfig, streams: int) -> list[Problem]:
    """KEDA's per-replica target cannot exceed the streams a replica runs at once."""
    if streams <= cfg.max_num_seqs:
        return []
    return [
        Problem(
            "serving.streams_per_replica",
            streams,
            f"a replica runs at most max_num_seqs={cfg.max_num_seqs} streams, so a higher "
            "target leaves requests queued instead of adding a replica; use at most "
            f"{cfg.max_num_seqs}, or leave it unset",
        )
    ]


@dataclass(frozen=True)
class CheckedServing:
    """A valid `serving:` section with the engine config and the workload derived from it."""

    settings: ServingSettings
    config: ServingConfig
    spec: WorkloadSpec


#: Serving settings that decide the engine config; when one is bad the engine is not resolved.
_ENGINE_INPUTS = frozenset({"profile", "overrides", "models_from_bucket"})


def check_serving(
    raw: dict[str, Any] | None, *, bucket_name: str, image_uri: str
) -> CheckedServing:
    """Validate a whole `serving:` section in one pass, before any construct (or asset) exists.

    Lists every problem at once in one ServingSettingsError: the section's own fields and
    cross-checks, then the engine config it names (profile + bucket sources + overrides, with
    trnspec's own checks) and the workload derived from it (with placeholders for the bucket and
    image). A bad field is left at its default for the later steps, so they still run; the engine
    is skipped only when the fields that name it are bad.
    """
    from trnspec.config.serving import ConfigError

    problems: list[Problem] = []
    try:
        settings = load_serving_settings(raw)
    except ServingSettingsError as err:
        problems.extend(err.problems)
        if not isinstance(raw, dict):
            raise ServingSettingsError(problems, heading=_HEADING) from None
        bad = {p.field.removeprefix("serving.").split(".")[0] for p in problems}
        try:
            settings = ServingSettings.model_validate(
                {k: v for k, v in raw.items() if k not in bad}
            )
        except ValidationError:  # not expected: every failing field was left out
            raise ServingSettingsError(problems, heading=_HEADING) from None
        problems.extend(p for p in serving_cross_checks(settings) if p not in problems)
        bad |= {p.field.removeprefix("serving.").split(".")[0] for p in problems}
        if bad & _ENGINE_INPUTS:
            raise ServingSettingsError(problems, heading=_HEADING) from None
    cfg = spec = None
    try:
        cfg = resolve_serving_config(settings, bucket_name)
        spec = derive_workload(cfg, settings, image_uri=image_uri, bucket_name=bucket_name)
    except (ConfigError, ClusterWorkloadError) as err:
        # The engine names its profile by its CLI flag; here it is the serving section's field.
        problems.extend(
            dataclasses.replace(p, field="serving.profile") if p.field == "--profile" else p
            for p in err.problems
        )
    if problems or cfg is None or spec is None:
        raise ServingSettingsError(problems, heading=_HEADING)
    return CheckedServing(settings, cfg, spec)


_HEADING = (
    "invalid serving section (engine fields such as target.source come from serving.profile "
    "and serving.overrides):"
)
