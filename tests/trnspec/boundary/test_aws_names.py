"""trnspec.boundary.aws_names: each AWS identifier is accepted exactly when AWS would accept it.

The partitions and regions come from botocore's own partitions.json (the table the AWS SDKs
resolve endpoints with), so the rules are checked against AWS's list, not against a copy of it.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
from pathlib import Path

import botocore
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.boundary import aws_names
from trnspec.boundary.aws_names import (
    BUCKET_PREFIXES,
    BUCKET_SUFFIXES,
    MAX_IAM_PATH,
    PARTITIONS,
    VPC_PREFIX_MAX,
    VPC_PREFIX_MIN,
    account_problem,
    availability_zone_problem,
    bucket_problem,
    eks_cluster_name_problem,
    iam_principal_arn_problem,
    iam_role_arn_problem,
    kms_key_arn_problem,
    region_problem,
    secret_arn_problem,
    vpc_cidr_problem,
)

SETTINGS = settings(max_examples=100, deadline=None)

_BOTO_PARTITIONS = json.loads(
    (Path(botocore.__file__).parent / "data" / "partitions.json").read_text()
)["partitions"]
#: Every region AWS lists, each with its partition (the "-global" pseudo-regions are endpoint
#: names, not regions a stack is deployed to).
REGIONS = sorted(
    (region, p["id"])
    for p in _BOTO_PARTITIONS
    for region in p["regions"]
    if not region.endswith("-global")
)
#: Decimal digits and letters that are not ASCII: a Unicode `\d` or `\w` takes them.
UNICODE_DIGITS = st.characters(categories=["Nd"]).filter(lambda c: not c.isascii())
UNICODE_LETTERS = st.characters(categories=["Ll", "Lu"]).filter(lambda c: not c.isascii())
ACCOUNT = "123456789012"


def role_arn(name: str = "trnspec-kubectl", partition: str = "aws", account: str = ACCOUNT) -> str:
    return f"arn:{partition}:iam::{account}:role/{name}"


def test_the_partitions_are_the_ones_the_aws_sdk_knows() -> None:
    assert set(PARTITIONS) == {p["id"] for p in _BOTO_PARTITIONS}


@pytest.mark.parametrize(("region", "partition"), REGIONS)
def test_every_region_aws_lists_is_a_region_and_its_zones_are_zones(
    region: str, partition: str
) -> None:
    assert region_problem(region) is None
    assert availability_zone_problem(f"{region}a") is None
    secret = f"arn:{partition}:secretsmanager:{region}:{ACCOUNT}:secret:hf-token-AbCdEf"
    assert secret_arn_problem(secret) is None


_DNS_SUFFIX = {p["id"]: p["outputs"]["dnsSuffix"] for p in _BOTO_PARTITIONS}


@pytest.mark.parametrize(("region", "partition"), REGIONS)
def test_each_region_is_in_the_partition_aws_lists_it_in(region: str, partition: str) -> None:
    """Its ARNs' `arn:<partition>:` and its endpoints' DNS suffix, as botocore resolves them;
    the same for a region of that partition AWS has not opened yet (botocore's regionRegex)."""
    assert aws_names.partition_of(region) == aws_names.Partition(partition, _DNS_SUFFIX[partition])
    later = f"{region.rsplit('-', 1)[0]}-9"
    by_pattern = [p["id"] for p in _BOTO_PARTITIONS if re.match(p["regionRegex"], later)]
    assert [aws_names.partition_of(later).name] == by_pattern == [partition]


@SETTINGS
@given(st.sampled_from([r for r, _ in REGIONS]), st.data())
def test_a_region_with_any_character_changed_to_a_non_ascii_one_is_refused(
    region: str, data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(region) - 1))
    odd = data.draw(UNICODE_DIGITS if region[at].isdigit() else UNICODE_LETTERS)
    assert region_problem(region[:at] + odd + region[at + 1 :]) is not None


@pytest.mark.parametrize(
    "text", ["", "../x", "us-east-1/..", "US-EAST-1", "us-east-1\n", " us-east-1", "us_east_1"]
)
def test_text_that_is_no_region_is_refused(text: str) -> None:
    assert region_problem(text) is not None
    assert availability_zone_problem(f"{text}a") is not None


@pytest.mark.parametrize("text", ["us-east-2", "us-east-2A", "us-east-2ab", "us-east-2\na"])
def test_an_availability_zone_is_a_region_and_one_lowercase_letter(text: str) -> None:
    assert availability_zone_problem(text) is not None


