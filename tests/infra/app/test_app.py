"""app.py: the CDK entry point turns bad settings into exit status 2 and one message."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from platform_synth import ADMIN, ADMIN_ARN, REPO, cdk_json_context, cfn_text

from infra.serving.manifests import manifests, spec
from infra.settings import load_settings


def _app_module() -> Any:
    """app.py as a module (it is a script, not a package member)."""
    loader = importlib.util.spec_from_file_location("trnspec_cdk_app", REPO / "app.py")
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def _run_app(
    context: dict[str, object], outdir: Path, deploy_region: str | None = None
) -> subprocess.CompletedProcess[str]:
    """app.py as the CDK CLI runs it; `deploy_region` is the CLI's CDK_DEFAULT_REGION (the AWS
    profile's region) with an account, as with credentials; both unset unless given, whatever
    the shell running the tests has."""
    cli = ("CDK_DEFAULT_REGION", "CDK_DEFAULT_ACCOUNT")
    inherited = {k: v for k, v in os.environ.items() if k not in cli}
    # the CLI sets both when credentials resolve (app._deploy_region)
    given = {"CDK_DEFAULT_REGION": deploy_region, "CDK_DEFAULT_ACCOUNT": "123456789012"}
    env = {
        **inherited,
        **(given if deploy_region else {}),
        "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), **context}),
        "CDK_OUTDIR": str(outdir),
        "CDK_VALIDATION": "false",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
    }
    return subprocess.run(
        [sys.executable, str(REPO / "app.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_app_exits_2_listing_every_bad_context_value_without_traceback(tmp_path: Path) -> None:
    result = _run_app(
        {"trn2_pools.0.lnc": "3", "kubernetes_version": "1.30", "autoscaler": "keda"}, tmp_path
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    for field in ("trn2_pools.0.lnc=3", "kubernetes_version=1.30:", "autoscaler=keda"):
        assert field in result.stderr
    assert not list(tmp_path.glob("*.template.json"))  # nothing half-written


def test_a_deploy_naming_no_cluster_admin_exits_2_naming_the_setting(tmp_path: Path) -> None:
    result = _run_app({}, tmp_path)
    assert result.returncode == 2
    assert "admin_principal_arns=[]: name the IAM role or user you deploy" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_profile_without_region_is_checked_in_the_region_cdk_deploy_targets(
    tmp_path: Path,
) -> None:
    """The default profile sets no region: `cdk deploy` goes to the AWS profile's region, which
    the CLI passes as CDK_DEFAULT_REGION; where EC2 does not sell trn2.48xlarge the node group
    would never get a node, so synth says so, naming the region and where it is sold."""
    result = _run_app(ADMIN, tmp_path, deploy_region="us-east-1")
    assert result.returncode == 2
    assert result.stderr.startswith("invalid deployment settings (profile default):")
    assert "region: not set, so cdk deploy targets us-east-1" in result.stderr
    assert "one of ap-south-2, us-east-2" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("*.template.json"))


def test_without_credentials_the_clis_fallback_region_is_not_checked() -> None:
    """With no credentials the CLI still passes CDK_DEFAULT_REGION (us-east-1, its fallback) but
    no account: that synth deploys nothing, and an offline `make synth` must pass."""
    deploy_region = _app_module()._deploy_region
    assert deploy_region({"CDK_DEFAULT_REGION": "us-east-1"}) is None
    both = {"CDK_DEFAULT_REGION": "us-east-1", "CDK_DEFAULT_ACCOUNT": "123456789012"}
    assert deploy_region(both) == "us-east-1"


def test_a_bad_serving_profile_fails_before_any_asset_is_staged(tmp_path: Path) -> None:
    result = _run_app({"serving.plan": "none", "serving.profile": "no-such-profile"}, tmp_path)
    assert result.returncode == 2
    assert "serving.profile=no-such-profile: unknown profile" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # no asset.* directories, no templates


def test_app_synthesizes_the_selected_profile(tmp_path: Path) -> None:
    result = _run_app({"profile": "karpenter", "trn2_pools.0.max_size": "3", **ADMIN}, tmp_path)
    assert result.returncode == 0, result.stderr
    template = json.loads((tmp_path / "TrnspecPlatform.template.json").read_text())
    objects = [
        doc
        for r in template["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
        for doc in json.loads(cfn_text(r["Properties"]["Manifest"]))
    ]
    (pool,) = [o for o in objects if o["kind"] == "NodePool" and o["metadata"]["name"] == "trn2"]
    assert pool["spec"]["limits"]["cpu"] == "576"  # 3 x 192 vCPUs: the -c override took effect


def _count_calls(monkeypatch: pytest.MonkeyPatch, function: Callable[..., Any]) -> list[object]:
    """Count the calls of `function` from every loaded module that holds it, however imported."""
    calls: list[object] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return function(*args, **kwargs)

    holders = [m for m in list(sys.modules.values()) if vars(m).get(function.__name__) is function]
    for module in holders:
        monkeypatch.setattr(module, function.__name__, counted)
    return calls


def test_one_synth_resolves_the_config_derives_the_workload_and_builds_manifests_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once per workload: the main one and, in a calibration deployment (the shipped default),
    the speculative arm, whose config and spec are derived inside the one build_manifests."""
    app = _app_module()  # imports every infra module the synth uses
    counts = {
        f.__name__: _count_calls(monkeypatch, f)
        for f in (spec.resolve_serving_config, spec.derive_workload, manifests.build_manifests)
    }

    def cli_app() -> App:  # what the CDK CLI hands app.py: cdk.json's context, an outdir
        return App(
            context={**cdk_json_context(), **ADMIN},
            outdir=str(tmp_path),
            builtin_cloud_formation_validation=False,
        )

    monkeypatch.setattr(app, "App", cli_app)
    assert app.main() == 0
    assert (tmp_path / "TrnspecPlatform-serving.template.json").is_file()
    serving = load_settings("default", ADMIN).serving or {}
    calibration = serving.get("calibration")
    arm = [calibration["speculative"]["profile"]] if calibration else []
    workloads = sorted([serving["profile"], *arm])
    # resolve_serving_config(settings, bucket), derive_workload(cfg, settings, ...)
    assert sorted(args[0].profile for args in counts["resolve_serving_config"]) == workloads
    assert sorted(args[1].profile for args in counts["derive_workload"]) == workloads
    assert len(counts["build_manifests"]) == 1


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("unshare") is None or os.geteuid() != 0 or not (REPO / "node_modules").is_dir(),
    reason="needs root, unshare and the pinned CDK CLI",
)
def test_cdk_synth_runs_without_any_network(tmp_path: Path) -> None:
    """The CLI and the app run in a network namespace with no interfaces: any notice, telemetry,
    version check or context lookup would fail the synth."""
    env = {
        **os.environ,
        "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
        "CDK_DISABLE_VERSION_CHECK": "true",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "AWS_EC2_METADATA_DISABLED": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
    }
    cmd = ["npx", "--no-install", "cdk", "synth", "--quiet", "--no-validation"]
    result = subprocess.run(
        [
            "unshare",
            "-n",
            *cmd,
            "-o",
            str(tmp_path),
            "-c",
            "profile=default",
            "-c",
            f"admin_principal_arns=[{ADMIN_ARN}]",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "TrnspecPlatform.template.json").is_file()
