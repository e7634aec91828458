"""Every synthesized platform template: cfn-lint clean, cdk-nag clean."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint_file
from platform_synth import PROFILES, Synth, synth_profile

from infra.nag import RULES_ON_PATHS, WILDCARD_OWNERS

#: cfn-lint findings we keep, by rule id, and why.
KEPT_WARNINGS = {
    "W3005": "Redundant DependsOn emitted by aws-cdk-lib itself (provider framework, EKS "
    "cluster on its subnets); harmless and not ours to change.",
    "W3010": "Hard-coded AZs only in profiles that pin capacity reservations: a reservation "
    "exists in exactly one AZ, so the VPC must name it.",
}
_HASH = re.compile(r"[0-9a-f]{64}")


@pytest.mark.parametrize("profile", PROFILES)
def test_cfn_lint_finds_no_errors_and_only_explained_warnings(
    platform_synth: Any, profile: str
) -> None:
    synth: Synth = platform_synth(profile)
    for stack in (synth.stack, synth.serving):
        path = synth.outdir / f"{stack.stack_name}.template.json"
        matches = lint_file(Path(path), config=ManualArgs(regions=["us-east-2"]))
        unexplained = [
            f"{m.rule.id} {m.message} ({m.path})" for m in matches if m.rule.id not in KEPT_WARNINGS
        ]
        assert unexplained == [], stack.stack_name


@pytest.mark.parametrize("profile", PROFILES)
def test_cdk_nag_aws_solutions_reports_no_unacknowledged_finding(
    platform_synth: Any, profile: str
) -> None:
    synth: Synth = platform_synth(profile)
    report = json.loads((synth.outdir / "validation-report.json").read_text())
    (nag,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    assert nag["conclusion"] == "success"
    assert nag["violations"] == []
    assert nag["suppressedViolations"], "expected acknowledged findings to be reported"


def test_every_acknowledgement_kind_is_still_needed(platform_synth: Any) -> None:
    acknowledged = [a for p in PROFILES for a in platform_synth(p).acknowledged]
    for rule, _fragment, _reason in RULES_ON_PATHS:
        assert rule in acknowledged, f"stale acknowledgement {rule}"
    text = "\n".join(acknowledged)
    assert "AwsSolutions-IAM5" in text and "AwsSolutions-IAM4" in text
    assert len(WILDCARD_OWNERS) == 6


@pytest.mark.slow
def test_synth_passes_cdk_builtin_cloudformation_validation(
    platform_synth: Any, tmp_path: Path
) -> None:
    checked = synth_profile("default", tmp_path, validation=True)
    assert _masked(checked.raw) == _masked(platform_synth("default").raw)


def _masked(raw: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_HASH.sub("<asset-hash>", json.dumps(raw, sort_keys=True)))
