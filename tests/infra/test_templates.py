"""Every synthesized platform template: cfn-lint clean, cdk-nag clean."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import CfnResource
from cfnlint.api import ManualArgs, lint_file
from nag_coverage import unused_acknowledgements, unused_checkov_fragments
from platform_synth import PROFILES, Synth, synth_profile

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


#: Settings beyond the shipped profiles that some acknowledgement exists for: the internal NLB
#: installs the AWS Load Balancer Controller (its policy's wildcards).
ACK_VARIANTS = {"internal-nlb": ("default", {"serving.internal_nlb": "true"})}


@pytest.fixture(scope="module")
def every_build(platform_synth: Any, tmp_path_factory: pytest.TempPathFactory) -> list[Synth]:
    """Each shipped profile, plus each variant some acknowledgement exists for."""
    variants = [
        synth_profile(profile, tmp_path_factory.mktemp(f"cdk-{name}"), overrides)
        for name, (profile, overrides) in ACK_VARIANTS.items()
    ]
    return [platform_synth(p) for p in PROFILES] + variants


def _suppressed(synth: Synth) -> list[dict[str, Any]]:
    report = json.loads((synth.outdir / "validation-report.json").read_text())
    (nag,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    return nag["suppressedViolations"]


def test_every_acknowledgement_is_used_by_a_finding_cdk_nag_reports(
    every_build: list[Synth],
) -> None:
    """A stale entry of MANAGED_POLICIES, WILDCARD_OWNERS or RULES_ON_PATHS (no finding of
    its kind where it applies, in any profile or variant) fails, naming the entry."""
    suppressed = [v for synth in every_build for v in _suppressed(synth)]
    assert unused_acknowledgements(suppressed) == []


def test_every_checkov_skip_fragment_names_a_resource_of_its_type(
    every_build: list[Synth],
) -> None:
    resources = [
        (node.cfn_resource_type, node.node.path)
        for synth in every_build
        for stack in (synth.stack, synth.serving)
        for node in stack.node.find_all()
        if isinstance(node, CfnResource)
    ]
    assert unused_checkov_fragments(resources) == []


def test_a_stale_entry_of_each_table_is_reported_in_one_line() -> None:
    """The check itself can fail: a finding list without a table's kind leaves that entry."""
    suppressed = [
        {
            "ruleName": "AwsSolutions-IAM4[Policy::arn:aws:iam::aws:policy/Used]",
            "acknowledgedAt": "S/R",
        },
        {"ruleName": "AwsSolutions-IAM5[Resource::*]", "acknowledgedAt": "S/Owner/Policy/Resource"},
        {"ruleName": "AwsSolutions-L1", "acknowledgedAt": "S/Handler/Resource"},
    ]
    lines = unused_acknowledgements(
        suppressed,
        managed_policies={"Used": "", "UsedToo": ""},
        wildcard_owners={"/Owner/": "", "/Gone/": ""},
        rules_on_paths=(("AwsSolutions-L1", "/Handler/", ""), ("AwsSolutions-L1", "/Other/", "")),
    )
    assert lines == [
        "MANAGED_POLICIES['UsedToo']: no AwsSolutions-IAM4 finding names it",
        "WILDCARD_OWNERS['/Gone/']: no AwsSolutions-IAM5 finding under it",
        "RULES_ON_PATHS ('AwsSolutions-L1', '/Other/'): no such finding under it",
    ]
    assert unused_checkov_fragments(
        [("AWS::S3::Bucket", "S/Logs/Resource")],
        skips={"CKV_X": ("", "AWS::S3::Bucket", ("/Logs/", "/Nothing/"))},
    ) == ["CHECKOV_SKIPS['CKV_X'] fragment '/Nothing/': no AWS::S3::Bucket under it"]


@pytest.mark.slow
def test_synth_passes_cdk_builtin_cloudformation_validation(
    platform_synth: Any, tmp_path: Path
) -> None:
    checked = synth_profile("default", tmp_path, validation=True)
    assert _masked(checked.raw) == _masked(platform_synth("default").raw)


def _masked(raw: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_HASH.sub("<asset-hash>", json.dumps(raw, sort_keys=True)))


@pytest.mark.parametrize("profile", PROFILES)
def test_no_profile_builds_a_docker_image_only_the_trnspec_bundle_zip(
    platform_synth: Any, profile: str
) -> None:
    """Every pod runs the public Neuron image as published: no stack of the app has a Docker
    image asset; the trnspec bundle is one zip file asset."""
    synth: Synth = platform_synth(profile)
    manifests = [json.loads(p.read_text()) for p in synth.outdir.glob("*.assets.json")]
    assert manifests
    assert [m["dockerImages"] for m in manifests if m.get("dockerImages")] == []
    zips = [
        f["source"]["path"]
        for m in manifests
        for f in m.get("files", {}).values()
        if f["source"]["path"].endswith(".zip")
    ]
    bundles = [
        z for z in zips if "trnspec_tools/cli.py" in zipfile.ZipFile(synth.outdir / z).namelist()
    ]
    assert len(bundles) == 1, zips
