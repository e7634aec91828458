"""AWS identifiers as AWS itself accepts them: one rule per kind, shared by every place one
enters (argparse flags, `-c` settings, config files), so a value AWS would refuse is named where
it is typed instead of passing synth and failing in CloudFormation, or never failing at all (a
VPC range of 0.0.0.0/0 makes the network policies' "the VPC" every address).

Each rule is a pure function of the text: `None` when AWS accepts it, else the one-line reason
and fix (the caller names the field and shows the value). `arg(rule)` turns a rule into an
argparse `type=`. Every pattern is ASCII (explicit `[0-9]`, `[a-z]`, `re.ASCII`): `\\d` and `\\w`
in a Unicode pattern take Arabic-Indic digits and accented letters, which no AWS name holds.

Sources (checked against):
- Partitions and their regions: botocore 1.44 `data/partitions.json` (aws, aws-cn, aws-us-gov,
  aws-iso, aws-iso-b, aws-iso-e, aws-iso-f, aws-eusc; regions such as us-east-1,
  us-gov-west-1, cn-north-1, us-isob-east-1, eu-isoe-west-1, eusc-de-east-1).
- Account ids: 12 digits (IAM User Guide, "AWS account identifiers").
- IAM role and user names: 1-64 ASCII letters, digits and `_+=,.@-`; paths `/` or `/.../`
  of printable ASCII, at most 512 (IAM API Reference, CreateRole / CreateUser; IAM User Guide,
  "IAM and AWS STS quotas").
- S3 general purpose bucket names: 3-63 lowercase letters, digits, dots and hyphens, a letter
  or digit at each end, no `..`, not an IPv4 address, none of the reserved prefixes and
  suffixes below (Amazon S3 User Guide, "General purpose bucket naming rules"); no dot next to
  a hyphen (its labels must start and end with a letter or digit: CloudTrail User Guide,
  "Amazon S3 bucket naming requirements").
- EKS cluster names: EKS API Reference, CreateCluster.
- VPC IPv4 CIDR blocks: /16 (65,536 addresses) to /28 (16) (EC2 API Reference, CreateVpc).
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

from trnspec.boundary.problems import show

Rule = Callable[[str], str | None]

#: Every AWS partition (botocore data/partitions.json).
PARTITIONS: tuple[str, ...] = (
    "aws",
    "aws-cn",
    "aws-us-gov",
    "aws-iso",
    "aws-iso-b",
    "aws-iso-e",
    "aws-iso-f",
    "aws-eusc",
)

#: A region: a 2-4 letter area (us, eu, eusc), one to three words (gov, iso, de, east), a
#: number. A shape, not a list, so a region opened after this release is accepted.
_REGION = re.compile(r"[a-z]{2,4}(?:-[a-z]+){1,3}-[0-9]{1,2}", re.ASCII)
_AZ_LETTER = re.compile(r"[a-z]", re.ASCII)
_ACCOUNT = re.compile(r"[0-9]{12}", re.ASCII)
#: IAM user, role and path characters (CreateRole: RoleName `[\w+=,.@-]+`, ASCII).
_IAM_NAME = re.compile(r"[A-Za-z0-9_+=,.@-]{1,64}", re.ASCII)
_IAM_PATH = re.compile(r"/(?:[!-~]+/)?", re.ASCII)
MAX_IAM_PATH = 512
_ARN = re.compile(
    r"arn:(?P<partition>[^:]+):(?P<service>[^:]+):(?P<region>[^:]*):(?P<account>[^:]*)"
    r":(?P<resource>.+)",
    re.ASCII,
)
#: Secrets Manager secret names: ASCII letters, digits and /_+=.@- (CreateSecret), plus the
#: six-character suffix Secrets Manager appends in the ARN.
_SECRET = re.compile(r"secret:[A-Za-z0-9/_+=.@-]{1,512}", re.ASCII)
#: KMS key ids: a UUID, or a multi-Region key's mrk- and 32 hex digits.
_KMS_KEY = re.compile(
    r"key/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})",
    re.ASCII,
)
#: EKS cluster names (CreateCluster): 1-100 ASCII letters, digits, hyphens and underscores, a
#: letter or digit first.
_EKS_CLUSTER = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", re.ASCII)
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", re.ASCII)
_IPV4_FORM = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}", re.ASCII)
BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
#: The VPC sizes CreateVpc accepts.
VPC_PREFIX_MIN, VPC_PREFIX_MAX = 16, 28


@dataclass(frozen=True)
class Partition:
    """The partition a region is in: the `arn:<name>:` of its resources, and the DNS suffix of
    its service endpoints (CloudFormation's AWS::Partition and AWS::URLSuffix there)."""

    name: str
    dns_suffix: str


#: Each partition but `aws` by the start of its regions' names, with its DNS suffix (botocore
#: data/partitions.json: regionRegex, outputs.dnsSuffix); a region none of them takes is in aws.
_PARTITION_BY_PREFIX: tuple[tuple[str, Partition], ...] = (
    ("cn-", Partition("aws-cn", "amazonaws.com.cn")),
    ("us-gov-", Partition("aws-us-gov", "amazonaws.com")),
    ("us-iso-", Partition("aws-iso", "c2s.ic.gov")),
    ("us-isob-", Partition("aws-iso-b", "sc2s.sgov.gov")),
    ("eu-isoe-", Partition("aws-iso-e", "cloud.adc-e.uk")),
    ("us-isof-", Partition("aws-iso-f", "csp.hci.ic.gov")),
    ("eusc-", Partition("aws-eusc", "amazonaws.eu")),
)
AWS_PARTITION = Partition("aws", "amazonaws.com")


def partition_of(region: str) -> Partition:
    """The partition of `region` (a name region_problem accepts): aws-cn for cn-*, aws-us-gov
    for us-gov-*, and so on; aws otherwise."""
    for prefix, partition in _PARTITION_BY_PREFIX:
        if region.startswith(prefix):
            return partition
    return AWS_PARTITION


def region_problem(text: str) -> str | None:
    if _REGION.fullmatch(text):
        return None
    return "not an AWS region name: use one like us-east-2 (aws ec2 describe-regions)"


def availability_zone_problem(text: str) -> str | None:
    if _AZ_LETTER.fullmatch(text[-1:]) and _REGION.fullmatch(text[:-1]):
        return None
    return "not an availability zone name: use one like us-east-2a (its region and a letter)"


def account_problem(text: str) -> str | None:
    if _ACCOUNT.fullmatch(text):
        return None
    return "not an AWS account id: use its 12 digits (aws sts get-caller-identity)"


def eks_cluster_name_problem(text: str) -> str | None:
    if _EKS_CLUSTER.fullmatch(text):
        return None
    return (
        "not an EKS cluster name (1-100 letters, digits, '-' or '_', a letter or digit "
        "first): use the name `aws eks list-clusters` prints"
    )


def bucket_problem(text: str) -> str | None:
    """Why S3 would refuse `text` as a general purpose bucket name, or None."""
    if not _BUCKET.fullmatch(text) or ".." in text or ".-" in text or "-." in text:
        return (
            "not an S3 bucket name: 3-63 lowercase letters, digits, dots or hyphens, a letter"
            " or digit at each end and next to every dot (the stack's ModelBucketName output)"
        )
    if _IPV4_FORM.fullmatch(text):
        return "an S3 bucket name is not an IP address: use the bucket's name"
    reserved = [p for p in BUCKET_PREFIXES if text.startswith(p)]
    reserved += [s for s in BUCKET_SUFFIXES if text.endswith(s)]
    if reserved:
        return f"S3 reserves {reserved[0]!r} in bucket names: use the bucket's own name"
    return None


def vpc_cidr_problem(text: str) -> str | None:
    """Why `text` is not a VPC's IPv4 CIDR block as CreateVpc takes it (an address, a prefix
    length of 16 to 28, no host bits, canonical form), or None."""
    try:
        if "/" not in text or not text.isascii():
            raise ValueError(text)
        net = ipaddress.IPv4Network(text, strict=False)
    except ValueError:
        return (
            "not an IPv4 CIDR: use the VPC's CidrBlock, e.g. 10.0.0.0/16 (aws ec2 "
            "describe-vpcs --vpc-ids VPC --query 'Vpcs[0].CidrBlock')"
        )
    if not VPC_PREFIX_MIN <= net.prefixlen <= VPC_PREFIX_MAX:
        return (
            f"a VPC's IPv4 block is /{VPC_PREFIX_MIN} to /{VPC_PREFIX_MAX}, not "
            f"/{net.prefixlen}: use the VPC's CidrBlock, e.g. 10.0.0.0/16"
        )
    if net.network_address != ipaddress.IPv4Address(text.partition("/")[0]):
        return f"has host bits set: use {net}"
    if str(net) != text:
        return f"not in the VPC's CidrBlock form: use {net}"
    return None


def _arn(text: str, service: str, regional: bool, form: str) -> tuple[str | None, str]:
    """(problem or None, resource) of an ARN of `service`: a known partition, a region when
    the service is regional (none for IAM), a 12-digit account."""
    m = _ARN.fullmatch(text)
    fix = f"use {form}"
    if m is None:
        return f"not an ARN: {fix}", ""
    if m["partition"] not in PARTITIONS:
        return f"{show(m['partition'])} is no AWS partition ({', '.join(PARTITIONS)}): {fix}", ""
    if m["service"] != service:
        return f"not an ARN of {service}: {fix}", ""
    if regional and region_problem(m["region"]) is not None:
        return f"{show(m['region'])} is not a region name: {fix}", ""
    if not regional and m["region"]:
        return f"a {service} ARN names no region: {fix}", ""
    if account_problem(m["account"]) is not None:
        return f"the account {show(m['account'])} is not 12 digits 0-9: {fix}", ""
    return None, m["resource"]


def _iam_name_problem(resource: str, kinds: tuple[str, ...], form: str) -> str | None:
    kind, slash, rest = resource.partition("/")
    if kind not in kinds or not slash:
        return f"not an IAM {' or '.join(kinds)} ARN: use {form}"
    path, _, name = ("/" + rest).rpartition("/")
    path += "/"
    if not _IAM_NAME.fullmatch(name):
        return (
            f"the {kind} name {name[:70]!r} is not 1-64 ASCII letters, digits or _+=,.@-: "
            f"use {form}"
        )
    if len(path) > MAX_IAM_PATH or not _IAM_PATH.fullmatch(path):
        return f"the {kind} path is not printable ASCII of at most {MAX_IAM_PATH}: use {form}"
    return None


ROLE_FORM = "arn:aws:iam::ACCOUNT:role/NAME (aws iam get-role --role-name NAME)"
PRINCIPAL_FORM = "arn:aws:iam::ACCOUNT:role/NAME or arn:aws:iam::ACCOUNT:user/NAME"


def iam_role_arn_problem(text: str) -> str | None:
    problem, resource = _arn(text, "iam", False, ROLE_FORM)
    return problem or _iam_name_problem(resource, ("role",), ROLE_FORM)


def iam_principal_arn_problem(text: str) -> str | None:
    """An IAM role's or user's ARN (what an EKS access entry takes)."""
    problem, resource = _arn(text, "iam", False, PRINCIPAL_FORM)
    return problem or _iam_name_problem(resource, ("role", "user"), PRINCIPAL_FORM)


SECRET_FORM = "arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-abcdef (describe-secret)"
KMS_KEY_FORM = "arn:aws:kms:REGION:ACCOUNT:key/KEY-ID (aws kms describe-key)"


def secret_arn_problem(text: str) -> str | None:
    problem, resource = _arn(text, "secretsmanager", True, SECRET_FORM)
    if problem is None and not _SECRET.fullmatch(resource):
        return f"not a secret: use {SECRET_FORM}"
    return problem


def kms_key_arn_problem(text: str) -> str | None:
    problem, resource = _arn(text, "kms", True, KMS_KEY_FORM)
    if problem is None and not _KMS_KEY.fullmatch(resource):
        return f"not a key (an id, not an alias): use {KMS_KEY_FORM}"
    return problem


def arg(rule: Rule) -> Callable[[str], str]:
    """An argparse `type=` reading one identifier through `rule`: the text, or
    ArgumentTypeError (`argument --bucket: VALUE: fix`, exit 2)."""

    def value(text: str) -> str:
        problem = rule(text)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{show(text)}: {problem}")
        return text

    value.__qualname__ = f"aws_names.arg({rule.__name__})"
    return value
