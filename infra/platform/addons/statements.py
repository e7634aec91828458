"""How the add-ons' IAM policies are written: one `allow` per statement (its sid, actions,
resources and conditions) and the ARN prefixes they scope resources with, so each add-on's
iam.py is the list of what it grants and nothing else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

#: Every resource: for the actions IAM cannot scope (Describe*, List*, Get* on collections).
ANY_RESOURCE = ("*",)


def allow(
    sid: str,
    actions: Sequence[str],
    resources: Sequence[str] = ANY_RESOURCE,
    conditions: Mapping[str, Any] | None = None,
) -> iam.PolicyStatement:
    """An Allow statement (`conditions` None: unconditional)."""
    return iam.PolicyStatement(
        sid=sid,
        actions=list(actions),
        resources=list(resources),
        conditions=dict(conditions) if conditions else None,
    )


def regional_arn(stack: Stack, service: str, account: str | None = None) -> str:
    """`arn:<partition>:<service>:<region>:<account>` of the stack, to which a caller appends
    `:<resource>`; `account` "" for what EC2 names without one, "*" for any account's."""
    owner = stack.account if account is None else account
    return f"arn:{stack.partition}:{service}:{stack.region}:{owner}"