@SETTINGS
@given(st.from_regex(r"[0-9]{12}", fullmatch=True))
def test_twelve_ascii_digits_are_an_account(account: str) -> None:
    assert account_problem(account) is None
    assert iam_role_arn_problem(role_arn(account=account)) is None


@SETTINGS
@given(st.integers(0, 11), UNICODE_DIGITS)
def test_an_account_with_a_non_ascii_digit_is_refused_everywhere(at: int, digit: str) -> None:
    account = ACCOUNT[:at] + digit + ACCOUNT[at + 1 :]
    assert account_problem(account) is not None
    assert iam_role_arn_problem(role_arn(account=account)) is not None
    assert iam_principal_arn_problem(role_arn(account=account)) is not None


@pytest.mark.parametrize("account", ["12345678901", "1234567890123", "", "12345678901x"])
def test_an_account_is_exactly_twelve_digits(account: str) -> None:
    assert account_problem(account) is not None
    assert iam_role_arn_problem(role_arn(account=account)) is not None


@pytest.mark.parametrize("partition", PARTITIONS)
def test_a_role_in_every_partition_is_accepted(partition: str) -> None:
    assert iam_role_arn_problem(role_arn(partition=partition)) is None


@SETTINGS
@given(
    st.one_of(
        st.from_regex(r"[a-z-]{1,12}", fullmatch=True),
        st.from_regex(r"aws[a-z-]{1,9}", fullmatch=True),
        st.sampled_from(["aws-made-up", "awsfoo", "aws-iso-z", "aws-cn-x", "AWS", "aws\u0131"]),
    ).filter(lambda p: p not in PARTITIONS)
)
def test_a_made_up_partition_is_refused(partition: str) -> None:
    problem = iam_role_arn_problem(role_arn(partition=partition))
    assert problem is not None and "partition" in problem


@SETTINGS
@given(
    st.from_regex(r"[A-Za-z0-9_+=,.@-]{1,64}", fullmatch=True),
    st.lists(st.from_regex(r"[!-.0-~]{1,20}", fullmatch=True), max_size=4),
)
def test_iam_names_and_paths_of_the_iam_charset_are_accepted(name: str, path: list[str]) -> None:
    resource = "/".join([*path, name])
    assert iam_role_arn_problem(role_arn(resource)) is None
    assert iam_principal_arn_problem(f"arn:aws:iam::{ACCOUNT}:user/{resource}") is None


@SETTINGS
@given(st.integers(0, 63), UNICODE_LETTERS)
def test_a_role_name_with_a_non_ascii_letter_is_refused(at: int, letter: str) -> None:
    name = "r" * 64
    assert iam_role_arn_problem(role_arn(name[:at] + letter + name[at + 1 :])) is not None


@pytest.mark.parametrize(
    "name",
    [
        "r" * 65,  # names are at most 64
        "",
        "a b",
        "a/",  # a path with no name
        "/a",  # the path "//" (IAM: "/" alone, or "/" printable ASCII "/")
        "a\x7fb/c",  # DEL is not printable
        "p" * (MAX_IAM_PATH - 1) + "/r",  # the path /p.../ is MAX_IAM_PATH + 1
    ],
)
def test_role_names_and_paths_iam_refuses_are_refused(name: str) -> None:
    assert iam_role_arn_problem(role_arn(name)) is not None


def test_the_longest_role_name_and_path_iam_takes_are_accepted() -> None:
    assert iam_role_arn_problem(role_arn("p" * (MAX_IAM_PATH - 2) + "/" + "r" * 64)) is None


@pytest.mark.parametrize(
    "arn",
    [
        f"arn:aws:iam::{ACCOUNT}:user/me",  # a user is no role
        f"arn:aws:iam:us-east-1:{ACCOUNT}:role/r",  # IAM is global
        f"arn:aws:sts::{ACCOUNT}:assumed-role/r/session",
        f"arn:aws:iam::{ACCOUNT}:policy/r",
        f"arn:aws:iam::{ACCOUNT}:role/r\n",
        "role/r",
    ],
)
def test_what_is_not_an_iam_role_arn_is_refused(arn: str) -> None:
    assert iam_role_arn_problem(arn) is not None


