"""The whole CDK app in one place: platform stack, serving stack on its cluster, cdk-nag.

With `cluster.existing` set (infra/settings/existing_cluster.py) there is no platform: the serving
stack alone, on the imported cluster, and none of the platform's checks (add-ons, pins, pools,
offerings, cluster admins) run; the nodes are checked on the cluster instead
(`python -m trnspec_tools manifests --check`).

A profile is checked and its serving workload derived once (`Preflight`: the engine config, the
workload spec and its manifests), before any construct; both stacks are built from it
(`build_stacks`). `app.py` and the tests go through the same two steps (`check_profile` or
`preflight`, then `build_stacks`; `compose` is both), so what the tests synthesize is what
`cdk deploy` deploys; the choice of stacks and their order is made here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Environment
from trnspec.boundary.problems import Problem
from trnspec.config.serving import ConfigError

from infra.compliance.nag import acknowledge, attach_nag
from infra.platform.addons.addon import WorkloadNeeds, workload_needs
from infra.platform.addons.pins import PINS, ChartPin, ImagePin, compatibility_problems
from infra.platform.addons.registry import addon_problems, installed_addons
from infra.platform.cluster.existing import ExistingClusterProps
from infra.platform.cluster.offerings import offering_problems
from infra.platform.cluster.placement import (
    CALIBRATION_ENGINE_OVERRIDES,
    ENGINE_OVERRIDES,
    placement_problems,
)
from infra.platform.stack import PlatformStack
from infra.serving.manifests.placeholders import BUCKET_PLACEHOLDER, IMAGE_PLACEHOLDER
from infra.serving.manifests.spec import ClusterWorkloadError, check_serving
from infra.serving.neuron_runtime import runtime_problems
from infra.serving.preflight import WorkloadPreflight, workload_preflight
from infra.serving.stack import (
    ServingStack,
    add_serving,
    add_serving_on_existing,
    serving_stack_name,
)
from infra.settings import DeploymentSettings, SettingsError, load_settings, profile_data
from infra.settings.deploy_context import DeployContext, deploy_context
from infra.settings.serving import ServingSettingsError


@dataclass(frozen=True)
class Preflight:
    """A deployment profile checked, and its workload derived, once per synth before any
    construct exists; both stacks are built from it."""

    settings: DeploymentSettings
    workload: WorkloadPreflight
    """The serving section checked, its engine config, workload spec and manifests."""
    deploy: DeployContext | None = None
    """The profile and `-c` overrides it was read from (check_profile), which the serving stack
    outputs so the next deploy can repeat them; None when built from settings alone."""

    @property
    def needs(self) -> WorkloadNeeds:
        """What the workload asks of the platform's add-ons."""
        return workload_needs(self.workload.settings)


@dataclass(frozen=True)
class Composition:
    """The stacks of one deployment profile, and the cdk-nag findings acknowledged on them."""

    platform: PlatformStack | None
    """None on an existing cluster (`cluster.existing`)."""
    serving: ServingStack
    acknowledged: list[str]


def compose(app: App, settings: DeploymentSettings, *, check_placement: bool = True) -> Composition:
    """Check `settings` (`preflight`), then build every stack of the profile onto `app`.

    `check_placement=False` builds a profile the placement check refuses, so that
    tests/infra/test_scheduling_simulation.py can show the autoscalers' simulation on its
    templates reaches the same verdict; `app.py` always checks.
    """
    return build_stacks(app, preflight(settings, check_placement=check_placement))


def build_stacks(app: App, checked: Preflight) -> Composition:
    """The platform stack, the serving stack on its cluster, cdk-nag; the acknowledgements run
    last so they see every construct of both stacks. On an existing cluster: the serving stack
    alone, on the imported cluster."""
    attach_nag(app)
    existing = checked.settings.cluster.existing
    if existing is not None:
        account, region = checked.settings.account, checked.settings.region
        serving = add_serving_on_existing(
            app,
            serving_stack_name(checked.settings.stack_name),
            checked.workload,
            ExistingClusterProps(existing.name, existing.kubectl_role_arn),
            existing.vpc_cidr,
            Environment(account=account, region=region) if (account or region) else None,
            deploy=checked.deploy,
        )
        return Composition(None, serving, acknowledge(serving))
    platform = PlatformStack(
        app, checked.settings.stack_name, settings=checked.settings, needs=checked.needs
    )
    serving = add_serving(app, platform, checked.workload, deploy=checked.deploy)
    acknowledged = acknowledge(platform)
    return Composition(platform, serving, acknowledged)


