"""Whether every acknowledgement and checkov skip of infra/compliance/nag.py is still used:
test helpers over cdk-nag's validation report and the built resources (test_templates.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from infra.compliance.nag import CHECKOV_SKIPS, MANAGED_POLICIES, RULES_ON_PATHS, WILDCARD_OWNERS


def unused_acknowledgements(
    suppressed: Iterable[Mapping[str, Any]],
    managed_policies: Mapping[str, str] = MANAGED_POLICIES,
    wildcard_owners: Mapping[str, str] = WILDCARD_OWNERS,
    rules_on_paths: tuple[tuple[str, str, str], ...] = RULES_ON_PATHS,
) -> list[str]:
    """One line per entry of the three tables that no finding cdk-nag actually reported used.

    `suppressed` are the `suppressedViolations` of cdk-nag's validation report (every finding it
    raised and an acknowledgement covered, with `ruleName` and `acknowledgedAt`, the construct
    path), over every stack and profile that needs an entry. An entry is used when cdk-nag
    raised a finding of its kind where it applies: an IAM4 finding naming the managed policy; an
    IAM5 finding on a policy under the owner's path; the rule's finding under the path.
    """
    seen = [(str(v["ruleName"]), f"/{v['acknowledgedAt']}/") for v in suppressed]
    lines = []
    for name in managed_policies:
        policy = re.compile(rf"/{re.escape(name)}[\]\"]")
        if not any(
            rule.startswith("AwsSolutions-IAM4[") and policy.search(rule) for rule, _ in seen
        ):
            lines.append(f"MANAGED_POLICIES[{name!r}]: no AwsSolutions-IAM4 finding names it")
    for fragment in wildcard_owners:
        if not any(rule.startswith("AwsSolutions-IAM5[") and fragment in at for rule, at in seen):
            lines.append(f"WILDCARD_OWNERS[{fragment!r}]: no AwsSolutions-IAM5 finding under it")
    for rule_id, fragment, _reason in rules_on_paths:
        if not any(rule == rule_id and fragment in at for rule, at in seen):
            lines.append(f"RULES_ON_PATHS ({rule_id!r}, {fragment!r}): no such finding under it")
    return lines


def unused_checkov_fragments(
    resources: Iterable[tuple[str, str]],
    skips: Mapping[str, tuple[str, str, tuple[str, ...]]] = CHECKOV_SKIPS,
) -> list[str]:
    """One line per (check, path fragment) of CHECKOV_SKIPS that names no resource of its type
    among `resources` ((CloudFormation type, construct path) pairs). Whether each skip hides a
    finding checkov really reports is test_checkov.py's job (it runs checkov)."""
    built = [(cfn_type, f"/{path}/") for cfn_type, path in resources]
    return [
        f"CHECKOV_SKIPS[{check!r}] fragment {fragment!r}: no {cfn_type} under it"
        for check, (_reason, cfn_type, fragments) in skips.items()
        for fragment in fragments
        if not any(t == cfn_type and fragment in path for t, path in built)
    ]
