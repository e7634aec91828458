"""The whole CDK app in one place: platform stack, serving stack on its cluster, cdk-nag.

`app.py` and the tests both call `compose`, so what the tests synthesize is what `cdk deploy`
deploys; the choice of stacks and their order is made here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import App

from infra.nag import acknowledge, attach_nag
from infra.platform_stack import PlatformStack
from infra.serving_stack import BUCKET_PLACEHOLDER, ServingStack, add_serving
from infra.settings import DeploymentSettings
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
    exists when the `serving:` section is bad; the acknowledgements run last so they see every
    construct of both stacks.
    """
    # One pass over the serving section, before any construct: every problem in one synth, and
    # a bad profile leaves no staged assets in cdk.out.
    serving_settings = check_serving(
        settings.serving, bucket_name=BUCKET_PLACEHOLDER, image_uri="preflight"
    )
    attach_nag(app)
    platform = PlatformStack(app, settings.stack_name, settings=settings)
    serving = add_serving(app, platform, serving_settings)
    acknowledged = acknowledge(platform)
    return Composition(platform, serving, acknowledged)