def preflight(settings: DeploymentSettings, *, check_placement: bool = True) -> Preflight:
    """Check valid deployment settings against their `serving:` section and derive the workload.

    Raises the settings' and the engine's own errors (every problem listed) before any construct
    exists when the `serving:` section is bad (and a bad profile leaves no staged assets in
    cdk.out), when the installed add-ons break a declared relation or a pin does not support the
    cluster's Kubernetes version, or when no Trn2 pool makes a node the serving pods fit
    (infra/platform/cluster/placement.py).
    """
    checked = Preflight(settings, _workload(settings.serving))
    problems = access_problems(settings)
    problems += platform_problems(checked, check_placement=check_placement)
    if problems:
        raise SettingsError(problems)
    return checked


def check_profile(
    profile: str, overrides: dict[str, Any] | None = None, *, deploy_region: str | None = None
) -> Preflight:
    """Validate a deployment profile (plus `-c` overrides) in one pass and return its preflight.

    Every problem is listed in one SettingsError: the deployment settings, the `serving:` section
    with the engine config and workload it names (checked even when the deployment settings are
    bad, from the profile as read), and, when both are valid, the platform against the workload
    (add-ons, pins, a Trn2 pool for the serving pods). One synth shows everything to fix.
    `deploy_region` is the region `cdk deploy` targets when the profile sets none (app.py reads
    the CDK CLI's CDK_DEFAULT_REGION): the Trn2 offerings are checked there.
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
        workload = _workload(serving_raw)
    except (ServingSettingsError, ConfigError, ClusterWorkloadError) as err:
        problems += err.problems
        workload = None
    if settings is not None:
        problems += access_problems(settings)
    checked = None
    if settings is not None and workload is not None:
        checked = Preflight(settings, workload, deploy_context(profile, overrides))
        problems += platform_problems(checked, deploy_region=deploy_region)
    if problems or checked is None:
        raise SettingsError(problems, source=f"profile {profile}")
    return checked


def _workload(serving_raw: dict[str, Any] | None) -> WorkloadPreflight:
    return workload_preflight(
        check_serving(serving_raw, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    )


def access_problems(settings: DeploymentSettings) -> list[Problem]:
    """Who administers the cluster must be named: the EKS access entry of the cluster's creator
    goes to CloudFormation's execution role, not to the person running `cdk deploy`, so without
    an entry of their own kubectl and `smoke.py --stack` are refused (docs/platform.md). An
    existing cluster's access is its owner's business."""
    if settings.admin_principal_arns or settings.cluster.existing is not None:
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
    checked: Preflight, *, check_placement: bool = True, deploy_region: str | None = None
) -> list[Problem]:
    """The platform against the workload, in one pass: the add-ons it needs (relations, pins
    for the cluster's Kubernetes version), an image whose Neuron runtime the nodes' driver runs
    (infra/serving/neuron_runtime.py) and a Trn2 pool whose node fits its pods (read from the
    manifests the serving stack applies). On an existing cluster only the image's runtime: the
    platform is not this app's."""
    if checked.settings.cluster.existing is not None:
        return runtime_problems(checked.workload.config)
    problems = addon_check_problems(checked.settings, checked.needs)
    problems += offering_problems(checked.settings, deploy_region)
    problems += runtime_problems(checked.workload.config)
    if check_placement:
        calibrating = checked.workload.settings.calibration is not None
        problems += placement_problems(
            checked.settings.trn2_pools,
            checked.workload.manifests.all(),
            CALIBRATION_ENGINE_OVERRIDES if calibrating else ENGINE_OVERRIDES,
        )
    return problems


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
    (infra/platform/addons/registry.py), or a cluster version outside the supported range of an
    installed add-on's pin (infra/platform/addons/pins.py); one problem per line."""
    addons = installed_addons(settings, needs)
    installed = ",".join(sorted(addons))
    problems = [Problem("installed add-ons", installed, line) for line in addon_problems(addons)]
    problems += [
        Problem("kubernetes_version", settings.kubernetes_version, line)
        for line in compatibility_problems(settings.kubernetes_version, addons, pins)
    ]
    return problems
