"""Stand-ins for the values only the deployed stacks know (bucket name, image URI, region, VPC
CIDR, API key and Hugging Face token secret ARNs: CloudFormation tokens; the trnspec bundle's S3
URI and sha256: the serving stack's file asset), so that one synth
derives the workload and builds its manifests once, before any construct exists
(infra/serving/preflight.py), and the serving stack then binds the real values into them.

Each placeholder is a string nothing else produces, and the manifest builders copy these values
verbatim; tests/infra/serving/manifests/test_placeholders.py checks that binding gives exactly the
manifests built from the real values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

BUCKET_PLACEHOLDER = "trnspec-model-bucket-placeholder"
IMAGE_PLACEHOLDER = "trnspec-image-placeholder"
REGION_PLACEHOLDER = "trnspec-region-placeholder"
VPC_CIDR_PLACEHOLDER = "trnspec-vpc-cidr-placeholder"
API_KEY_SECRET_PLACEHOLDER = "trnspec-api-key-secret-arn-placeholder"
HF_TOKEN_SECRET_PLACEHOLDER = "trnspec-hf-token-secret-arn-placeholder"
BUNDLE_URI_PLACEHOLDER = "trnspec-bundle-uri-placeholder"
BUNDLE_SHA256_PLACEHOLDER = "trnspec-bundle-sha256-placeholder"

T = TypeVar("T")


@dataclass(frozen=True)
class DeployValues:
    """The real value of each placeholder (tokens, in a stack)."""

    bucket_name: str
    image_uri: str
    region: str
    vpc_cidr: str
    api_key_secret_arn: str | None
    """None when the API key is off: then no API key placeholder may be left to bind."""
    hf_token_secret_arn: str
    """The Hugging Face token's secret, which every serving stack creates (empty)."""
    bundle_uri: str
    """s3://bucket/key of the trnspec bundle (infra/serving/bundle/asset.py)."""
    bundle_sha256: str
    """Its sha256 (hex), which the init container checks."""

    def by_placeholder(self) -> Mapping[str, str | None]:
        return {
            BUCKET_PLACEHOLDER: self.bucket_name,
            IMAGE_PLACEHOLDER: self.image_uri,
            REGION_PLACEHOLDER: self.region,
            VPC_CIDR_PLACEHOLDER: self.vpc_cidr,
            API_KEY_SECRET_PLACEHOLDER: self.api_key_secret_arn,
            HF_TOKEN_SECRET_PLACEHOLDER: self.hf_token_secret_arn,
            BUNDLE_URI_PLACEHOLDER: self.bundle_uri,
            BUNDLE_SHA256_PLACEHOLDER: self.bundle_sha256,
        }


def placeholder_values(api_key_enabled: bool) -> DeployValues:
    """Every deploy-time value as its own placeholder, which binding leaves as it is: the values
    a preflight derives the workload with, and what an export keeps for whatever it is not
    given. The API key's is None when the key is off, so no API key placeholder is built.
    The field names are WorkloadSpec's for the same values."""
    return DeployValues(
        bucket_name=BUCKET_PLACEHOLDER,
        image_uri=IMAGE_PLACEHOLDER,
        region=REGION_PLACEHOLDER,
        vpc_cidr=VPC_CIDR_PLACEHOLDER,
        api_key_secret_arn=API_KEY_SECRET_PLACEHOLDER if api_key_enabled else None,
        hf_token_secret_arn=HF_TOKEN_SECRET_PLACEHOLDER,
        bundle_uri=BUNDLE_URI_PLACEHOLDER,
        bundle_sha256=BUNDLE_SHA256_PLACEHOLDER,
    )


def bind(value: T, values: DeployValues) -> T:
    """`value` (a manifest, a list of them, or a frozen dataclass such as WorkloadSpec or
    WorkloadManifests) with every placeholder in its strings replaced by its real value.

    Raises ValueError for a placeholder whose value is None (the API key's, with the key off).
    """
    return _bind(value, values.by_placeholder())


def _bind(value: Any, table: Mapping[str, str | None]) -> Any:
    if isinstance(value, str):
        for placeholder, real in table.items():
            if placeholder in value:
                if real is None:
                    raise ValueError(f"{placeholder} in {value[:80]!r}, with no value to bind")
                value = value.replace(placeholder, real)
        return value
    if isinstance(value, dict):
        return {_bind(k, table): _bind(v, table) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_bind(v, table) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _bind(getattr(value, f.name), table) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value
