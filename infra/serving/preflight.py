"""The serving workload derived once per synth, before any construct exists.

`check_serving` validates the `serving:` section and derives the engine config and the
`WorkloadSpec`; `workload_preflight` puts a placeholder in every deploy-time value of the spec
(infra/serving/manifests/placeholders.py) and builds the manifests from it. The placement check
reads these manifests, the platform stack what they need, and the serving stack applies them with
the real values bound: nothing is resolved, derived or built a second time.

Before anything is returned the manifests pass the API server's own rules
(infra/compliance/api_server.py: quantities, names, labels, no Python value rendered into a
string, every object a pod names created by this app): a manifest the API server would refuse is
refused here, at synth, not after the platform stack has deployed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trnspec.boundary.problems import Problem

from infra.compliance.api_server import ObjectRef, api_server_findings
from infra.serving.manifests.calibration import service_account_name_for_calibration
from infra.serving.manifests.manifests import WorkloadManifests, build_manifests
from infra.serving.manifests.placeholders import BUCKET_PLACEHOLDER, placeholder_values
from infra.serving.manifests.pod import COMPONENTS, service_account_name
from infra.serving.manifests.spec import CheckedServing, ClusterWorkloadError, WorkloadSpec
from infra.settings.serving import ServingSettings

if TYPE_CHECKING:
    from trnspec.config.serving import ServingConfig


@dataclass(frozen=True)
class WorkloadPreflight:
    """One serving section, checked, with what it derives (read-only, computed once)."""

    settings: ServingSettings
    config: ServingConfig
    """The engine config the pods run: profile, bucket sources, overrides."""
    spec: WorkloadSpec
    """Derived from `config`, with placeholders for the bucket, image, region, VPC CIDR, Hugging
    Face token secret ARN and (when the key is on) API key ARN."""
    manifests: WorkloadManifests
    """Built from `spec`; the serving stack binds the real values into them."""


def workload_preflight(checked: CheckedServing) -> WorkloadPreflight:
    """Placeholders into the checked spec, then its manifests. `checked` must be derived with
    BUCKET_PLACEHOLDER as the bucket name, which its config YAML already carries."""
    if checked.spec.bucket_name != BUCKET_PLACEHOLDER:
        raise ValueError(
            f"bucket_name={checked.spec.bucket_name!r}: check_serving for a preflight takes "
            f"bucket_name={BUCKET_PLACEHOLDER!r}, the placeholder the stack binds"
        )
    placeholders = placeholder_values(checked.settings.api_key_enabled)
    spec = dataclasses.replace(checked.spec, **dataclasses.asdict(placeholders))
    manifests = build_manifests(spec, checked.settings)
    problems = api_server_problems(manifests, spec, checked.settings)
    if problems:
        raise ClusterWorkloadError(problems)
    return WorkloadPreflight(
        settings=checked.settings, config=checked.config, spec=spec, manifests=manifests
    )


def provided_objects(spec: WorkloadSpec, settings: ServingSettings) -> tuple[ObjectRef, ...]:
    """What the pods name that is not among the manifests: the service account of every
    component (the serving stack creates each, bound to its role: ServingStack._identities), the
    calibration Job's while `serving.calibration` is set (ServingStack.calibration_identity), and
    the StorageClass `serving.ebs_storage_class` (the platform's EBS CSI add-on, which every
    profile installs: infra/platform/addons/ebs_csi.py)."""
    accounts = tuple(
        ObjectRef("ServiceAccount", service_account_name(spec, c), spec.namespace)
        for c in COMPONENTS
    )
    if settings.calibration is not None:
        accounts += (
            ObjectRef("ServiceAccount", service_account_name_for_calibration(spec), spec.namespace),
        )
    return (*accounts, ObjectRef("StorageClass", settings.ebs_storage_class))


def api_server_problems(
    manifests: WorkloadManifests, spec: WorkloadSpec, settings: ServingSettings
) -> list[Problem]:
    """One problem per thing the API server would refuse in `manifests` (or a pod would wait on
    forever): the object and path, the value, the rule."""
    return api_server_findings(manifests.all(), provided_objects(spec, settings))
