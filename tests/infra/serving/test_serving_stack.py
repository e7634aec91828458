"""CDK assertions for the serving stack on a bare aws_eks_v2 cluster (one synth per module).

The serving stack needs only a cluster with a kubectl provider; the fixture builds one itself so
these tests do not depend on the platform stack's choices.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Match, Template
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer
from cdk_nag import AwsSolutionsChecks
from moto import mock_aws
from platform_synth import cfn_text
from trnspec.serve.runner import CachePublisher, ServeOptions
from trnspec.serve.steps import CacheStep
from trnspec.staging.transfer import TransferSettings, parse_s3_uri, pull_compiled

from infra.contracts import (
    COMPILE_CACHE_PREFIX,
    MODELS_PREFIX,
    NEURON_DEVICE_RESOURCE,
    NEURON_SCHEDULER_NAME,
)
from infra.serving.image import base_image_reference
from infra.serving.manifests.placeholders import BUCKET_PLACEHOLDER, IMAGE_PLACEHOLDER
from infra.serving.manifests.spec import check_serving
from infra.serving.preflight import workload_preflight
from infra.serving.stack import ServingStack, add_serving

#: Feature flags from cdk.json: App() in pytest does not read it.
CONTEXT: dict[str, Any] = {
    k: v
    for k, v in json.loads((Path(__file__).parents[3] / "cdk.json").read_text())["context"].items()
    if k.startswith("@aws-cdk/")
}


class MiniPlatform(Stack):
    """Just enough platform: a VPC and an EKS cluster with a kubectl provider."""

    def __init__(self, scope: App, id: str) -> None:
        super().__init__(scope, id)
        vpc = ec2.Vpc(self, "Vpc", max_azs=2, nat_gateways=1)
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            version=eks.KubernetesVersion.V1_36,
            vpc=vpc,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=KubectlV36Layer(self, "Kubectl")
            ),
        )


SERVING = {"internal_nlb": True, "max_replicas": 3}
#: The statement that lets a pod role read the trnspec bundle (infra/serving/bundle/asset.py).
BUNDLE_SID = "ReadTrnspecBundle"


def _serving_stack(app: App, platform: MiniPlatform) -> ServingStack:
    checked = check_serving(SERVING, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    return add_serving(app, platform, workload_preflight(checked))


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("cdk.out")
    app = App(context=CONTEXT, outdir=str(out), builtin_cloud_formation_validation=False)
    platform = MiniPlatform(app, "trnspec-test")
    serving = _serving_stack(app, platform)
    assembly = app.synth()
    template_path = out / f"{serving.stack_name}.template.json"
    return {
        "stack": serving,
        "template": Template.from_json(json.loads(template_path.read_text())),
        "raw": json.loads(template_path.read_text()),
        "path": template_path,
        "assembly": assembly,
    }


def test_model_bucket_is_kms_encrypted_versioned_private_and_tls_only(synth) -> None:
    t: Template = synth["template"]
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like(
                        {
                            "ServerSideEncryptionByDefault": Match.object_like(
                                {"SSEAlgorithm": "aws:kms"}
                            )
                        }
                    )
                ]
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Prefix": COMPILE_CACHE_PREFIX,
                                "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
                                "Status": "Enabled",
                            }
                        )
                    ]
                )
            },
        },
    )
    t.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )
    t.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def _policies(raw: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Statements of each pod role's policy, keyed 'serve' / 'compile' / 'weights'."""
    out: dict[str, list[dict[str, Any]]] = {}
    for lid, res in raw["Resources"].items():
        if res["Type"] == "AWS::IAM::Policy":
            key = next(k for k in ("serve", "compile", "weights") if lid.lower().startswith(k))
            out[key] = res["Properties"]["PolicyDocument"]["Statement"]
    return out


def _suffixes(statement: dict[str, Any]) -> list[str]:
    resources = statement["Resource"]
    resources = resources if isinstance(resources, list) else [resources]
    return [r["Fn::Join"][1][-1] if isinstance(r, dict) else r for r in resources]


def _actions(statement: dict[str, Any]) -> list[str]:
    a = statement["Action"]
    return a if isinstance(a, list) else [a]


