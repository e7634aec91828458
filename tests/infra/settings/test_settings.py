"""Deployment settings: profiles, `-c` overrides, and one message naming every bad field."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk import aws_eks_v2 as eks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.settings import (
    DEFAULT_KUBERNETES_VERSION,
    SUPPORTED_KUBERNETES_VERSIONS,
    DeploymentSettings,
    SettingsError,
    apply_overrides,
    list_profiles,
    load_settings,
    parse_settings,
    settings_overrides,
)


def test_default_profile_is_one_on_demand_trn2_pool_resting_at_zero() -> None:
    s = load_settings("default")
    assert s.autoscaler == "cluster-autoscaler"
    assert s.vpc.vpc_id is None
    assert s.kubernetes_version == DEFAULT_KUBERNETES_VERSION == "1.36"
    (pool,) = s.trn2_pools
    assert (pool.instance_type, pool.min_size, pool.desired_size, pool.max_size) == (
        "trn2.48xlarge",
        0,
        0,
        2,
    )
    assert pool.capacity.kind == "on-demand"
    assert s.account is None and s.region is None  # env-agnostic: no lookups at synth


@pytest.mark.parametrize("profile", ["default", "capacity-block", "karpenter"])
def test_every_shipped_profile_loads(profile: str) -> None:
    assert profile in list_profiles()
    assert isinstance(load_settings(profile), DeploymentSettings)


def test_supported_kubernetes_versions_track_the_cdk_library() -> None:
    minors = sorted(int(n[3:]) for n in dir(eks.KubernetesVersion) if re.fullmatch(r"V1_\d+", n))
    newest = f"1.{minors[-1]}"
    assert newest == DEFAULT_KUBERNETES_VERSION, "a newer KubernetesVersion exists: add it"
    for v in SUPPORTED_KUBERNETES_VERSIONS:
        assert hasattr(eks.KubernetesVersion, "V" + v.replace(".", "_"))
        assert tuple(map(int, v.split("."))) >= (1, 35)


@pytest.mark.parametrize(
    ("overrides", "check"),
    [
        ({"trn2_pools.0.max_size": "4"}, lambda s: s.trn2_pools[0].max_size == 4),
        ({"trn2_pools.trn2.max_size": "5"}, lambda s: s.trn2_pools[0].max_size == 5),
        ({"kubernetes_version": "1.35"}, lambda s: s.kubernetes_version == "1.35"),
        ({"endpoint_access": "private"}, lambda s: s.endpoint_access == "private"),
        ({"vpc.nat_gateways": "2"}, lambda s: s.vpc.nat_gateways == 2),
        ({"trn2_pools.0.lnc": "1"}, lambda s: s.trn2_pools[0].lnc == 1),
        ({"trn2_pools.0.efa": "false"}, lambda s: s.trn2_pools[0].efa is False),
        ({"neuron.monitor": "false"}, lambda s: s.neuron.monitor is False),
        ({"tags.team": "ml"}, lambda s: s.tags["team"] == "ml"),
    ],
)
def test_context_overrides_set_dotted_fields(overrides: dict[str, str], check: Any) -> None:
    assert check(load_settings("default", overrides))


def test_cdk_own_context_keys_are_not_settings_overrides() -> None:
    context = {
        "profile": "default",
        "@aws-cdk/aws-iam:minimizePolicies": True,
        "aws:cdk:enable-path-metadata": True,
        "availability-zones:account=1:region=us-east-2": ["a"],
        "trn2_pools.0.max_size": "3",
    }
    assert settings_overrides(context) == {"trn2_pools.0.max_size": "3"}


_BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"kubernetes_version": "1.33"}, "kubernetes_version", "1.35, 1.36"),
    ({"kubernetes_version": "1.30"}, "kubernetes_version", "must be one of"),
    ({"trn2_pools.0.instance_type": "p5.48xlarge"}, "trn2_pools.0.instance_type", "trn2.3xlarge"),
    ({"trn2_pools.0.min_size": "-1"}, "trn2_pools.0.min_size", "greater than or equal to 0"),
    ({"trn2_pools.0.min_size": "3"}, "trn2_pools.0", "min_size <= desired_size <= max_size"),
    ({"trn2_pools.0.lnc": "4"}, "trn2_pools.0.lnc", "1 or 2"),
    ({"trn2_pools.0.capacity.kind": "spot"}, "trn2_pools.0.capacity.kind", "capacity-block"),
    (
        {"trn2_pools.0.capacity.kind": "capacity-block"},
        "trn2_pools.0.capacity",
        "needs reservation_id",
    ),
    (
        {"trn2_pools.0.capacity.reservation_id": "cr-0123456789abcdef0"},
        "trn2_pools.0.capacity",
        "only for kind",
    ),
    (
        {
            "trn2_pools.0.capacity.kind": "reservation",
            "trn2_pools.0.capacity.reservation_id": "cr-0123456789abcdef0",
        },
        "trn2_pools.0.availability_zone",
        "AZ-bound",
    ),
    ({"trn2_pools.0.availability_zone": "us-east-2a"}, "region", "pins an AZ"),
    ({"trn2_pools.0.efa": "true"}, "trn2_pools.0.efa", "placement group"),
    (
        {"trn2_pools.0.efa": "true", "trn2_pools.0.instance_type": "trn2.3xlarge"},
        "trn2_pools.0.efa",
        "trn2.3xlarge has no EFA device: set trn2_pools.0.efa=false",
    ),
    (
        {"trn2_pools.0.capacity.placement_group": "pg"},
        "trn2_pools.0.capacity",
        "kind on-demand takes none",
    ),
    ({"endpoint_access": "public"}, "endpoint_access", "public-and-private"),
    ({"autoscaler": "keda"}, "autoscaler", "karpenter"),
    ({"vpc.vpc_id": "vpc-0123456789abcdef0"}, "account/region", "needs both"),
    ({"vpc.cidr": "10.0.0.0/8"}, "vpc.cidr", "/16 to /28, not /8"),
    ({"vpc.cidr": "10.0.0.0/26"}, "vpc.cidr", "a new VPC here is /16 to /24"),
    ({"vpc.foo": "1"}, "vpc.foo", "allowed: availability_zones, cidr, nat_gateways, vpc_id"),
    ({"bogus": "1"}, "bogus", "allowed: account"),
    ({"trn2_pools.7.max_size": "1"}, "trn2_pools.7.max_size", "no item '7'"),
    ({"admin_principal_arns": "[nope]"}, "admin_principal_arns", "'nope': not an ARN: use arn:"),
    (
        {"admin_principal_arns": "[arn:aws:sts::123456789012:assumed-role/Admin/me]"},
        "admin_principal_arns",
        "pass the role, ['arn:aws:iam::123456789012:role/Admin']",
    ),
    ({"karpenter_ami_alias": "al2023@v2025"}, "karpenter_ami_alias", "pattern"),
]


@pytest.mark.parametrize(("overrides", "field", "fix"), _BAD, ids=[b[1] for b in _BAD])
def test_config_rejects_bad_value_naming_field_and_fix(
    overrides: dict[str, Any], field: str, fix: str
) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", overrides)
    fields = [p.field for p in err.value.problems]
    assert field in fields, str(err.value)
    assert fix in str(err.value)


def test_config_reports_every_bad_field_in_one_message() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(
            "default",
            {
                "kubernetes_version": "1.29",
                "trn2_pools.0.instance_type": "inf2.48xlarge",
                "trn2_pools.0.lnc": "3",
                "endpoint_access": "nowhere",
            },
        )
    message = str(err.value)
    for field in ("kubernetes_version", "trn2_pools.0.instance_type", "trn2_pools.0.lnc"):
        assert field in message
    assert "endpoint_access=nowhere" in message
    assert len(err.value.problems) == 4


def test_karpenter_rejects_fixed_node_counts() -> None:
    with pytest.raises(SettingsError, match="Karpenter launches nodes for pending pods"):
        load_settings("karpenter", {"trn2_pools.0.min_size": "1", "trn2_pools.0.desired_size": "1"})


def test_unknown_profile_lists_the_shipped_ones() -> None:
    with pytest.raises(SettingsError, match="capacity-block, default, first-node, karpenter"):
        load_settings("nope")


def test_overrides_do_not_mutate_the_profile_data() -> None:
    data = {"trn2_pools": [{"name": "a"}]}
    apply_overrides(data, {"trn2_pools.0.max_size": "3"})
    assert data == {"trn2_pools": [{"name": "a"}]}


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
_FIELDS = sorted(DeploymentSettings.model_fields)
_POOL_FIELDS = ["name", "instance_type", "min_size", "max_size", "lnc", "capacity", "efa"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    top=st.dictionaries(st.sampled_from([*_FIELDS, "unknown"]), _JSONISH, max_size=4),
    pool=st.dictionaries(st.sampled_from([*_POOL_FIELDS, "zzz"]), _JSONISH, max_size=4),
)
def test_any_invalid_config_gives_field_named_error_never_a_traceback(
    top: dict[str, Any], pool: dict[str, Any]
) -> None:
    data = {**top, "trn2_pools": [{"name": "p", **pool}]}
    try:
        parse_settings(data)
    except SettingsError as err:
        assert err.problems
        for problem in err.problems:
            assert problem.field and problem.fix
            assert problem.field.split(".")[0] in {*_FIELDS, "unknown", "(root)", "account/region"}
            assert str(problem).startswith((f"{problem.field}=", f"{problem.field}:"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.text(alphabet="abcdefgh_.0123", min_size=1, max_size=20),
    value=st.text(max_size=10),
)
def test_any_override_key_gives_a_settings_error_or_settings(key: str, value: str) -> None:
    try:
        load_settings("default", {key: value})
    except SettingsError as err:
        assert err.problems


def test_platform_doc_lists_every_setting() -> None:
    from pathlib import Path

    from infra.settings import (
        AddonSettings,
        CapacitySettings,
        ClusterSettings,
        ExistingClusterSettings,
        NeuronSettings,
        SystemNodeGroupSettings,
        Trn2PoolSettings,
        VpcSettings,
    )

    doc = (Path(__file__).parents[3] / "docs" / "platform.md").read_text()
    models = (
        DeploymentSettings,
        VpcSettings,
        Trn2PoolSettings,
        CapacitySettings,
        SystemNodeGroupSettings,
        NeuronSettings,
        AddonSettings,
        ClusterSettings,
        ExistingClusterSettings,
    )
    missing = [
        f"{m.__name__}.{f}"
        for m in models
        for f in m.model_fields
        if f"`{f}`" not in doc and f"`capacity.{f}`" not in doc
    ]
    assert missing == []


# --- one override grammar with the engine's --set; bounded input; AWS tag limits ---------------


def test_context_values_follow_the_engines_set_rule() -> None:
    from trnspec.config.serving import apply_overrides as engine_overrides
    from trnspec.config.serving import load_profile

    s = load_settings(
        "default", {"tags.release": "0123", "tags.version": "1.30", "account": "012345678901"}
    )
    assert (s.tags["release"], s.tags["version"], s.account) == ("0123", "1.30", "012345678901")
    cfg = engine_overrides(load_profile("local-tiny"), ["target.revision=0123"])
    assert cfg.target.revision == s.tags["release"]


def test_kubernetes_version_is_read_as_written() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"kubernetes_version": "1.30"})
    assert "kubernetes_version=1.30:" in str(err.value)  # not the float 1.3
    assert load_settings("default", {"kubernetes_version": "1.35"}).kubernetes_version == "1.35"


@pytest.mark.parametrize(
    "key",
    ["trn2_pools.0.max_size", "vpc.nat_gateways", "system_nodes.disk_gib", "trn2_pools.0.lnc"],
)
def test_booleans_are_refused_for_integer_settings(key: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {key: "true"})
    assert key in [p.field for p in err.value.problems]


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"tags.team": "x" * 257}, "values of 0-256"),
        ({f"tags.{'k' * 129}": "v"}, "keys of 1-128"),
        ({"tags.aws:owner": "me"}, "reserved aws: prefix"),
        ({"tags.team": "semi;colon"}, "letters, digits, spaces"),
    ],
)
def test_tags_are_held_to_aws_limits(overrides: dict[str, str], says: str) -> None:
    with pytest.raises(SettingsError, match=says) as err:
        load_settings("default", overrides)
    assert [p.field for p in err.value.problems] == ["tags"]
    assert len(str(err.value)) < 600  # the 257-character value is not echoed whole


def test_tags_at_the_aws_limits_pass() -> None:
    s = load_settings("default", {f"tags.{'k' * 128}": "v" * 256})
    assert s.tags["k" * 128] == "v" * 256


@pytest.mark.parametrize(
    "override", [{"cluster_name": "a\x1bb"}, {"tags.team": "a\x07b"}, {"trn2_pools.0.name": "\x00"}]
)
def test_control_characters_are_refused_in_names(override: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        load_settings("default", override)


def test_a_hostile_profile_file_is_one_short_problem(tmp_path: Any) -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev, name = chr(96 + i), chr(97 + i)
        levels.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    (tmp_path / "bomb.yaml").write_text("\n".join(levels))
    (tmp_path / "latin1.yaml").write_bytes("cluster_name: caf\xe9\n".encode("latin-1"))
    (tmp_path / "keys.yaml").write_text("".join(f"k{i}: {i}\n" for i in range(3000)))
    for profile, says in (("bomb", "aliases"), ("latin1", "not UTF-8"), ("keys", "more problems")):
        with pytest.raises(SettingsError, match=says) as err:
            load_settings(profile, config_dir=tmp_path)
        assert len(str(err.value).splitlines()) <= 22


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    items=st.dictionaries(
        st.sampled_from(
            [
                "region",
                "account",
                "cluster_name",
                "kubernetes_version",
                "tags.t",
                "vpc.nat_gateways",
                "trn2_pools.0.max_size",
                "trn2_pools.0.instance_type",
                "trn2_pools.0.efa",
                "trn2_pools.0.capacity.kind",
            ]
        ),
        st.one_of(
            st.sampled_from(["true", "0123", "1.30", "~", "[a]", "{a: 1}", "yes", ""]),
            st.text(max_size=12),
        ),
        max_size=4,
    )
)
def test_any_context_text_gives_settings_or_a_field_named_error(items: dict[str, str]) -> None:
    try:
        s = load_settings("default", items)
    except SettingsError as err:
        assert err.problems
        for problem in err.problems:
            assert problem.field.split(".")[0] in {*_FIELDS, "region", "account/region"}
            assert problem.fix and "\n" not in str(problem)
    else:
        if "tags.t" in items:
            assert isinstance(s.tags["t"], str)


def test_karpenter_ami_is_pinned_by_default_and_overridable() -> None:
    assert DeploymentSettings().karpenter_ami_alias == "al2023@v20260714"
    s = load_settings("karpenter", {"karpenter_ami_alias": "al2023@latest"})
    assert s.karpenter_ami_alias == "al2023@latest"
