"""Each add-on declares what it requires and excludes (platform/addons/*.py `ADDON`), and synth
checks every installed set against those declarations, one line per broken relation."""

from __future__ import annotations

import pytest

from infra.platform.addons import cluster_autoscaler, karpenter, prometheus
from infra.platform.addons.addon import workload_needs
from infra.platform.addons.pins import PINS
from infra.platform.addons.registry import ADDONS, addon_problems, installed_addons
from infra.settings import list_profiles, load_settings
from infra.settings.serving import load_serving_settings

VARIANTS = ({}, {"serving.internal_nlb": "true", "serving.weights_storage": "ebs"})


def test_every_pinned_add_on_has_a_declaration_and_every_relation_names_a_declared_add_on() -> None:
    assert {pin.addon for pin in PINS} <= set(ADDONS)
    for addon in ADDONS.values():
        assert (addon.requires | addon.excludes) <= set(ADDONS), addon.name
        assert addon.reason or not (addon.requires or addon.excludes), addon.name


def test_the_two_node_autoscalers_exclude_each_other() -> None:
    assert "karpenter" in cluster_autoscaler.ADDON.excludes
    assert "cluster_autoscaler" in karpenter.ADDON.excludes


@pytest.mark.parametrize("profile", list_profiles())
@pytest.mark.parametrize("variant", VARIANTS, ids=("as-shipped", "nlb-ebs"))
def test_every_shipped_profile_installs_a_set_that_keeps_every_declaration(
    profile: str, variant: dict[str, str]
) -> None:
    settings = load_settings(profile, variant)
    names = installed_addons(settings, workload_needs(load_serving_settings(settings.serving)))
    assert addon_problems(names) == []


def test_both_autoscalers_installed_gives_one_line_per_side_naming_the_fix() -> None:
    lines = addon_problems(frozenset({"neuron", "keda", "cluster_autoscaler", "karpenter"}))
    assert lines == [
        "add-on cluster_autoscaler excludes karpenter, which is installed too "
        f"({cluster_autoscaler.ADDON.reason}); install only one of them",
        "add-on karpenter excludes cluster_autoscaler, which is installed too "
        f"({karpenter.ADDON.reason}); install only one of them",
    ]


def test_prometheus_without_the_ebs_csi_driver_is_refused_naming_what_to_install() -> None:
    (line,) = addon_problems(frozenset({"prometheus"}))
    assert line == (
        f"add-on prometheus requires ebs_csi, which is not installed "
        f"({prometheus.ADDON.reason}); install ebs_csi or remove prometheus"
    )


def test_an_undeclared_add_on_name_is_refused() -> None:
    assert addon_problems(frozenset({"istio"})) == [
        "add-on istio: no module of infra/platform/addons declares it; add its ADDON"
    ]
