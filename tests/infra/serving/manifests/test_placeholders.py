"""Placeholders and infra.serving.preflight: the workload derived once with placeholders, then
bound to the stack's values, is exactly the workload derived from those values."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from workload_cases import IMAGE, TRN2_PROFILES, VPC_CIDR

from infra.serving.manifests.manifests import build_manifests
from infra.serving.manifests.placeholders import (
    API_KEY_SECRET_PLACEHOLDER,
    BUCKET_PLACEHOLDER,
    BUNDLE_SHA256_PLACEHOLDER,
    BUNDLE_URI_PLACEHOLDER,
    HF_TOKEN_SECRET_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    REGION_PLACEHOLDER,
    VPC_CIDR_PLACEHOLDER,
    DeployValues,
    bind,
    placeholder_values,
)
from infra.serving.manifests.spec import WorkloadSpec, check_serving, derive_workload
from infra.serving.preflight import WorkloadPreflight, workload_preflight

PLACEHOLDERS = (
    BUCKET_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    REGION_PLACEHOLDER,
    VPC_CIDR_PLACEHOLDER,
    API_KEY_SECRET_PLACEHOLDER,
    HF_TOKEN_SECRET_PLACEHOLDER,
    BUNDLE_URI_PLACEHOLDER,
    BUNDLE_SHA256_PLACEHOLDER,
)
VALUES = DeployValues(
    bucket_name="trnspec-models-real",
    image_uri=IMAGE,
    region="us-east-2",
    vpc_cidr=VPC_CIDR,
    api_key_secret_arn="arn:aws:secretsmanager:us-east-2:123456789012:secret:trnspec-key",
    hf_token_secret_arn="arn:aws:secretsmanager:us-east-2:123456789012:secret:trnspec-hf",
    bundle_uri="s3://cdk-hnb659fds-assets-123456789012-us-east-2/0123abcd.zip",
    bundle_sha256="ab" * 32,
)
SECTIONS: list[dict[str, Any]] = [
    *({"profile": p} for p in TRN2_PROFILES),
    {"internal_nlb": True},
    {"api_key": "on"},
    {"internal_nlb": True, "api_key": "off", "nlb_source_cidrs": ["10.9.0.0/16"]},
    {"prometheus": "existing", "prometheus_url": "http://prometheus.monitoring.svc:9090"},
    {"weights_storage": "ebs"},
]


def _preflight(section: dict[str, Any]) -> WorkloadPreflight:
    checked = check_serving(section, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    return workload_preflight(checked)


def _spec_from_real_values(preflight: WorkloadPreflight) -> WorkloadSpec:
    """The spec derived directly with the stack's values (the bucket, a token in a stack, is
    only known after the config is hashed, so the YAML names it by substitution)."""
    spec = derive_workload(
        preflight.config,
        preflight.settings,
        image_uri=VALUES.image_uri,
        bucket_name=BUCKET_PLACEHOLDER,
        region=VALUES.region,
        vpc_cidr=VALUES.vpc_cidr,
    )
    enabled = preflight.settings.api_key_enabled
    return dataclasses.replace(
        spec,
        config_yaml=spec.config_yaml.replace(BUCKET_PLACEHOLDER, VALUES.bucket_name),
        bucket_name=VALUES.bucket_name,
        api_key_secret_arn=VALUES.api_key_secret_arn if enabled else None,
        hf_token_secret_arn=VALUES.hf_token_secret_arn,
        bundle_uri=VALUES.bundle_uri,
        bundle_sha256=VALUES.bundle_sha256,
    )


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: ",".join(f"{k}={s[k]}" for k in s))
def test_binding_the_preflight_gives_the_workload_built_from_the_real_values(
    section: dict[str, Any],
) -> None:
    preflight = _preflight(section)
    direct = _spec_from_real_values(preflight)
    assert bind(preflight.spec, VALUES) == direct
    assert bind(preflight.manifests, VALUES) == build_manifests(direct, preflight.settings)


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: ",".join(f"{k}={s[k]}" for k in s))
def test_no_placeholder_is_left_after_binding(section: dict[str, Any]) -> None:
    text = json.dumps([m for m in bind(_preflight(section).manifests, VALUES).all()])
    assert [p for p in PLACEHOLDERS if p in text] == []


def test_the_preflight_marks_every_deploy_time_value_and_keeps_the_config_hash() -> None:
    preflight = _preflight({"api_key": "on"})
    spec = preflight.spec
    assert (spec.bucket_name, spec.image_uri, spec.region, spec.vpc_cidr) == (
        BUCKET_PLACEHOLDER,
        IMAGE_PLACEHOLDER,
        REGION_PLACEHOLDER,
        VPC_CIDR_PLACEHOLDER,
    )
    assert spec.api_key_secret_arn == API_KEY_SECRET_PLACEHOLDER
    assert spec.hf_token_secret_arn == HF_TOKEN_SECRET_PLACEHOLDER
    assert (spec.bundle_uri, spec.bundle_sha256) == (
        BUNDLE_URI_PLACEHOLDER,
        BUNDLE_SHA256_PLACEHOLDER,
    )
    assert bind(spec, VALUES).config_sha256 == spec.config_sha256


@pytest.mark.parametrize("api_key_enabled", [True, False])
def test_placeholder_values_name_each_value_by_its_own_placeholder(api_key_enabled: bool) -> None:
    """Each field holds its own placeholder (binding them is the identity) and the API key's is
    None when the key is off; the export and the preflight both start from these."""
    values = placeholder_values(api_key_enabled)
    text = " ".join(PLACEHOLDERS)
    if api_key_enabled:
        assert bind(text, values) == text
        assert values.api_key_secret_arn == API_KEY_SECRET_PLACEHOLDER
    else:
        assert values.api_key_secret_arn is None
        with pytest.raises(ValueError, match=API_KEY_SECRET_PLACEHOLDER):
            bind(text, values)
    rest = text.replace(API_KEY_SECRET_PLACEHOLDER, "")
    assert bind(rest, values) == rest
    assert set(dataclasses.astuple(values)) - {None} == set(PLACEHOLDERS) - (
        set() if api_key_enabled else {API_KEY_SECRET_PLACEHOLDER}
    )


def test_an_api_key_placeholder_without_a_value_is_refused() -> None:
    preflight = _preflight({"api_key": "on"})
    with pytest.raises(ValueError, match=API_KEY_SECRET_PLACEHOLDER):
        bind(preflight.manifests, dataclasses.replace(VALUES, api_key_secret_arn=None))


def test_a_spec_checked_with_another_bucket_name_is_refused() -> None:
    checked = check_serving({}, bucket_name="some-bucket", image_uri=IMAGE_PLACEHOLDER)
    with pytest.raises(ValueError, match="bucket_name='some-bucket'"):
        workload_preflight(checked)
