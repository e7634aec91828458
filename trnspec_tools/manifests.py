"""`python -m trnspec_tools manifests`: the serving workload of a plan as Kubernetes YAML, and a
preflight of what it needs of an existing cluster.

    manifests --plan config/plans/default.yaml --vpc-cidr 10.0.0.0/16 --out deploy/
    manifests --plan config/plans/default.yaml --check [--nodes nodes.json] [--node-group ng.json]
    manifests --plan ... --set serving.namespace=llm --set serving.scale_to_zero=true ...

`--set serving.FIELD=VALUE` (repeatable) overrides a serving setting after the plan, as
`cdk deploy -c serving.FIELD=VALUE` does (the same loader, the same checks: a field the plan
sets is refused there too).

`--out` writes the objects the serving stack applies (the same builders, the same preflight:
infra/serving/preflight.py, with the API server's rules checked first), plus the service
accounts the stack creates beside its Pod Identity roles, one file per apply step in the
stack's order (`kubectl apply -f DIR` applies them in file order). Values only a deployed
serving stack knows stay as their placeholders (trnspec-...-placeholder) unless given
(`--bucket`, `--region`) and are listed. `--check` prints, per requirement of the workload on a
cluster (derived from the exported objects themselves), the kubectl command that verifies it;
with `--nodes` (`kubectl get nodes -o json`) or `--node-group` (`aws eks describe-nodegroup`, for
a Trn2 group resting at zero) it evaluates the node-side ones and exits 1 when one fails; with no
Trn2 node up and no template it says so instead (trnspec_tools/cluster_requirements.py, pure).
Every file is read by trnspec.boundary.files and written by trnspec.boundary.write.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from trnspec.boundary import json_io
from trnspec.boundary.args import path_arg
from trnspec.boundary.aws_names import (
    arg,
    bucket_problem,
    eks_cluster_name_problem,
    kms_key_arn_problem,
    region_problem,
    secret_arn_problem,
)
from trnspec.boundary.errors import BoundaryError, exits_on_bad_input
from trnspec.boundary.files import read_json
from trnspec.boundary.problems import ABSENT
from trnspec.boundary.text import printable
from trnspec.boundary.write import moved_lines, output_clash, write_outputs
from trnspec.config.s3_uri import s3_folder_problem

from infra.serving.bundle.archive import Bundle, build_bundle
from infra.serving.image import base_image_reference
from infra.serving.manifests.placeholders import (
    API_KEY_SECRET_PLACEHOLDER,
    BUCKET_PLACEHOLDER,
    BUNDLE_SHA256_PLACEHOLDER,
    BUNDLE_URI_PLACEHOLDER,
    HF_TOKEN_SECRET_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    REGION_PLACEHOLDER,
    bind,
    placeholder_values,
)
from infra.serving.manifests.pod import Manifest
from infra.serving.manifests.service_account import service_account
from infra.serving.manifests.spec import check_serving
from infra.serving.preflight import WorkloadPreflight, provided_objects, workload_preflight
from infra.settings import profile_data
from infra.settings.existing_cluster import vpc_cidr_problem
from infra.settings.plan_file import PLAN_OVERRIDE
from trnspec_tools.cluster_requirements import (
    evaluate,
    no_node_up,
    parse_node_group,
    parse_nodes,
    requirements,
)
from trnspec_tools.manifests_iam import IamTargets, roles_to_create, synthesized_serving_template

#: The placeholders an export may leave, and what fills each on a deploy.
LEFT_FOR_THE_STACK = {
    BUCKET_PLACEHOLDER: "the model bucket (--bucket, or the stack's ModelBucketName output)",
    REGION_PLACEHOLDER: "the region (--region)",
    HF_TOKEN_SECRET_PLACEHOLDER: "the Hugging Face token secret's ARN (--hf-token-secret-arn)",
    API_KEY_SECRET_PLACEHOLDER: "the API key secret's ARN (--api-key-secret-arn)",
    BUNDLE_URI_PLACEHOLDER: "the trnspec bundle's S3 URI (--upload-bundle)",
    BUNDLE_SHA256_PLACEHOLDER: "the trnspec bundle's sha256 (--upload-bundle)",
}


def _cidr(text: str) -> str:
    problem = vpc_cidr_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{printable(text, 40)}: {problem}")
    return text


def _serving_set(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    field = key.removeprefix("serving.")
    if not sep or field == key or not field or key.strip() != key or key == PLAN_OVERRIDE:
        raise argparse.ArgumentTypeError(
            f"{printable(text, 80)}: give serving.FIELD=VALUE, as `cdk deploy -c` takes it, "
            "e.g. serving.namespace=llm (the plan itself is --plan)"
        )
    return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trnspec_tools manifests",
        description="Export the serving workload's Kubernetes manifests for an existing cluster, "
        "or check what the cluster must have (docs/platform.md, 'Existing cluster').",
    )
    add_cli_args(parser)
    return parser


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """The manifests command's flags."""
    parser.add_argument(
        "--plan",
        required=True,
        type=path_arg(),
        help="plan file (python -m trnspec plan-deploy), as `cdk deploy -c serving.plan=FILE`",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=path_arg(), help="directory to write the YAML files into")
    mode.add_argument(
        "--check", action="store_true", help="print what the cluster needs and how to verify it"
    )
    parser.add_argument(
        "--nodes",
        type=path_arg(),
        help="with --check: `kubectl get nodes -o json` output to evaluate the nodes against",
    )
    parser.add_argument(
        "--node-group",
        type=path_arg(),
        help="with --check: `aws eks describe-nodegroup --output json` of the Trn2 node group, "
        "evaluated as the nodes it would start (for a group resting at zero)",
    )
    parser.add_argument(
        "--vpc-cidr", type=_cidr, help="with --out (required): the cluster VPC's IPv4 CIDR"
    )
    parser.add_argument(
        "--bucket", type=arg(bucket_problem), help="with --out: the model bucket's name"
    )
    parser.add_argument("--region", type=arg(region_problem), help="with --out: the AWS region")
    parser.add_argument(
        "--upload-bundle",
        metavar="s3://BUCKET[/PREFIX]",
        type=arg(s3_folder_problem),
        help="with --out: build the trnspec bundle and upload it there (what cdk deploy's file "
        "asset does); the export then carries its URI and sha256",
    )
    parser.add_argument(
        "--hf-token-secret-arn",
        type=arg(secret_arn_problem),
        help="with --out: the Secrets Manager secret the weights Job reads a Hub token from",
    )
    parser.add_argument(
        "--api-key-secret-arn",
        type=arg(secret_arn_problem),
        help="with --out, when the API key is on: the secret holding the key",
    )
    parser.add_argument(
        "--iam-cluster",
        metavar="CLUSTER",
        type=arg(eks_cluster_name_problem),
        help="with --out: also write iam/: each service account's role (trust and policy, "
        "from the serving stack built for an existing cluster CLUSTER) and the command that "
        "creates its Pod Identity association (needs --bucket and --region)",
    )
    parser.add_argument(
        "--kms-key-arn",
        type=arg(kms_key_arn_problem),
        help="with --iam-cluster: the KMS key of the model bucket (SSE-KMS)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        type=_serving_set,
        metavar="serving.FIELD=VALUE",
        help="override a serving setting after the plan, as `cdk deploy -c` does (repeatable)",
    )


