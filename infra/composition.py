"""The whole CDK app in one place: platform stack, serving stack on its cluster, cdk-nag.

`app.py` and the tests both call `compose`, so what the tests synthesize is what `cdk deploy`
deploys; the choice of stacks and their order is made here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import App
from trnspec.problems import Problem

from infra.addons.pins import PINS, ChartPin, ImagePin, compatibility_problems
from infra.addons.selection import (
    WorkloadNeeds,
    addon_problems,
    installed_addons,
    workload_needs,
)
from infra.nag import acknowledge, attach_nag
from infra.platform_stack import PlatformStack
from infra.serving_stack import BUCKET_PLACEHOLDER, ServingStack, add_serving
from infra.settings import DeploymentSettings, SettingsError
from infra.workload.spec import check_serving


@dataclass(frozen=True)
class Composition:
    """The stacks of one deployment profile, and the cdk-nag findings acknowledged on them."""

    platform: PlatformStack
    serving: ServingStack
    acknowledged: list[str]


def compose(app: App, settings: DeploymentSettings) -> Composition:
    """Build every stack of a profile onto `app`.

    Raises the settings' and the engine's own errors (every problem listed) before any construct
    exists when the `serving:` section is bad or an add-on pin does not support the cluster's
    Kubernetes version; the acknowledgements run last so they see every construct of both stacks.
    """
    # One pass over the serving section, before any construct: every problem in one synth, and
    # a bad profile leaves no staged assets in cdk.out.
    serving_settings = check_serving(
        settings.serving, bucket_name=BUCKET_PLACEHOLDER, image_uri="preflight"
    )
    needs = workload_needs(serving_settings)
    check_addons(settings, needs)
    attach_nag(app)
    platform = PlatformStack(app, settings.stack_name, settings=settings, needs=needs)
    serving = add_serving(app, platform, serving_settings)
    acknowledged = acknowledge(platform)
    return Composition(platform, serving, acknowledged)


def check_addons(
    settings: DeploymentSettings,
    needs: WorkloadNeeds,
    pins: tuple[ChartPin | ImagePin, ...] = PINS,
) -> None:
    """Refuse an installed set whose add-ons' declared requirements or exclusions do not hold
    (infra/addons/selection.py), or a cluster version outside the supported range of an
    installed add-on's pin (infra/addons/pins.py); one line per problem."""
    addons = installed_addons(settings, needs)
    installed = ",".join(sorted(addons))
    problems = [Problem("installed add-ons", installed, line) for line in addon_problems(addons)]
    problems += [
        Problem("kubernetes_version", settings.kubernetes_version, line)
        for line in compatibility_problems(settings.kubernetes_version, addons, pins)
    ]
    if problems:
        raise SettingsError(problems)
