"""The IAM side of a YAML export: each service account's role policy and its EKS Pod Identity
association, read from the serving stack itself.

The export (`manifests --out`) holds only Kubernetes objects; the pods also need, per service
account, an IAM role with exactly the statements the serving stack grants and an EKS Pod
Identity association binding the role to the account. Rather than a hand copy, the serving stack
is built as `cdk deploy` would build it on an existing cluster (`add_serving_on_existing`, the
same constructs and statements) and synthesized offline; its AWS::IAM::Policy documents and
AWS::EKS::PodIdentityAssociation resources are read from the template, with the stack's own
resources (its model bucket, bucket key, secrets, the bundle's asset) replaced by the ones the
user has (`Known`); a value the user did not give stays a `<...>` placeholder, listed.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trnspec.boundary.aws_names import Partition, partition_of
from trnspec.boundary.files import read_json
from trnspec.boundary.shell import shell_command

#: A value the user did not give: the roles' policies say what to put there.
KEY_PLACEHOLDER = "<KMS key ARN of the model bucket (omit this statement with SSE-S3)>"
ACCOUNT_PLACEHOLDER = "<ACCOUNT>"


@dataclass(frozen=True)
class IamTargets:
    """The user's resources that stand where the stack's own would."""

    cluster: str
    bucket: str
    region: str
    kms_key_arn: str | None = None
    hf_token_secret_arn: str | None = None
    api_key_secret_arn: str | None = None
    bundle_uri: str | None = None
    account: str | None = None

    @property
    def partition(self) -> Partition:
        """The region's partition: `arn:aws-cn:` in cn-*, `arn:aws-us-gov:` in us-gov-*, ..."""
        return partition_of(self.region)


@dataclass(frozen=True)
class RoleToCreate:
    """One service account's role: its policy, and the association that binds it."""

    namespace: str
    service_account: str
    policy: dict[str, Any]
    trust: dict[str, Any]
    """The role's trust policy, as the stack writes it (EKS Pod Identity's service)."""

    @property
    def role_name(self) -> str:
        return f"trnspec-{self.service_account}"[:64]

    def association_command(self, cluster: str, region: str, account: str | None) -> str:
        """The `aws eks create-pod-identity-association` line, every word quoted (the cluster
        and region are the user's flags)."""
        partition = partition_of(region).name
        role_arn = f"arn:{partition}:iam::{account or ACCOUNT_PLACEHOLDER}:role/{self.role_name}"
        return shell_command(
            "aws",
            "eks",
            "create-pod-identity-association",
            "--region",
            region,
            "--cluster-name",
            cluster,
            "--namespace",
            self.namespace,
            "--service-account",
            self.service_account,
            "--role-arn",
            role_arn,
        )

    def role_commands(self) -> list[str]:
        """The `aws iam` lines that create the role from the trust and policy files written
        beside the script (iam/<service account>.trust.json and .policy.json)."""
        return [
            shell_command(
                "aws",
                "iam",
                "create-role",
                "--role-name",
                self.role_name,
                "--assume-role-policy-document",
                f"file://{self.service_account}.trust.json",
            ),
            shell_command(
                "aws",
                "iam",
                "put-role-policy",
                "--role-name",
                self.role_name,
                "--policy-name",
                "trnspec",
                "--policy-document",
                f"file://{self.service_account}.policy.json",
            ),
        ]


def synthesized_serving_template(workload: Any, cluster: str) -> dict[str, Any]:
    """The serving stack's template on an existing cluster named `cluster`, as `cdk synth`
    writes it (offline: no account, no lookups)."""
    from aws_cdk import App

    from infra.platform.cluster.existing import ExistingClusterProps
    from infra.serving.bundle.archive import REPO_DIR
    from infra.serving.stack import add_serving_on_existing

    # cdk.json's feature flags, as `cdk synth` passes them
    context = read_json(REPO_DIR / "cdk.json", "cdk.json")["context"]
    with tempfile.TemporaryDirectory(prefix="trnspec-iam-") as outdir:
        app = App(outdir=outdir, context=context)
        stack = add_serving_on_existing(
            app, "TrnspecIam-serving", workload, ExistingClusterProps(cluster, None), "10.0.0.0/16"
        )
        app.synth()
        template = Path(outdir) / f"{stack.stack_name}.template.json"
        return read_json(template, "the synthesized serving template")