def plan_workload(plan: str, sets: Sequence[tuple[str, str]] = ()) -> WorkloadPreflight:
    """The workload `cdk deploy -c serving.plan=PLAN [-c KEY=VALUE ...]` deploys (the default
    profile's serving section with the plan merged, then `sets`), checked and derived as synth
    does."""
    overrides = {PLAN_OVERRIDE: str(Path(plan).absolute()), **dict(sets)}
    serving = profile_data("default", overrides).get("serving")
    checked = check_serving(serving, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    return workload_preflight(checked)


@dataclass(frozen=True)
class Known:
    """What the export binds besides the VPC CIDR (None: left as its placeholder)."""

    bucket: str | None = None
    region: str | None = None
    bundle: UploadedBundle | None = None
    hf_token_secret_arn: str | None = None
    api_key_secret_arn: str | None = None


@dataclass(frozen=True)
class UploadedBundle:
    """The trnspec bundle where --upload-bundle put it."""

    uri: str
    sha256: str


def upload_bundle(
    destination: str, s3: Any | None = None, bundle: Bundle | None = None, region: str | None = None
) -> UploadedBundle:
    """Build the bundle (the stack's builder: same source, same bytes) and upload it under
    `destination` (s3://BUCKET[/PREFIX]) as the stack's asset would be named."""
    if not destination.startswith("s3://") or not destination[5:].split("/", 1)[0]:
        raise BoundaryError(
            "--upload-bundle", destination, "give s3://BUCKET or s3://BUCKET/PREFIX"
        )
    bucket, _, prefix = destination[5:].partition("/")
    bundle = bundle or build_bundle()
    key = f"{prefix.strip('/')}/{bundle.file_name}".lstrip("/")
    if s3 is None:
        import boto3

        s3 = boto3.client("s3", region_name=region)
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        s3.put_object(Bucket=bucket, Key=key, Body=bundle.data)
    except (BotoCoreError, ClientError) as err:
        raise BoundaryError(
            "--upload-bundle",
            destination,
            f"upload failed ({printable(err, 200)}); check the "
            "bucket, its region and your s3:PutObject right",
        ) from None
    return UploadedBundle(f"s3://{bucket}/{key}", bundle.sha256)


def exported(
    workload: WorkloadPreflight,
    vpc_cidr: str,
    bucket: str | None = None,
    region: str | None = None,
    known: Known | None = None,
) -> list[tuple[str, list[Manifest]]]:
    """(file name, objects) per apply step, in the serving stack's order (infra/serving/
    workload.py): namespace, service accounts, the workload, KEDA's objects, the monitors.
    Only what is known is bound; the image is the profile's public image, as the stack binds."""
    known = known or Known(bucket=bucket, region=region)
    left = placeholder_values(workload.settings.api_key_enabled)
    values = dataclasses.replace(
        left,
        bucket_name=known.bucket or left.bucket_name,
        image_uri=base_image_reference(workload.config.image),
        region=known.region or left.region,
        vpc_cidr=vpc_cidr,
        hf_token_secret_arn=known.hf_token_secret_arn or left.hf_token_secret_arn,
        api_key_secret_arn=known.api_key_secret_arn or left.api_key_secret_arn,
        bundle_uri=known.bundle.uri if known.bundle else left.bundle_uri,
        bundle_sha256=known.bundle.sha256 if known.bundle else left.bundle_sha256,
    )
    manifests = bind(workload.manifests, values)
    accounts = [
        service_account(ref.name, ref.namespace or workload.spec.namespace)
        for ref in provided_objects(workload.spec, workload.settings)
        if ref.kind == "ServiceAccount"
    ]
    steps = [
        ("01-namespace.yaml", [manifests.namespace]),
        ("02-service-accounts.yaml", accounts),
        ("03-workload.yaml", manifests.core),
        ("04-autoscaling.yaml", manifests.keda),
        ("05-monitoring.yaml", manifests.monitoring),
    ]
    return [(name, objects) for name, objects in steps if objects]


def _yaml(objects: list[Manifest]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False)


def _export(args: argparse.Namespace, workload: WorkloadPreflight) -> int:
    if args.vpc_cidr is None:
        raise BoundaryError(
            "--vpc-cidr",
            ABSENT,
            "required with --out (the network policies allow the VPC's range); give the"
            " cluster VPC's CIDR, e.g. --vpc-cidr 10.0.0.0/16",
        )
    out = Path(args.out)
    bundle = upload_bundle(args.upload_bundle, region=args.region) if args.upload_bundle else None
    if bundle is not None:
        print(f"uploaded the trnspec bundle to {bundle.uri} (sha256 {bundle.sha256})")
    known = Known(
        args.bucket, args.region, bundle, args.hf_token_secret_arn, args.api_key_secret_arn
    )
    files = [
        (out / name, _yaml(objects))
        for name, objects in exported(workload, args.vpc_cidr, known=known)
    ]
    if args.iam_cluster:
        files += _iam_files(args, out / "iam", bundle)
    clash = output_clash([(f"--out {path.name}", path) for path, _ in files])
    if clash is not None:
        raise clash
    written = write_outputs("manifests", files)
    for w in written:
        if not w.moved:
            print(f"wrote {w.path}")
    for line in moved_lines(written):
        print(line, file=sys.stderr)
    text = "".join(data for _, data in files)
    left = [f"  {p}: {what}" for p, what in LEFT_FOR_THE_STACK.items() if p in text]
    if left:
        print("placeholders left (a deployed serving stack binds them):", *left, sep="\n")
    if not args.iam_cluster:
        print(
            "not Kubernetes objects, so not exported: the Pod Identity roles and associations "
            "of the service accounts (--iam-cluster CLUSTER writes them), the model bucket and "
            "the secrets"
        )
    return 1 if any(w.moved for w in written) else 0


def _iam_files(
    args: argparse.Namespace, iam_dir: Path, bundle: UploadedBundle | None
) -> list[tuple[Path, str]]:
    """iam/<service account>.policy.json and .trust.json per role, and iam/associations.sh."""
    for flag, value in (("--bucket", args.bucket), ("--region", args.region)):
        if not value:
            raise BoundaryError(flag, ABSENT, "required with --iam-cluster (the roles name it)")
    targets = IamTargets(
        cluster=args.iam_cluster,
        bucket=args.bucket,
        region=args.region,
        kms_key_arn=args.kms_key_arn,
        hf_token_secret_arn=args.hf_token_secret_arn,
        api_key_secret_arn=args.api_key_secret_arn,
        bundle_uri=bundle.uri if bundle else None,
    )
    workload = plan_workload(args.plan, args.overrides)
    roles = roles_to_create(synthesized_serving_template(workload, args.iam_cluster), targets)
    files = []
    lines = ["#!/bin/sh", "# one IAM role per service account, then its Pod Identity association"]
    for role in roles:
        base = iam_dir / role.service_account
        files.append((Path(f"{base}.policy.json"), json_io.dumps(role.policy)))
        files.append((Path(f"{base}.trust.json"), json_io.dumps(role.trust)))
        lines += [
            *role.role_commands(),
            role.association_command(args.iam_cluster, args.region, None),
        ]
    files.append((iam_dir / "associations.sh", "\n".join(lines) + "\n"))
    return files


#: How each node-side outcome is marked in the listing.
_MARKS = {"pass": "pass ", "fail": "FAIL ", "no-node": "n/a  "}


def _check(args: argparse.Namespace, workload: WorkloadPreflight) -> int:
    """Every requirement the exported objects make of the cluster (derived from the objects:
    trnspec_tools/cluster_requirements.py); with --nodes or --node-group the node-side ones
    evaluated. Exit 1 only when one fails; with no Trn2 node up they are `n/a`, not failed."""
    manifests = workload.manifests.all()
    needs = requirements(manifests)
    verdicts = {}
    nodes = []
    if args.nodes is not None:
        nodes += parse_nodes(read_json(args.nodes, "--nodes"))
    if args.node_group is not None:
        nodes += parse_node_group(read_json(args.node_group, "--node-group"))
    evaluated = args.nodes is not None or args.node_group is not None
    if evaluated:
        verdicts = {v.requirement.key: v for v in evaluate(manifests, nodes)}
    for need in needs:
        verdict = verdicts.get(need.key)
        mark = "check" if verdict is None else _MARKS[verdict.outcome]
        print(f"{mark} {printable(need.key, 300)}: {printable(need.need, 2000)}")
        if verdict is not None:
            print(f"      {printable(verdict.detail, 300)}")
        print(f"      $ {printable(need.command, 2000)}")
    failed = [v for v in verdicts.values() if v.outcome == "fail"]
    if evaluated:
        unknown = no_node_up(manifests, nodes)
        if unknown is not None:
            print(f"node requirements not evaluated: {unknown}")
        else:
            print(f"{len(verdicts) - len(failed)} of {len(verdicts)} node requirements pass")
    return 1 if failed else 0


@exits_on_bad_input("manifests")
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for flag, given in (("--nodes", args.nodes), ("--node-group", args.node_group)):
        if given is not None and not args.check:
            print(f"manifests: error: {flag} goes with --check", file=sys.stderr)
            return 2
    workload = plan_workload(args.plan, args.overrides)
    return _check(args, workload) if args.check else _export(args, workload)
