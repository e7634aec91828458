"""`trnspec doctor`: each missing piece fails in one line naming it and the fix (fake probes)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from trnspec.checks.doctor import EnvironmentProbe, diagnose, distributions_to_probe, parse_lnc
from trnspec.config.images import IMAGES, ImageGeneration
from trnspec.config.serving import apply_overrides, load_profile

DFLASH = load_profile("qwen3-4b-dflash")  # neuron-plugin, TP 4 at LNC 2: one chip
EAGLE3 = load_profile("llama31-8b-eagle3")

#: A container that runs DFLASH: the 2.33 DLC's distributions, vllm-neuron's registry, one
#: device, the node at LNC 2.
HEALTHY = EnvironmentProbe(
    distributions={"vllm": "0.29.0", "vllm-neuron": "0.29.0.1.2.0+3f1c2a9"},
    architectures=frozenset(
        {"LlamaForCausalLM", "Qwen3ForCausalLM", "Eagle3LlamaForCausalLM", "DFlashDraftModel"}
    ),
    registry_error=None,
    neuron_devices=("/dev/neuron0",),
    lnc_env=None,
    lnc_file_text="NEURON_LOGICAL_NC_CONFIG=2\n",
)


def test_a_container_with_everything_passes_and_says_what_it_found():
    report = diagnose(DFLASH, HEALTHY)
    assert report.ok
    assert report.line() == (
        "doctor: ok: vllm 0.29.0; vllm-neuron 0.29.0.1.2.0+3f1c2a9; DFlashDraftModel registered; "
        "1 Neuron device(s), 1 needed; LNC 2 (/opt/aws/neuron/logical_nc_config) = hardware.lnc"
    )


def test_the_probe_asks_for_the_images_distributions():
    assert distributions_to_probe(DFLASH) == ("vllm", "vllm-neuron")
    fork = load_profile("qwen3-32b-draft")
    assert distributions_to_probe(fork) == ("vllm", "neuronx-distributed-inference")


def test_a_missing_vllm_neuron_is_named_with_the_image_that_carries_it():
    probe = replace(HEALTHY, distributions={"vllm": "0.29.0", "vllm-neuron": None})
    report = diagnose(DFLASH, probe)
    assert not report.ok
    assert report.problems == (
        "distribution vllm-neuron is not installed (image neuron-plugin carries it: run "
        f"{IMAGES[ImageGeneration.NEURON_PLUGIN].uri})",
    )
    assert report.line().startswith("doctor: FAILED: distribution vllm-neuron")
    assert "\n" not in report.line()


def test_a_container_of_another_plugin_release_is_refused_by_version():
    probe = replace(HEALTHY, distributions={"vllm": "0.24.0", "vllm-neuron": "0.24.0.1.1.0"})
    problems = diagnose(DFLASH, probe).problems
    assert problems[0].startswith("vllm 0.24.0 installed, 0.29.0 expected for image neuron-plugin")
    assert problems[1].startswith("vllm-neuron 0.24.0.1.1.0 installed, 0.29.0.1.2.0 expected")


def test_the_sdk232_image_accepts_its_own_versions():
    cfg = apply_overrides(DFLASH, ["image=neuron-plugin-sdk2.32"])
    probe = replace(
        HEALTHY, distributions={"vllm": "0.24.0", "vllm-neuron": "0.24.0.1.1.0+e8242a9"}
    )
    assert diagnose(cfg, probe).ok


def test_a_registry_without_the_dflash_drafter_names_the_class_and_the_image_that_has_it():
    cfg = apply_overrides(DFLASH, ["image=neuron-plugin-sdk2.32"])
    probe = replace(
        HEALTHY,
        distributions={"vllm": "0.24.0", "vllm-neuron": "0.24.0.1.1.0"},
        architectures=frozenset({"LlamaForCausalLM", "Eagle3LlamaForCausalLM"}),
    )
    assert diagnose(cfg, probe).problems == (
        "model class DFlashDraftModel (speculation.method=dflash) is not in vllm-neuron's model "
        f"registry here: set image=neuron-plugin ({IMAGES[ImageGeneration.NEURON_PLUGIN].uri})",
    )


def test_a_default_image_without_the_eagle3_head_class_says_the_serving_image_is_not_its_base():
    probe = replace(HEALTHY, architectures=frozenset({"DFlashDraftModel"}))
    (problem,) = diagnose(EAGLE3, probe).problems
    assert problem.startswith("model class Eagle3LlamaForCausalLM (speculation.method=eagle3)")
    assert "the serving image is not built from" in problem


def test_an_unreadable_registry_fails_with_its_reason():
    probe = replace(HEALTHY, architectures=None, registry_error="exit 1: ImportError: libnrt")
    assert diagnose(DFLASH, probe).problems == (
        "vllm-neuron's model registry is unreadable (exit 1: ImportError: libnrt): "
        "DFlashDraftModel unverified",
    )


def test_the_baseline_needs_no_model_class_from_the_registry():
    baseline = load_profile("qwen3-4b-baseline")
    assert diagnose(baseline, replace(HEALTHY, architectures=None, registry_error="x")).ok


def test_no_neuron_device_is_named_with_the_resource_to_request():
    (problem,) = diagnose(DFLASH, replace(HEALTHY, neuron_devices=())).problems
    assert problem.startswith("no Neuron device (/dev/neuron*) in the container")
    assert "aws.amazon.com/neuron" in problem


def test_fewer_devices_than_the_tp_group_needs_is_refused():
    cfg = apply_overrides(DFLASH, ["tensor_parallel_size=8"])  # two chips at LNC 2
    (problem,) = diagnose(cfg, HEALTHY).problems
    assert problem == (
        "1 Neuron device(s) visible, tensor_parallel_size=8 at LNC=2 needs 2: "
        "request 2 aws.amazon.com/neuron"
    )


def test_a_node_on_another_lnc_is_refused_with_both_values():
    (problem,) = diagnose(
        DFLASH, replace(HEALTHY, lnc_file_text="NEURON_LOGICAL_NC_CONFIG=1")
    ).problems
    assert problem.startswith("the node runs LNC=1 (/opt/aws/neuron/logical_nc_config)")
    assert "hardware.lnc=2" in problem


def test_the_environment_variable_wins_over_the_node_file():
    probe = replace(HEALTHY, lnc_env="1", lnc_file_text="NEURON_LOGICAL_NC_CONFIG=2")
    (problem,) = diagnose(DFLASH, probe).problems
    assert "(NEURON_LOGICAL_NC_CONFIG)" in problem


def test_an_unreadable_lnc_value_is_refused():
    (problem,) = diagnose(DFLASH, replace(HEALTHY, lnc_env="two")).problems
    assert problem == "NEURON_LOGICAL_NC_CONFIG holds 'two', not an LNC: expected 1 or 2"


def test_an_lnc_that_cannot_be_seen_is_reported_not_refused():
    report = diagnose(DFLASH, replace(HEALTHY, lnc_env=None, lnc_file_text=None))
    assert report.ok
    assert "LNC not visible in the container" in report.line()


def test_every_missing_piece_is_listed_on_one_line():
    broken = EnvironmentProbe(
        distributions={"vllm": None, "vllm-neuron": None},
        architectures=None,
        registry_error="exit 1: ModuleNotFoundError: No module named 'vllm_neuron'",
        neuron_devices=(),
        lnc_env="1",
        lnc_file_text=None,
    )
    report = diagnose(DFLASH, broken)
    assert len(report.problems) == 5
    assert report.line().count("; ") >= 4 and "\n" not in report.line()


def test_the_cpu_image_has_nothing_to_check():
    empty = EnvironmentProbe({}, None, None, (), None, None)
    assert diagnose(load_profile("local-tiny"), empty).ok


def test_the_fork_needs_nxd_inference_not_a_registry_class():
    fork = load_profile("qwen3-32b-draft")
    probe = replace(
        HEALTHY,
        distributions={"vllm": "0.9.1+neuron", "neuronx-distributed-inference": None},
        architectures=None,
        neuron_devices=tuple(f"/dev/neuron{i}" for i in range(16)),
    )
    assert diagnose(fork, probe).problems == (
        "distribution neuronx-distributed-inference is not installed (image neuron-fork carries "
        f"it: run {IMAGES[ImageGeneration.NEURON_FORK].uri})",
    )


@pytest.mark.parametrize(
    ("text", "lnc"),
    [("NEURON_LOGICAL_NC_CONFIG=2\n", 2), ("# node\nNEURON_LOGICAL_NC_CONFIG=1", 1), ("2", 2)],
)
def test_parse_lnc_reads_the_node_file(text, lnc):
    assert parse_lnc(text) == lnc


@pytest.mark.parametrize("text", ["", "NEURON_LOGICAL_NC_CONFIG=", "lnc=two"])
def test_parse_lnc_refuses_what_is_not_a_number(text):
    assert parse_lnc(text) is None
