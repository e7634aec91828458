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
from pathlib import Path

import yaml
from trnspec.boundary.args import path_arg, text_arg
from trnspec.boundary.errors import BoundaryError, exits_on_bad_input
from trnspec.boundary.files import read_json
from trnspec.boundary.problems import ABSENT
from trnspec.boundary.text import printable
from trnspec.boundary.write import moved_lines, output_clash, write_outputs

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

#: The placeholders an export may leave, and what fills each on a deploy.
LEFT_FOR_THE_STACK = {
    BUCKET_PLACEHOLDER: "the model bucket (--bucket, or the stack's ModelBucketName output)",
    REGION_PLACEHOLDER: "the region (--region)",
    HF_TOKEN_SECRET_PLACEHOLDER: "the Hugging Face token secret's ARN (HfTokenSecretArn)",
    API_KEY_SECRET_PLACEHOLDER: "the API key secret's ARN (ApiKeySecretArn)",
    BUNDLE_URI_PLACEHOLDER: "the trnspec bundle's S3 URI (the stack's file asset)",
    BUNDLE_SHA256_PLACEHOLDER: "the trnspec bundle's sha256 (the stack's file asset)",
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
    parser.add_argument("--bucket", type=text_arg(63), help="with --out: the model bucket's name")
    parser.add_argument("--region", type=text_arg(32), help="with --out: the AWS region")
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


def exported(
    workload: WorkloadPreflight, vpc_cidr: str, bucket: str | None, region: str | None
) -> list[tuple[str, list[Manifest]]]:
    """(file name, objects) per apply step, in the serving stack's order (infra/serving/
    workload.py): namespace, service accounts, the workload, KEDA's objects, the monitors.
    Only what is known is bound; the image is the profile's public image, as the stack binds."""
    left = placeholder_values(workload.settings.api_key_enabled)
    values = dataclasses.replace(
        left,
        bucket_name=bucket or left.bucket_name,
        image_uri=base_image_reference(workload.config.image),
        region=region or left.region,
        vpc_cidr=vpc_cidr,
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
    files = [
        (out / name, _yaml(objects))
        for name, objects in exported(workload, args.vpc_cidr, args.bucket, args.region)
    ]
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
    print(
        "not Kubernetes objects, so not exported: the Pod Identity roles and associations of "
        "the service accounts, the model bucket and the secrets (the serving stack makes them)"
    )
    return 1 if any(w.moved for w in written) else 0


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
        print(f"{mark} {need.key}: {need.need}")
        if verdict is not None:
            print(f"      {printable(verdict.detail, 300)}")
        print(f"      $ {need.command}")
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
