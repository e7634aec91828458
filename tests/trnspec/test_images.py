"""Image generations: methods, support status and the spec-decode counters each one exports."""

from __future__ import annotations

import pytest
from trnspec.images import (
    IMAGES,
    NUM_ACCEPTED_TOKENS_PER_POS,
    NUM_DRAFTS,
    V1_SIGNALS,
    ImageGeneration,
    generations_supporting,
)

FORK = IMAGES[ImageGeneration.NEURON_FORK]
PLUGIN = IMAGES[ImageGeneration.NEURON_PLUGIN]


def test_the_fork_exports_no_spec_decode_counter_and_says_why():
    assert FORK.spec_decode_signals == frozenset()
    assert "Neuron model runner" in FORK.signals_note
    assert NUM_DRAFTS not in FORK.spec_decode_signals
    assert NUM_ACCEPTED_TOKENS_PER_POS not in FORK.spec_decode_signals


@pytest.mark.parametrize("generation", [ImageGeneration.NEURON_PLUGIN, ImageGeneration.CPU])
def test_v1_images_export_all_four_counters(generation):
    assert IMAGES[generation].spec_decode_signals == V1_SIGNALS
    assert len(V1_SIGNALS) == 4


def test_only_the_fork_is_legacy_with_the_support_end_fact():
    assert [g for g, spec in IMAGES.items() if spec.legacy] == [ImageGeneration.NEURON_FORK]
    assert "Neuron SDK 2.28" in (FORK.support_ended or "")


def test_the_plugin_runs_eagle3_and_dflash_and_the_fork_the_separate_draft():
    assert {"eagle3", "dflash"} <= PLUGIN.methods
    assert "draft_model" not in PLUGIN.methods
    assert generations_supporting("dflash") == [PLUGIN]
    assert generations_supporting("draft_model")[0] is FORK