def test_serve_role_reads_models_and_cache_and_writes_only_the_cache(synth) -> None:
    statements = _policies(synth["raw"])["serve"]
    writing = ("s3:Put", "s3:Delete", "s3:AbortMultipartUpload")
    writes = [s for s in statements if any(a.startswith(writing) for a in _actions(s))]
    assert writes  # a pod that compiled publishes its compile (trnspec.serve.runner)
    for s in writes:
        assert _suffixes(s) == [f"/{COMPILE_CACHE_PREFIX}*"]
    for s in statements:
        assert "kms:Encrypt" not in _actions(s)
        if s.get("Sid") == BUNDLE_SID:
            continue  # the trnspec bundle's object (test_every_pod_role_reads_the_bundle...)
        if any(a.startswith("s3:GetObject") for a in _actions(s)):
            assert sorted(_suffixes(s)) == sorted(
                [f"/{MODELS_PREFIX}*", f"/{COMPILE_CACHE_PREFIX}*"]
            )


def _model_bucket(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The model bucket: the versioned, KMS-encrypted one (not the access-log bucket)."""
    (found,) = [
        (lid, r["Properties"])
        for lid, r in raw["Resources"].items()
        if r["Type"] == "AWS::S3::Bucket"
        and "KMSMasterKeyID"
        in r["Properties"]
        .get("BucketEncryption", {})
        .get("ServerSideEncryptionConfiguration", [{}])[0]
        .get("ServerSideEncryptionByDefault", {})
    ]
    return found


def test_nothing_the_deployment_reads_expires_while_it_lives(synth) -> None:
    """S3 lifecycle Expiration counts from an object's creation, not its last read (S3 user guide,
    "Lifecycle configuration elements"): no rule may expire the current version of anything
    under the prefixes the pods read; replaced and deleted versions may go."""
    _, bucket = _model_bucket(synth["raw"])
    rules = bucket["LifecycleConfiguration"]["Rules"]
    read = (MODELS_PREFIX, COMPILE_CACHE_PREFIX)
    for rule in rules:
        prefix = rule.get("Prefix", rule.get("Filter", {}).get("Prefix", ""))
        covers = [p for p in read if p.startswith(prefix) or prefix.startswith(p)]
        if covers:
            assert "ExpirationInDays" not in rule and "ExpirationDate" not in rule, rule
    (cache_rule,) = [r for r in rules if r.get("Prefix") == COMPILE_CACHE_PREFIX]
    assert cache_rule["NoncurrentVersionExpiration"]["NoncurrentDays"] >= 1


#: The IAM action each S3 operation of the cache transfer needs (S3 API reference, per operation).
S3_OPERATION_ACTIONS = {
    "GetObject": "s3:GetObject",
    "HeadObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject",
    "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject",
    "DeleteObject": "s3:DeleteObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "ListParts": "s3:ListMultipartUploadParts",
    "ListObjectsV2": "s3:ListBucket",
}


def _wildcard(pattern: str, value: str) -> bool:
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("*")), value) is not None


def _allows(statements: list[dict[str, Any]], action: str, arn: str, prefix: str | None) -> bool:
    """IAM's Allow evaluation for S3 (no Deny statements in these policies): an Allow statement
    whose action and resource match, and whose StringLike `s3:prefix`, if any, matches."""
    for s in statements:
        if s["Effect"] != "Allow" or not any(_wildcard(a, action) for a in _actions(s)):
            continue
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        if not any(_wildcard(cfn_text(r), arn) for r in resources):
            continue
        like = s.get("Condition", {}).get("StringLike", {}).get("s3:prefix")
        if like is not None and (prefix is None or not any(_wildcard(p, prefix) for p in like)):
            continue
        return True
    return False


def test_a_serving_pod_that_compiled_refills_the_cache_within_its_role(
    synth, fake_aws_env: None, tmp_path: Path
) -> None:
    """A serving pod that missed the cache (a changed config, the calibration's speculative arm,
    which runs as the serve account and has no precompile Job) compiles, then publishes once it
    answers (trnspec.serve.runner.CachePublisher); the next pod starts from it. Every S3 call of
    that path, run against moto, is one the synthesized serve role allows."""
    raw = synth["raw"]
    bucket_id, _ = _model_bucket(raw)
    statements = [
        {
            **s,
            "Resource": [
                json.loads(
                    json.dumps(r).replace(
                        json.dumps({"Fn::GetAtt": [bucket_id, "Arn"]}), '"arn:aws:s3:::models"'
                    )
                )
                for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
            ],
        }
        for s in _policies(raw)["serve"]
        if s.get("Sid") != BUNDLE_SID
    ]
    calls: list[tuple[str, str, str | None]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        key = params.get("Key")
        arn = f"arn:aws:s3:::{params['Bucket']}" + (f"/{key}" if key else "")
        calls.append((model.name, arn, params.get("Prefix")))

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-2")
        s3.create_bucket(
            Bucket="models", CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
        )
        s3.meta.events.register("before-parameter-build.s3.*", record)
        root = parse_s3_uri(f"s3://models/{COMPILE_CACHE_PREFIX}", require_key=False)
        cache = CacheStep(key="cfg-1", local_dir=str(tmp_path / "pod1"), cache_root=str(root))
        options = ServeOptions(progress=False, transfer=TransferSettings(workers=2))
        assert pull_compiled(s3, root, cache.key, tmp_path / "pod1") is None  # a miss
        (tmp_path / "pod1").mkdir()
        (tmp_path / "pod1" / "model.neff").write_bytes(b"compiled graph")
        assert CachePublisher(s3, cache, root, options, replace=False)() is True
        hit = pull_compiled(s3, root, cache.key, tmp_path / "pod2")
    assert hit is not None and (tmp_path / "pod2" / "model.neff").read_bytes() == b"compiled graph"
    assert any(op == "PutObject" for op, _, _ in calls)
    for op, arn, prefix in calls:
        assert op in S3_OPERATION_ACTIONS, op  # a new call: name the action it needs
        assert _allows(statements, S3_OPERATION_ACTIONS[op], arn, prefix), (op, arn, prefix)
    # Not vacuous: the same role may not write a model.
    assert not _allows(statements, "s3:PutObject", "arn:aws:s3:::models/models/x", None)


def test_compile_role_writes_only_under_the_compile_cache(synth) -> None:
    statements = _policies(synth["raw"])["compile"]
    writing = ("s3:Put", "s3:Delete")
    writes = [s for s in statements if any(a.startswith(writing) for a in _actions(s))]
    assert writes
    for s in writes:  # deletes too: replacing a corrupt cache entry, never a model
        assert _suffixes(s) == [f"/{COMPILE_CACHE_PREFIX}*"]


def test_weights_role_writes_only_models_and_reads_only_the_hub_token_secret(synth) -> None:
    statements = _policies(synth["raw"])["weights"]
    writing = ("s3:Put", "s3:Delete")
    writes = [s for s in statements if any(a.startswith(writing) for a in _actions(s))]
    assert writes and all(_suffixes(s) == [f"/{MODELS_PREFIX}*"] for s in writes)
    (read,) = [s for s in statements if "secretsmanager:GetSecretValue" in _actions(s)]
    stack: ServingStack = synth["stack"]
    secret_id = stack.get_logical_id(stack.hf_token.secret.node.default_child)
    assert read["Resource"] == {"Ref": secret_id}
    (listing,) = [s for s in statements if "s3:ListBucket" in _actions(s)]
    assert listing["Condition"]["StringLike"]["s3:prefix"] == [f"{MODELS_PREFIX}*"]


def test_the_hub_token_secret_is_created_empty(synth) -> None:
    secrets = [
        r["Properties"]
        for r in synth["raw"]["Resources"].values()
        if r["Type"] == "AWS::SecretsManager::Secret"
        and "Hugging Face" in r["Properties"]["Description"]
    ]
    (secret,) = secrets
    assert "SecretString" not in secret and "GenerateSecretString" not in secret


@pytest.mark.parametrize("role", ["serve", "compile"])
def test_listing_is_limited_to_the_two_prefixes(synth, role: str) -> None:
    statements = _policies(synth["raw"])[role]
    lists = [s for s in statements if "s3:ListBucket" in _actions(s)]
    assert lists
    for s in lists:
        assert s["Condition"]["StringLike"]["s3:prefix"] == [
            f"{MODELS_PREFIX}*",
            f"{COMPILE_CACHE_PREFIX}*",
        ]
    assert not any(a in ("s3:*", "s3:List*", "*") for s in statements for a in _actions(s))


def test_pod_identity_binds_each_service_account_to_its_role(synth) -> None:
    t: Template = synth["template"]
    stack: ServingStack = synth["stack"]
    for suffix in ("serve", "compile"):
        t.has_resource_properties(
            "AWS::EKS::PodIdentityAssociation",
            {
                "Namespace": stack.settings.namespace,
                "ServiceAccount": f"{stack.spec.name}-{suffix}",
            },
        )
    t.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": Match.array_with(["sts:AssumeRole", "sts:TagSession"]),
                                "Principal": {"Service": "pods.eks.amazonaws.com"},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_serving_stack_installs_no_cluster_wide_controller(synth) -> None:
    # KEDA, Prometheus and the load-balancer controller are the platform's (infra/platform/addons):
    # destroying a workload must not remove them.
    synth["template"].resource_count_is("Custom::AWSCDK-EKS-HelmChart", 0)
    synth["template"].resource_count_is("AWS::EKS::Addon", 0)


def test_workload_on_the_cluster_asks_for_the_derived_neuron_devices(synth) -> None:
    stack: ServingStack = synth["stack"]
    text = json.dumps(synth["raw"])
    assert f'\\"schedulerName\\":\\"{NEURON_SCHEDULER_NAME}\\"' in text
    assert f'\\"{NEURON_DEVICE_RESOURCE}\\":\\"{stack.spec.neuron_devices}\\"' in text
    assert stack.spec.neuron_devices == 1  # qwen3-4b-dflash: TP=4 at LNC=2 is one chip
    for kind in (
        "Deployment",
        "Job",
        "Service",
        "PodDisruptionBudget",
        "ScaledObject",
        "ConfigMap",
    ):
        assert f'\\"kind\\":\\"{kind}\\"' in text


def test_config_map_carries_the_real_bucket_name(synth) -> None:
    text = json.dumps(synth["raw"])
    assert "trnspec-model-bucket-placeholder" not in text


def test_outputs_name_the_bucket_and_the_endpoints(synth) -> None:
    outputs = synth["raw"]["Outputs"]
    for name in (
        "ModelBucketName",
        "ServiceEndpoint",
        "InternalNlbEndpoint",
        "ImageUri",
        "PrecompileJob",
    ):
        assert name in outputs


def _assets(synth) -> dict[str, Any]:
    assembly = Path(synth["assembly"].directory)
    return json.loads(next(assembly.glob("*serving.assets.json")).read_text())


def test_the_stack_builds_no_image_and_stages_the_bundle_as_one_zip(synth) -> None:
    """No Docker image asset: the pods run the public image; `cdk deploy` uploads the bundle."""
    stack: ServingStack = synth["stack"]
    manifest = _assets(synth)
    assert manifest.get("dockerImages", {}) == {}
    (entry,) = [f for f in manifest["files"].values() if f["source"]["path"].endswith(".zip")]
    staged = Path(synth["assembly"].directory) / entry["source"]["path"]
    assert hashlib.sha256(staged.read_bytes()).hexdigest() == stack.bundle.sha256
    names = zipfile.ZipFile(staged).namelist()
    assert {n.split("/")[0] for n in names} == {"trnspec", "trnspec_tools"}
    assert synth["raw"]["Outputs"]["ImageUri"]["Value"] == base_image_reference("neuron-plugin")


def test_every_pod_role_reads_the_bundle_object_and_nothing_else_of_the_assets_bucket(
    synth,
) -> None:
    stack: ServingStack = synth["stack"]
    key = stack.bundle.asset.s3_object_key
    for role, statements in _policies(synth["raw"]).items():
        (bundle,) = [s for s in statements if s.get("Sid") == BUNDLE_SID]
        assert _actions(bundle) == ["s3:GetObject"], role
        assert _suffixes(bundle) == [f"/{key}"], role


def test_the_rendered_pods_install_the_staged_bundle(synth) -> None:
    """The init container of the applied Deployment names the asset's object and sha256."""
    stack: ServingStack = synth["stack"]
    text = json.dumps(synth["raw"])
    assert f'\\"--sha256\\",\\"{stack.bundle.sha256}\\"' in text
    assert stack.bundle.asset.s3_object_key in text
    assert "trnspec-bundle-" + "uri-placeholder" not in text
    assert ".dkr.ecr." not in text