def roles_to_create(template: dict[str, Any], targets: IamTargets) -> list[RoleToCreate]:
    """Per Pod Identity association of the serving stack: the policy of its role, resolved onto
    `targets`."""
    resources = template["Resources"]
    resolve = _Resolver(resources, targets)
    policies: dict[str, list[dict[str, Any]]] = {}
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy":
            for role in resource["Properties"].get("Roles", []):
                statements = resource["Properties"]["PolicyDocument"]["Statement"]
                policies.setdefault(role["Ref"], []).extend(resolve(statements))
    out = []
    for resource in resources.values():
        if resource["Type"] != "AWS::EKS::PodIdentityAssociation":
            continue
        props = resource["Properties"]
        role = props["RoleArn"]["Fn::GetAtt"][0]
        out.append(
            RoleToCreate(
                props["Namespace"],
                props["ServiceAccount"],
                bundle_object_fixup(
                    {"Version": "2012-10-17", "Statement": policies.get(role, [])}, targets
                ),
                resolve(resources[role]["Properties"]["AssumeRolePolicyDocument"]),
            )
        )
    return sorted(out, key=lambda r: r.service_account)


class _Resolver:
    """CloudFormation intrinsics of the policies, with the stack's resources mapped to the
    user's: the model bucket, its key, the two secrets, the bundle's asset object."""

    def __init__(self, resources: dict[str, Any], targets: IamTargets) -> None:
        self.targets = targets
        self.refs: dict[str, str] = {}
        self.arns: dict[str, str] = {}
        for logical_id, resource in resources.items():
            kind = resource["Type"]
            model = logical_id.startswith("ModelBucket") and "AccessLogs" not in logical_id
            if kind == "AWS::S3::Bucket" and model:
                self.refs[logical_id] = targets.bucket
                self.arns[logical_id] = f"arn:{targets.partition.name}:s3:::{targets.bucket}"
            elif kind == "AWS::KMS::Key" and model:
                self.arns[logical_id] = targets.kms_key_arn or KEY_PLACEHOLDER
            elif kind == "AWS::KMS::Key":
                self.arns[logical_id] = (
                    f"<KMS key of the {logical_id[:7]} secret (with aws/secretsmanager: omit "
                    "this statement)>"
                )
            elif kind == "AWS::SecretsManager::Secret":
                given = (
                    targets.hf_token_secret_arn
                    if "HfToken" in logical_id
                    else targets.api_key_secret_arn
                )
                self.refs[logical_id] = given or f"<ARN of the {logical_id[:7]} secret>"

    def __call__(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str) or not isinstance(value, dict):
            return value
        if "Ref" in value and len(value) == 1:
            return self._ref(value["Ref"])
        if "Fn::GetAtt" in value and len(value) == 1:
            logical_id, _ = value["Fn::GetAtt"]
            return self.arns.get(logical_id, f"<{logical_id}>")
        if "Fn::Join" in value and len(value) == 1:
            sep, parts = value["Fn::Join"]
            return sep.join(str(self(p)) for p in parts)
        if "Fn::Sub" in value and len(value) == 1:
            text = value["Fn::Sub"]
            if isinstance(text, str) and "cdk-" in text and "-assets-" in text:
                return self._bundle_bucket()
            return self(text)
        return {k: self(v) for k, v in value.items()}

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": self.targets.region,
            "AWS::Partition": self.targets.partition.name,
            "AWS::URLSuffix": self.targets.partition.dns_suffix,
            "AWS::AccountId": self.targets.account or ACCOUNT_PLACEHOLDER,
        }
        return pseudo.get(name) or self.refs.get(name, f"<{name}>")

    def _bundle_bucket(self) -> str:
        uri = self.targets.bundle_uri
        return uri[5:].split("/", 1)[0] if uri else "<bundle bucket (--upload-bundle)>"


def bundle_object_fixup(policy: dict[str, Any], targets: IamTargets) -> dict[str, Any]:
    """The bundle statement names the asset's key (its content hash) in the assets bucket; the
    uploaded object has the bundle's own name: point the statement at it."""
    if not targets.bundle_uri:
        return policy
    bucket, _, key = targets.bundle_uri[5:].partition("/")
    for statement in policy["Statement"]:
        if statement.get("Sid") == "ReadTrnspecBundle":
            statement["Resource"] = f"arn:{targets.partition.name}:s3:::{bucket}/{key}"
    return policy
