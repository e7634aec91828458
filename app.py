#!/usr/bin/env python3
"""CDK entry point: reads context once into typed settings, checks them and derives the serving
workload once (infra.app.composition.check_profile), then builds the platform stack and the serving
stack on its cluster from that one preflight.

`cdk synth -c profile=NAME -c dotted.key=value ...`; a bad profile or value exits with status 2
and one message listing every problem (no traceback).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from aws_cdk import App
from trnspec.config.serving import ConfigError

from infra.app.composition import build_stacks, check_profile
from infra.serving.manifests.spec import ClusterWorkloadError
from infra.settings import SettingsError, settings_overrides
from infra.settings.serving import ServingSettingsError


def _deploy_region(env: Mapping[str, str]) -> str | None:
    """The region `cdk deploy` targets when the profile sets none, where the Trn2 offerings are
    checked. The CDK CLI passes CDK_DEFAULT_REGION: the AWS profile's region or --region, and
    us-east-1 when none is configured, which is where a deploy would then go too. It is taken
    only with CDK_DEFAULT_ACCOUNT, which the CLI sets only when credentials resolve: a synth
    with no credentials (offline, CI) deploys nothing, so its fallback region is no one's."""
    if not env.get("CDK_DEFAULT_ACCOUNT"):
        return None
    return env.get("CDK_DEFAULT_REGION") or None


def main() -> int:
    app = App()
    context = app.node.get_all_context()
    profile = str(context.get("profile", "default"))
    try:
        deploy_region = _deploy_region(os.environ)
        checked = check_profile(profile, settings_overrides(context), deploy_region=deploy_region)
        build_stacks(app, checked)
    except (SettingsError, ServingSettingsError, ClusterWorkloadError) as err:
        print(err, file=sys.stderr)
        return 2
    except ConfigError as err:  # every InputError (ConfigError is its name in trnspec.config)
        print(
            f"serving engine config (serving.profile / serving.overrides):\n{err}", file=sys.stderr
        )
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
