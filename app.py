#!/usr/bin/env python3
"""CDK entry point: reads context once into typed settings, checks them and derives the serving
workload once (infra.app.composition.check_profile), then builds the platform stack and the serving
stack on its cluster from that one preflight.

`cdk synth -c profile=NAME -c dotted.key=value ...`; a bad profile or value exits with status 2
and one message listing every problem (no traceback).
"""

from __future__ import annotations

import sys

from aws_cdk import App
from trnspec.config.serving import ConfigError

from infra.app.composition import build_stacks, check_profile
from infra.serving.manifests.spec import ClusterWorkloadError
from infra.settings import SettingsError, settings_overrides
from infra.settings.serving import ServingSettingsError


def main() -> int:
    app = App()
    context = app.node.get_all_context()
    profile = str(context.get("profile", "default"))
    try:
        build_stacks(app, check_profile(profile, settings_overrides(context)))
    except ConfigError as err:
        print(
            f"serving engine config (serving.profile / serving.overrides):\n{err}", file=sys.stderr
        )
        return 2
    except (SettingsError, ServingSettingsError, ClusterWorkloadError) as err:
        print(err, file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
