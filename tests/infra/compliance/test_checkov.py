"""checkov (CloudFormation framework) over every synthesized template of every profile: 0 failed.

Accepted findings are skipped in the resources' metadata from one table,
infra.compliance.nag.CHECKOV_SKIPS,
each with its reason. One checkov run covers every template twice: as synthesized, and with the
skips stripped, so the test also proves each skip still hides a real finding and nothing else.

checkov lives in a virtualenv of its own (tests/infra/checkov_tool.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from checkov_tool import checkov_binary, checkov_version
from platform_synth import Synth

from infra.compliance.nag import CHECKOV_SKIPS
from infra.settings import list_profiles

PROFILES = tuple(list_profiles())
_BARE = "bare-"


def _strip_skips(template: dict[str, Any]) -> dict[str, Any]:
    for resource in template["Resources"].values():
        resource.get("Metadata", {}).pop("checkov", None)
    return template


@pytest.fixture(scope="module")
def checkov_report(
    platform_synth: Callable[[str], Synth], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """One checkov run over every template, as synthesized and with its skips stripped."""
    binary = checkov_binary()
    directory = tmp_path_factory.mktemp("checkov")
    for profile in PROFILES:
        synth = platform_synth(profile)
        for stack in (synth.stack, synth.serving):
            template = json.loads((synth.outdir / f"{stack.stack_name}.template.json").read_text())
            name = f"{profile}--{stack.stack_name}.template.json"
            (directory / name).write_text(json.dumps(template))
            (directory / f"{_BARE}{name}").write_text(json.dumps(_strip_skips(template)))
    result = subprocess.run(
        [
            str(binary),
            "--directory",
            str(directory),
            "--framework",
            "cloudformation",
            "--output",
            "json",
            "--skip-download",  # no Prisma Cloud calls: offline, and no guideline lookups
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["check_type"] == "cloudformation"
    return report


def _findings(report: dict[str, Any], kind: str, bare: bool) -> set[tuple[str, str, str]]:
    """(file, check id, resource) of one result kind, for the bare or the synthesized copies."""
    out = set()
    for r in report["results"][kind]:
        name = r["file_path"].lstrip("/")
        if name.startswith(_BARE) == bare:
            out.add((name.removeprefix(_BARE), r["check_id"], r["resource"]))
    return out


def test_checkov_reports_no_failed_check_in_any_template(checkov_report: dict[str, Any]) -> None:
    summary = checkov_report["summary"]
    assert summary["checkov_version"] == checkov_version()
    assert summary["parsing_errors"] == 0
    assert summary["resource_count"] > 0
    failed = sorted(_findings(checkov_report, "failed_checks", bare=False))
    assert failed == []


def test_each_checkov_skip_hides_a_real_finding_and_nothing_else(
    checkov_report: dict[str, Any],
) -> None:
    skipped = _findings(checkov_report, "skipped_checks", bare=False)
    would_fail = _findings(checkov_report, "failed_checks", bare=True)
    assert skipped == would_fail
    # Every entry of the table is used, and every skip carries its table reason.
    assert {check for _, check, _ in skipped} == set(CHECKOV_SKIPS)
    reasons = {reason for reason, _, _ in CHECKOV_SKIPS.values()}
    for r in checkov_report["results"]["skipped_checks"]:
        assert r["check_result"]["suppress_comment"] in reasons


def test_the_vpc_flow_log_group_is_encrypted_with_a_rotating_key(platform_synth: Any) -> None:
    synth: Synth = platform_synth("default")
    (group,) = synth.resources("AWS::Logs::LogGroup").values()
    key_id = group["Properties"]["KmsKeyId"]["Fn::GetAtt"][0]
    key = synth.raw["Resources"][key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    (logs,) = [
        s for s in key["KeyPolicy"]["Statement"] if s.get("Sid") == "CloudWatchLogsOfThisAccount"
    ]
    assert "kms:EncryptionContext:aws:logs:arn" in logs["Condition"]["ArnLike"]


def test_skips_sit_in_the_metadata_of_cdk_handlers_and_the_access_log_bucket_only(
    platform_synth: Any,
) -> None:
    """Without running checkov: which resources carry skips, and which checks they skip."""
    synth: Synth = platform_synth("default")
    skipped = {
        (r["Type"], tuple(sorted(s["id"] for s in r["Metadata"]["checkov"]["skip"])))
        for raw in (synth.raw, synth.serving_raw)
        for r in raw["Resources"].values()
        if "checkov" in r.get("Metadata", {})
    }
    handler = ("CKV_AWS_115", "CKV_AWS_116")
    assert skipped == {
        ("AWS::Lambda::Function", (*handler, "CKV_AWS_117")),  # two API-only handlers
        ("AWS::Lambda::Function", (*handler, "CKV_AWS_173")),  # two kubectl handlers
        ("AWS::S3::Bucket", ("CKV_AWS_18",)),
    }
    lambdas = synth.resources("AWS::Lambda::Function").values()
    assert all("checkov" in r.get("Metadata", {}) for r in lambdas)
