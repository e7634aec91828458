"""Every add-on pin supports the cluster's Kubernetes version, or synth says which one does not
(issue 17). Pure: settings and the pins table, no synth."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from infra.app.composition import check_addons
from infra.platform.addons.addon import workload_needs
from infra.platform.addons.neuron.install import chart_values
from infra.platform.addons.pins import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_DRA_RBAC_SINCE,
    KARPENTER_CHART,
    KEDA_CHART,
    PINS,
    ChartPin,
    ImagePin,
    KubeRange,
    compatibility_problems,
    markdown_table,
)
from infra.platform.addons.registry import installed_addons
from infra.settings import (
    SUPPORTED_KUBERNETES_VERSIONS,
    NeuronSettings,
    SettingsError,
    list_profiles,
    load_settings,
)
from infra.settings.serving import load_serving_settings

DOC = Path(__file__).resolve().parents[4] / "docs" / "platform.md"
#: KEDA 2.20's row of KEDA's compatibility matrix: the pin this project had before 1.36.
KEDA_2_20 = dataclasses.replace(KEDA_CHART, version="2.20.2", kubernetes=KubeRange("1.33", "1.35"))
VARIANTS = ({}, {"serving.internal_nlb": "true", "serving.weights_storage": "ebs"})


@pytest.mark.parametrize("profile", list_profiles())
@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
@pytest.mark.parametrize("variant", VARIANTS, ids=("as-shipped", "nlb-ebs"))
def test_every_shipped_profile_fits_every_pin_at_every_supported_version(
    profile: str, version: str, variant: dict[str, str]
) -> None:
    settings = load_settings(profile, {"kubernetes_version": version, **variant})
    needs = workload_needs(load_serving_settings(settings.serving))
    addons = installed_addons(settings, needs)
    assert compatibility_problems(version, addons) == []
    check_addons(settings, needs)  # does not raise


def test_a_pin_outside_the_cluster_version_is_refused_in_one_line_naming_the_add_on() -> None:
    settings = load_settings("default", {"kubernetes_version": "1.36"})
    needs = workload_needs(load_serving_settings(settings.serving))
    with pytest.raises(SettingsError) as err:
        check_addons(settings, needs, pins=(KEDA_2_20, *PINS[1:]))
    (problem,) = err.value.problems
    line = str(problem)
    assert "\n" not in line
    assert line.startswith("kubernetes_version=1.36: add-on keda: chart keda 2.20.2")
    assert "1.33 to 1.35" in line


def test_pins_of_add_ons_that_are_not_installed_are_not_checked() -> None:
    lbc_only_old = ChartPin(
        "aws_load_balancer_controller", "x", "r", "1", KubeRange("1.10", "1.20"), "s"
    )
    assert compatibility_problems("1.36", frozenset({"keda"}), (lbc_only_old,)) == []
    assert compatibility_problems(
        "1.36", frozenset({"aws_load_balancer_controller"}), (lbc_only_old,)
    )


def test_kube_range_bounds_are_inclusive_and_open_ended_when_unpublished() -> None:
    assert KubeRange("1.35", "1.36").contains("1.35")
    assert KubeRange("1.35", "1.36").contains("1.36")
    assert not KubeRange("1.35", "1.36").contains("1.37")
    assert not KubeRange("1.35", "1.36").contains("1.34")
    assert KubeRange("1.22").contains("1.99")


@pytest.mark.parametrize("pin", [p for p in PINS if isinstance(p, ImagePin)], ids=str)
def test_per_minor_images_have_a_build_for_every_supported_version(pin: ImagePin) -> None:
    assert set(SUPPORTED_KUBERNETES_VERSIONS) <= set(pin.tags)


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_neuron_kube_scheduler_is_the_cluster_minor(version: str) -> None:
    values = chart_values(NeuronSettings(), ("trn2.48xlarge",), version)
    image = values["scheduler"]["customScheduler"]["image"]
    assert image["repository"] == "public.ecr.aws/eks-distro/kubernetes/kube-scheduler"
    tag = re.fullmatch(r"v(\d+\.\d+)\.\d+-eks-(\d+)-(\d+)-\d+", image["tag"])
    assert tag is not None, image["tag"]
    assert tag.group(1) == version == f"{tag.group(2)}.{tag.group(3)}"


def test_every_pin_names_its_source() -> None:
    assert all(p.source.strip() for p in PINS)


def test_platform_doc_shows_the_generated_table() -> None:
    text = DOC.read_text()
    table = re.search(r"<!-- pins:begin -->\n(.*?)\n<!-- pins:end -->", text, re.S)
    assert table is not None
    assert table.group(1) == markdown_table()
    assert "within the supported skew" not in text


def test_turning_the_scheduler_extension_off_is_refused_because_pods_name_it() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"neuron.scheduler_extension": "false"})
    (problem,) = err.value.problems
    assert problem.field == "neuron.scheduler_extension"
    assert "my-scheduler" in problem.fix


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split("."))


def test_the_cluster_autoscaler_chart_grants_the_dra_reads_the_136_autoscaler_makes() -> None:
    """Its ClusterRole must let the autoscaler list deviceclasses, resourceslices and
    resourceclaims (resource.k8s.io), as v1.36.1's AWS example does: charts before 9.54.0 do
    not, so a downgrade of the pin below it is a missing permission, not a version bump."""
    assert _version(CLUSTER_AUTOSCALER_CHART.version) >= _version(CLUSTER_AUTOSCALER_DRA_RBAC_SINCE)


def test_kubernetes_134_is_not_deployable_any_more() -> None:
    """1.34 leaves EKS standard support on 2026-12-02 and is two minors behind the kubectl 1.36
    client that drives the cluster; the setting names the versions it takes."""
    assert "1.34" not in SUPPORTED_KUBERNETES_VERSIONS
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"kubernetes_version": "1.34"})
    assert str(err.value.problems[0]) == "kubernetes_version=1.34: must be one of 1.35, 1.36"


def test_karpenter_range_is_its_published_compatibility_table() -> None:
    assert KARPENTER_CHART.kubernetes == KubeRange("1.30", "1.36")
