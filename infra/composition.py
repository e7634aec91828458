"""The whole CDK app in one place: platform stack, serving stack on its cluster, cdk-nag.

`app.py` and the tests both call `compose`, so what the tests synthesize is what `cdk deploy`
deploys; the choice of stacks and their order is made here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import App
from trnspec.config import ConfigError
from trnspec.problems import Problem

from infra.addons.pins import PINS, ChartPin, ImagePin, compatibility_problems
from infra.addons.selection import (
    WorkloadNeeds,
    addon_problems,
    installed_addons,
    workload_needs,
)
from infra.nag import acknowledge, attach_nag
from infra.neuron_runtime import runtime_problems
from infra.placement import placement_problems
from infra.platform_stack import PlatformStack
from infra.serving_settings import ServingSettings, ServingSettingsError
from infra.serving_stack import BUCKET_PLACEHOLDER, ServingStack, add_serving
from infra.settings import DeploymentSettings, SettingsError, load_settings, profile_data
from infra.workload.manifests import build_manifests
from infra.workload.spec import (
    WorkloadError,
    check_serving,
    derive_workload,
    resolve_serving_config,
)


@dataclass(frozen=True)
class Composition:
    """The stacks of one deployment profile, and the cdk-nag findings acknowledged on them."""

    platform: PlatformStack
    serving: ServingStack
    acknowledged: list[str]


def compose(app: App, settings: DeploymentSettings, *, check_placement: bool = True) -> Composition:
    """Build every stack of a profile onto `app`.

    Raises the settings' and the engine's own errors (every problem listed) before any construct
    exists when the `serving:` section is bad, when the installed add-ons break a declared
    relation or a pin does not support the cluster's Kubernetes version, or when no Trn2 pool
    makes a node the serving pods fit (infra/placement.py); the acknowledgements run last so
    they see every construct of both stacks.

    `check_placement=False` builds a profile the placement check refuses, so that
    tests/infra/test_scheduling_simulation.py can show the autoscalers' simulation on its
    templates reaches the same verdict; `app.py` always checks.
    """
    # One pass over the serving section, before any construct: every problem in one synth, and
    # a bad profile leaves no staged assets in cdk.out.
    serving_settings = check_serving(
        settings.serving, bucket_name=BUCKET_PLACEHOLDER, image_uri="preflight"
    )
    problems = access_problems(settings)
    problems += platform_problems(settings, serving_settings, check_placement=check_placement)
    if problems:
        raise SettingsError(problems)
    attach_nag(app)
    platform = PlatformStack(
        app, settings.stack_name, settings=settings, needs=workload_needs(serving_settings)
    )
    serving = add_serving(app, platform, serving_settings)
    acknowledged = acknowledge(platform)
    return Composition(platform, serving, acknowledged)


def check_profile(profile: str, overrides: dict[str, Any] | None = None) -> DeploymentSettings:
    """Validate a deployment profile (plus `-c` overrides) in one pass and return its settings.

    Every problem is listed in one SettingsError: the deployment settings, the `serving:` section
    with the engine config and workload it names (checked even when the deployment settings are
    bad, from the profile as read), and, when both are valid, the platform against the workload
    (add-ons, pins, a Trn2 pool for the serving pods). One synth shows everything to fix.
    """
    problems: list[Problem] = []
    settings: DeploymentSettings | None = None
    try:
        settings = load_settings(profile, overrides)
        serving_raw = settings.serving
    except SettingsError as err:
        if any(p.field == "profile" for p in err.problems):
            raise  # the profile itself could not be read: nothing else to check
        problems += err.problems
        serving_raw = profile_data(profile, overrides).get("serving")
    try:
        serving = check_serving(serving_raw, bucket_name=BUCKET_PLACEHOLDER, image_uri="preflight")
    except (ServingSettingsError, ConfigError, WorkloadError) as err:
        problems += err.problems
        serving = None
    if settings is not None:
        problems += access_problems(settings)
    if settings is not None and serving is not None:
        problems += platform_problems(settings, serving)
    if problems or settings is None:
        raise SettingsError(problems, source=f"profile {profile}")
    return settings


def access_problems(settings: DeploymentSettings) -> list[Problem]:
    """Who administers the cluster must be named: the EKS access entry of the cluster's creator
    goes to CloudFormation's execution role, not to the person running `cdk deploy`, so without
    an entry of their own kubectl and `smoke.py --stack` are refused (docs/platform.md)."""
    if settings.admin_principal_arns:
        return []
    return [
        Problem(
            "admin_principal_arns",
            [],
            "name the IAM role or user you deploy and run kubectl or smoke.py --stack as: "
            "-c admin_principal_arns='[arn:aws:iam::ACCOUNT:role/NAME]' (aws sts "
            "get-caller-identity shows it; an assumed-role ARN arn:aws:sts::ACCOUNT:"
            "assumed-role/NAME/SESSION is the role arn:aws:iam::ACCOUNT:role/NAME, with the "
            "role's path if it has one)",
        )
    ]


def platform_problems(
    settings: DeploymentSettings, serving: ServingSettings, *, check_placement: bool = True
) -> list[Problem]:
    """The platform against the workload, in one pass: the add-ons it needs (relations, pins
    for the cluster's Kubernetes version), an image whose Neuron runtime the nodes' driver runs
    (infra/neuron_runtime.py) and a Trn2 pool whose node fits its pods (read from the manifests
    the serving stack applies)."""
    problems = addon_check_problems(settings, workload_needs(serving))
    problems += runtime_problems(resolve_serving_config(serving, BUCKET_PLACEHOLDER))
    if check_placement:
        problems += placement_problems(settings.trn2_pools, preflight_manifests(settings, serving))
    return problems


def preflight_manifests(
    settings: DeploymentSettings, serving: ServingSettings
) -> list[dict[str, Any]]:
    """The workload's Kubernetes objects as the serving stack builds them, with placeholders
    for the bucket, image and (for an existing VPC) CIDR, which no pod's placement depends on."""
    cfg = resolve_serving_config(serving, BUCKET_PLACEHOLDER)
    spec = derive_workload(
        cfg,
        serving,
        image_uri="preflight",
        bucket_name=BUCKET_PLACEHOLDER,
        vpc_cidr=settings.vpc.cidr,
    )
    return build_manifests(spec, serving).all()


def check_addons(
    settings: DeploymentSettings,
    needs: WorkloadNeeds,
    pins: tuple[ChartPin | ImagePin, ...] = PINS,
) -> None:
    """Raise `addon_check_problems`, if any, as one SettingsError."""
    problems = addon_check_problems(settings, needs, pins)
    if problems:
        raise SettingsError(problems)


def addon_check_problems(
    settings: DeploymentSettings,
    needs: WorkloadNeeds,
    pins: tuple[ChartPin | ImagePin, ...] = PINS,
) -> list[Problem]:
    """An installed set whose add-ons' declared requirements or exclusions do not hold
    (infra/addons/selection.py), or a cluster version outside the supported range of an
    installed add-on's pin (infra/addons/pins.py); one problem per line."""
    addons = installed_addons(settings, needs)
    installed = ",".join(sorted(addons))
    problems = [Problem("installed add-ons", installed, line) for line in addon_problems(addons)]
    problems += [
        Problem("kubernetes_version", settings.kubernetes_version, line)
        for line in compatibility_problems(settings.kubernetes_version, addons, pins)
    ]
    return problems
