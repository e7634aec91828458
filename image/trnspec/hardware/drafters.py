"""The drafter a speculative method runs when its own config is not at hand: an EAGLE3 head or a
DFlash drafter sized from the target. Read by the performance model (what a draft pass costs) and
by the packing (what a replica stages). Pure.
"""

from __future__ import annotations

from dataclasses import replace

from trnspec.hardware.model_shapes import ModelShape


def eagle3_head_for(target: ModelShape) -> ModelShape:
    """An EAGLE3 head for `target` when its own config is not at hand: one decoder layer of the
    target's width and the target's vocabulary (the published heads follow this layout)."""
    return replace(
        target,
        name=f"EAGLE3 head for {target.name}",
        layers=1,
        kind="eagle3",
        draft_vocab=None,
        origin=f"assumed: one {target.name}-width layer + LM head",
    )


#: Layers of a DFlash drafter when its config is not at hand: the default of the vLLM Neuron
#: plugin's DFlashConfig (vllm-project/vllm-neuron vllm_neuron/model/dflash/config.py).
DFLASH_DEFAULT_LAYERS = 8


def dflash_drafter_for(target: ModelShape, layers: int = DFLASH_DEFAULT_LAYERS) -> ModelShape:
    """A DFlash drafter for `target` when its config is not at hand: `layers` decoder layers of
    the target's width; it shares the target's embedding and LM head, which it reads again."""
    return replace(
        target,
        name=f"DFlash drafter for {target.name}",
        layers=layers,
        tied_embeddings=True,
        origin=f"assumed: {layers} {target.name}-width layers (vllm-neuron DFlashConfig default)",
    )


def drafter_for(method: str, draft: ModelShape | None, target: ModelShape) -> ModelShape | None:
    """The drafter's shape: the one given, else for EAGLE3 and DFlash the default sized from the
    target (eagle3_head_for, dflash_drafter_for); a separate draft model has no default."""
    if draft is not None or method not in ("eagle3", "dflash"):
        return draft
    return eagle3_head_for(target) if method == "eagle3" else dflash_drafter_for(target)