@pytest.mark.parametrize(
    ("arn", "ok"),
    [
        (f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab", True),
        (f"arn:aws:kms:us-east-1:{ACCOUNT}:key/mrk-1234abcd12ab34cd56ef1234567890ab", True),
        (f"arn:aws:kms:us-east-1:{ACCOUNT}:alias/models", False),  # an alias is not the key
        (f"arn:aws:kms::{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab", False),
        (f"arn:aws:s3:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab", False),
    ],
)
def test_a_kms_key_arn_names_a_region_an_account_and_a_key_id(arn: str, ok: bool) -> None:
    assert (kms_key_arn_problem(arn) is None) is ok


@pytest.mark.parametrize(
    "arn",
    [
        f"arn:aws:secretsmanager::{ACCOUNT}:secret:x-AbCdEf",
        f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:sp ace",
        f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:parameter/x",
        f"arn:aws-x:secretsmanager:us-east-1:{ACCOUNT}:secret:x",
    ],
)
def test_what_is_not_a_secret_arn_is_refused(arn: str) -> None:
    assert secret_arn_problem(arn) is not None


@SETTINGS
@given(st.from_regex(r"[a-z0-9]([a-z0-9-]{1,61})[a-z0-9]", fullmatch=True))
def test_bucket_names_of_lowercase_letters_digits_and_hyphens_are_accepted(name: str) -> None:
    reserved = name.startswith(BUCKET_PREFIXES) or name.endswith(BUCKET_SUFFIXES)
    assert (bucket_problem(name) is None) is not reserved


@pytest.mark.parametrize(
    "name",
    [
        "ab",
        "b" * 64,
        "../models",
        "a..b",
        "a.-b",
        "a-.b",
        "-ab",
        "ab-",
        "Models",
        "my_bucket",
        "192.168.5.4",
        "bücket",
        "bucket\n",
        # reserved by S3 (general purpose bucket naming rules), written out, not imported
        *(f"{prefix}models" for prefix in ("xn--", "sthree-", "amzn-s3-demo-")),
        *(f"models{s}" for s in ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")),
    ],
)
def test_bucket_names_s3_refuses_are_refused(name: str) -> None:
    assert bucket_problem(name) is not None


@pytest.mark.parametrize("name", ["abc", "b" * 63, "my.models.1", "192.168.5.4.models"])
def test_bucket_names_at_the_edges_are_accepted(name: str) -> None:
    assert bucket_problem(name) is None


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(0, 32))
def test_a_vpc_block_is_accepted_exactly_when_it_is_slash_16_to_28_in_canonical_form(
    address: int, prefix: int
) -> None:
    net = ipaddress.IPv4Network((address, prefix), strict=False)
    assert (vpc_cidr_problem(str(net)) is None) is (VPC_PREFIX_MIN <= prefix <= VPC_PREFIX_MAX)
    if net.network_address != ipaddress.IPv4Address(address):
        assert vpc_cidr_problem(f"{ipaddress.IPv4Address(address)}/{prefix}") is not None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0.0.0.0/0", "/16 to /28, not /0"),
        ("10.0.0.1/32", "/16 to /28, not /32"),
        ("10.0.0.0/15", "/16 to /28, not /15"),
        ("10.0.0.0/29", "/16 to /28, not /29"),
        ("10.0.0.1/16", "has host bits set: use 10.0.0.0/16"),
        ("10.0.0.0/255.255.0.0", "use 10.0.0.0/16"),
        ("\u0661\u0660.0.0.0/16", "not an IPv4 CIDR"),
        ("10.0.0.0/\u0661\u0666", "not an IPv4 CIDR"),
        ("10.0.0.0", "not an IPv4 CIDR"),
    ],
)
def test_a_vpc_block_aws_refuses_is_named_with_its_fix(text: str, says: str) -> None:
    problem = vpc_cidr_problem(text)
    assert problem is not None and says in problem


@pytest.mark.parametrize(
    ("name", "ok"),
    [("prod-trn2", True), ("a" * 100, True), ("a" * 101, False), ("-prod", False), ("prød", False)],
)
def test_an_eks_cluster_name_is_ascii_letters_digits_hyphens_underscores(
    name: str, ok: bool
) -> None:
    assert (eks_cluster_name_problem(name) is None) is ok


def test_a_flag_read_through_a_rule_returns_the_text_or_names_the_value_and_the_fix() -> None:
    read = aws_names.arg(bucket_problem)
    assert read("trnspec-models") == "trnspec-models"
    with pytest.raises(argparse.ArgumentTypeError) as err:
        read("../etc")
    assert str(err.value) == f"../etc: {bucket_problem('../etc')}"
    with pytest.raises(argparse.ArgumentTypeError) as err:
        read("x" * (1 << 20))
    assert len(str(err.value)) < 400  # the value is shown bounded
