"""Synthesizing the platform app in tests: same context as cdk.json, cdk-nag attached as in app.py.

A plain module (not conftest) so test files import it by a unique name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aws_cdk import App
from aws_cdk.assertions import Template

from infra.app.composition import build_stacks, preflight
from infra.platform.stack import PlatformStack
from infra.serving.stack import ServingStack
from infra.settings import load_settings
from infra.settings.deploy_context import deploy_context

REPO = Path(__file__).resolve().parents[2]
#: The profiles shipped under config/ that tests synthesize.
PROFILES = ("default", "capacity-block", "karpenter")
#: Every deploy names its cluster admin (infra.app.composition.access_problems); tests pass one.
ADMIN_ARN = "arn:aws:iam::123456789012:role/TrnspecAdmin"
ADMIN = {"admin_principal_arns": f"[{ADMIN_ARN}]"}


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags): App() in pytest does not read cdk.json."""
    return json.loads((REPO / "cdk.json").read_text())["context"]


def cfn_text(value: Any) -> str:
    """Flatten a CloudFormation string expression; Ref/GetAtt/ImportValue become ${...}."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(cfn_text(p) for p in parts)
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):  # already ${...} placeholders
        return value["Fn::Sub"]
    if "Fn::ImportValue" in value:  # a cross-stack reference (e.g. the platform VPC's CIDR)
        return "${Import:" + cfn_text(value["Fn::ImportValue"]) + "}"
    raise ValueError(f"unsupported intrinsic {value}")


@dataclass(frozen=True)
class Synth:
    """One synthesized profile: the platform stack, and the serving stack on its cluster."""

    stack: PlatformStack
    template: Template
    raw: dict[str, Any]
    serving: ServingStack
    serving_raw: dict[str, Any]
    outdir: Path
    acknowledged: list[str]

    def resources(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.raw["Resources"].items() if v["Type"] == cfn_type}

    def manifests(self) -> list[dict[str, Any]]:
        """Every Kubernetes object the stack applies through KubernetesManifest."""
        return [
            doc
            for r in self.resources("Custom::AWSCDK-EKS-KubernetesResource").values()
            for doc in json.loads(cfn_text(r["Properties"]["Manifest"]))
        ]


def synth_profile(
    profile: str,
    outdir: Path,
    overrides: dict[str, Any] | None = None,
    validation: bool = False,
    check_placement: bool = True,
) -> Synth:
    """Build and synthesize the app for a profile exactly as app.py does (infra.app.composition);
    `check_placement=False` skips only the placement check (infra/platform/cluster/placement.py)."""
    app = App(
        context=cdk_json_context(),
        outdir=str(outdir),
        builtin_cloud_formation_validation=validation,
    )
    given = {**ADMIN, **(overrides or {})}
    settings = load_settings(profile, given)
    # As app.py's check_profile: the preflight carries the profile and -c items it was read from.
    checked = preflight(settings, check_placement=check_placement)
    built = build_stacks(app, replace(checked, deploy=deploy_context(profile, given)))
    app.synth()
    stack, serving = built.platform, built.serving
    raw = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    serving_raw = json.loads((outdir / f"{serving.stack_name}.template.json").read_text())
    return Synth(
        stack, Template.from_json(raw), raw, serving, serving_raw, outdir, built.acknowledged
    )