def test_template_passes_cfn_lint(synth) -> None:
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), "--format", "parseable", str(synth["path"])],
        capture_output=True,
        text=True,
        check=False,
    )
    # Exit status is a bitmask: 2 = errors, 4 = warnings, 8 = informational; 1 = crashed.
    assert result.returncode & 0b11 == 0, result.stdout + result.stderr
    assert result.returncode == 0, f"cfn-lint warnings:\n{result.stdout}"


def test_serving_stack_has_no_unacknowledged_cdk_nag_findings(tmp_path: Path) -> None:
    """AwsSolutions over a fresh synth; findings of the stand-in platform stack are not ours."""
    app = App(context=CONTEXT, outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    platform = MiniPlatform(app, "trnspec-test")
    serving = _serving_stack(app, platform)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except RuntimeError as err:
        if "Validation failed" not in str(err) and "ValidationFailed" not in str(err):
            raise
    report = json.loads((tmp_path / "validation-report.json").read_text())
    ours = [
        f"{v['ruleName']} at {c['constructPath']}"
        for plugin in report["pluginReports"]
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
        if c["constructPath"].startswith(f"{serving.stack_name}/")
    ]
    assert not ours, "\n".join(ours)


def test_serving_stack_adds_nothing_to_the_cluster_stack(synth) -> None:
    """The platform owns the cluster's add-ons (e.g. eks-pod-identity-agent): no duplicates."""
    platform = synth["assembly"].get_stack_by_name("trnspec-test").template
    assert not [r for r in platform["Resources"].values() if r["Type"] == "AWS::EKS::Addon"]


def _of_type(raw: dict[str, Any], type_: str, prefix: str = "") -> set[str]:
    return {
        lid for lid, r in raw["Resources"].items() if r["Type"] == type_ and lid.startswith(prefix)
    }


def _applying(raw: dict[str, Any], kind: str) -> str:
    """Logical id of the KubernetesResource whose manifest contains an object of `kind`."""
    (lid,) = [
        lid
        for lid in _of_type(raw, "Custom::AWSCDK-EKS-KubernetesResource")
        # A top-level object: its kind is followed by its metadata (not a reference's name).
        if f'\\"kind\\":\\"{kind}\\",\\"metadata\\"'
        in json.dumps(raw["Resources"][lid]["Properties"])
    ]
    return lid


def _applying_in(raw: dict[str, Any], prefix: str, kind: str) -> str:
    (lid,) = [
        lid
        for lid in _of_type(raw, "Custom::AWSCDK-EKS-KubernetesResource", prefix)
        if f'\\"kind\\":\\"{kind}\\"' in json.dumps(raw["Resources"][lid]["Properties"])
    ]
    return lid


def _depends_on(raw: dict[str, Any], lid: str) -> set[str]:
    return set(raw["Resources"][lid].get("DependsOn", []))


def test_manifests_wait_for_what_they_need(synth) -> None:
    raw = synth["raw"]
    namespace = _applying(raw, "Namespace")
    identities = _of_type(raw, "AWS::EKS::PodIdentityAssociation")
    accounts = {
        lid
        for lid in _of_type(raw, "Custom::AWSCDK-EKS-KubernetesResource")
        if '\\"kind\\":\\"ServiceAccount\\"' in json.dumps(raw["Resources"][lid]["Properties"])
    }
    assert len(identities) == 3 and len(accounts) == 3  # serve, compile, weights
    # The ScaledObject after the Deployment it scales, monitors after the namespace, pods after
    # their identities and service accounts, service accounts after the namespace (the CRDs come
    # from the platform stack, deployed first: tests/infra/test_dependency_inventory.py).
    deployment = _applying(raw, "Deployment")
    assert deployment in _depends_on(raw, _applying(raw, "ScaledObject"))
    assert namespace in _depends_on(raw, _applying(raw, "ServiceMonitor"))
    pods = _depends_on(raw, deployment)
    assert identities | accounts | {namespace} <= pods
    for account in accounts:
        assert namespace in _depends_on(raw, account)
