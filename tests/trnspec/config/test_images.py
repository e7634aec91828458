"""Image generations: methods, support status and the spec-decode counters each one exports."""

from __future__ import annotations

import pytest
from trnspec.config.images import (
    IMAGES,
    NEWER_RELEASES_NOT_PINNED,
    NODE_MIN_NEURON_RUNTIME,
    NUM_ACCEPTED_TOKENS_PER_POS,
    NUM_DRAFTS,
    V1_SIGNALS,
    CommandForm,
    ImageGeneration,
    generations_supporting,
    runtime_refusal,
)
from trnspec.config.serving import ServingConfig

FORK = IMAGES[ImageGeneration.NEURON_FORK]
PLUGIN = IMAGES[ImageGeneration.NEURON_PLUGIN]
PLUGIN_SDK232 = IMAGES[ImageGeneration.NEURON_PLUGIN_SDK232]


def test_the_fork_exports_no_spec_decode_counter_and_says_why():
    assert FORK.spec_decode_signals == frozenset()
    assert "Neuron model runner" in FORK.signals_note
    assert NUM_DRAFTS not in FORK.spec_decode_signals
    assert NUM_ACCEPTED_TOKENS_PER_POS not in FORK.spec_decode_signals


@pytest.mark.parametrize(
    "generation",
    [ImageGeneration.NEURON_PLUGIN, ImageGeneration.NEURON_PLUGIN_SDK232, ImageGeneration.CPU],
)
def test_v1_images_export_all_four_counters(generation):
    assert IMAGES[generation].spec_decode_signals == V1_SIGNALS
    assert len(V1_SIGNALS) == 4


def test_only_the_fork_is_legacy_with_the_support_end_fact():
    assert [g for g, spec in IMAGES.items() if spec.legacy] == [ImageGeneration.NEURON_FORK]
    assert "Neuron SDK 2.28" in (FORK.support_ended or "")


def test_the_plugin_runs_eagle3_and_dflash_and_the_fork_the_separate_draft():
    assert {"eagle3", "dflash"} <= PLUGIN.methods
    assert "draft_model" not in PLUGIN.methods
    assert generations_supporting("dflash") == [PLUGIN, PLUGIN_SDK232]
    assert generations_supporting("draft_model")[0] is FORK


def test_the_default_plugin_is_neuron_233s_dlc_and_the_232_one_stays_selectable():
    """aws-neuron-sdk v2.33.0 setup/pytorch/dlc.rst: "docker pull public.ecr.aws/neuron/
    pytorch-inference-vllm-neuronx:0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04"."""
    assert ServingConfig.model_fields["image"].default is ImageGeneration.NEURON_PLUGIN
    assert PLUGIN.tag == "0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04"
    assert PLUGIN.neuron_sdk == "2.33.0"
    assert PLUGIN_SDK232.tag == "0.24.0.1.1.0-neuronx-py313-sdk2.32.0-ubuntu24.04"
    assert PLUGIN.command_form is PLUGIN_SDK232.command_form is CommandForm.PLUGIN
    assert PLUGIN.methods == PLUGIN_SDK232.methods


def test_only_an_image_whose_runtime_predates_the_nodes_driver_is_refused_for_deployment():
    """Driver 2.29+ on current Neuron AMIs needs runtime 2.33+; the fork carries 2.28."""
    assert FORK.neuron_runtime == (2, 28) < NODE_MIN_NEURON_RUNTIME == (2, 33)
    refusal = runtime_refusal(FORK)
    assert refusal is not None
    assert "Neuron runtime 2.28" in refusal and "runtime 2.33 or later" in refusal
    assert runtime_refusal(PLUGIN_SDK232) is None  # runtime 2.34
    assert runtime_refusal(IMAGES[ImageGeneration.CPU]) is None


def test_the_sdk_233_plugin_image_carries_runtime_235_which_current_drivers_run():
    """aws-neuron-sdk v2.33.0 component list: "Neuron Runtime Library 2.33.0 2.35.30.0"."""
    assert PLUGIN.neuron_runtime == (2, 35) >= NODE_MIN_NEURON_RUNTIME
    assert runtime_refusal(PLUGIN) is None
    assert PLUGIN_SDK232.neuron_runtime == (2, 34)


def _sdk(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_the_default_image_is_the_newest_supported_trn2_image_pinned():
    supported = [s for s in IMAGES.values() if s.runs_on_trn2 and not s.legacy]
    newest = max(supported, key=lambda spec: _sdk(spec.neuron_sdk or "0"))
    assert ServingConfig.model_fields["image"].default is newest.generation


def test_newer_releases_are_recorded_with_a_source_and_never_also_pinned():
    """2.33.1 and 2.34.0 are out but no page read here names their DLC tags: they are listed
    with what is missing, and an entry must go when an image of that SDK is pinned."""
    pinned = {spec.neuron_sdk for spec in IMAGES.values() if spec.neuron_sdk}
    newest_pinned = max(_sdk(sdk) for sdk in pinned)
    assert [r.neuron_sdk for r in NEWER_RELEASES_NOT_PINNED] == ["2.33.1", "2.34.0"]
    for release in NEWER_RELEASES_NOT_PINNED:
        assert release.neuron_sdk not in pinned
        assert _sdk(release.neuron_sdk) > newest_pinned
        assert release.source.startswith("https://") and "vLLM DLC tag" in release.missing
