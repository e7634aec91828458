"""`cluster.existing`: the settings of an EKS cluster made elsewhere, each bad value one line
naming the field, the value and the fix."""

from __future__ import annotations

import pytest

from infra.settings import SettingsError, load_settings

GOOD = {"cluster.existing.name": "prod-trn2", "cluster.existing.vpc_cidr": "10.20.0.0/16"}


def test_the_default_deploys_the_platforms_own_cluster() -> None:
    assert load_settings("default").cluster.existing is None


def test_an_existing_cluster_is_read_with_its_kubectl_role_optional() -> None:
    existing = load_settings("default", GOOD).cluster.existing
    assert existing is not None
    assert (existing.name, existing.vpc_cidr, existing.kubectl_role_arn) == (
        "prod-trn2",
        "10.20.0.0/16",
        None,
    )


_BAD = [
    ({"cluster.existing.name": "-prod"}, "cluster.existing.name=-prod: not an EKS cluster name"),
    ({"cluster.existing.name": "a" * 101}, "aaaa: not an EKS cluster name"),
    (
        {"cluster.existing.vpc_cidr": "10.20.0.1/16"},
        "cluster.existing.vpc_cidr=10.20.0.1/16: has host bits set: use 10.20.0.0/16",
    ),
    (
        {"cluster.existing.vpc_cidr": "10.20.0.0/255.255.0.0"},
        "vpc_cidr=10.20.0.0/255.255.0.0: not in the VPC's CidrBlock form: use 10.20.0.0/16",
    ),
    ({"cluster.existing.vpc_cidr": "10.20.0.0"}, "vpc_cidr=10.20.0.0: not an IPv4 CIDR: use"),
    ({"cluster.existing.vpc_cidr": "vpc-0abc"}, "vpc_cidr=vpc-0abc: not an IPv4 CIDR: use"),
    (
        {"cluster.existing.kubectl_role_arn": "arn:aws:iam::123456789012:user/me"},
        "kubectl_role_arn=arn:aws:iam::123456789012:user/me: not an IAM role ARN",
    ),
    ({"cluster.existing.vpc_cidr": None}, "cluster.existing.vpc_cidr: required"),
    ({"cluster.existing.token": "x"}, "allowed: kubectl_role_arn, name, vpc_cidr"),
]


@pytest.mark.parametrize(("change", "says"), _BAD, ids=[str(b[0]) for b in _BAD])
def test_a_bad_existing_cluster_value_is_one_line_naming_field_value_and_fix(
    change: dict[str, object], says: str
) -> None:
    overrides = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(SettingsError) as err:
        load_settings("default", overrides)
    (problem,) = err.value.problems
    assert says in str(problem)
    assert "\n" not in str(problem)


def test_a_value_where_the_section_belongs_says_how_to_give_the_section() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"cluster.existing": "prod"})
    (problem,) = err.value.problems
    assert str(problem).startswith("cluster.existing=prod: a section, not a value:")
    assert "-c cluster.existing.name=NAME" in str(problem)
