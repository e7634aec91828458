"""Compatibility rules: image vs method, draft vs target, topology, k, buckets and batch.

Every rule returns Problems (field, value, concrete fix) instead of raising, so one run reports
everything wrong with a config. Model facts come from local config.json / tokenizer.json files
when the sources are local directories, otherwise from the offline shape table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

from trnspec.boundary import json_io
from trnspec.boundary.problems import ABSENT
from trnspec.config.images import generations_supporting, image_spec, runtime_refusal
from trnspec.config.k_schedule import check_k_schedule
from trnspec.config.serving import Problem, ServingConfig
from trnspec.hardware.model_shapes import ModelShape, dflash_block_size, local_dir
from trnspec.hardware.topology import INSTANCE_TYPES, Trn2Instance

#: Policy bound on the batch: beyond this, per-step latency dominates any speculative gain.
MAX_NUM_SEQS = 256

Rule = Callable[[ServingConfig], list[Problem]]


def _nearest_degrees(value: int, valid: list[int]) -> str:
    below = [d for d in valid if d < value]
    above = [d for d in valid if d > value]
    picks = ([below[-1]] if below else []) + ([above[0]] if above else [])
    return " or ".join(str(d) for d in picks)


def _trn2(cfg: ServingConfig) -> Trn2Instance | None:
    return INSTANCE_TYPES.get(cfg.hardware.instance_type)


def check_hardware(cfg: ServingConfig) -> list[Problem]:
    """The instance type must match the image: Trn2 types for Neuron images, "cpu" for cpu."""
    spec = image_spec(cfg.image)
    itype = cfg.hardware.instance_type
    if not spec.runs_on_trn2:
        if itype != "cpu":
            return [
                Problem(
                    "hardware.instance_type",
                    itype,
                    f"image={spec.generation.value} runs on the CPU engine; set "
                    "hardware.instance_type=cpu, or pick a Neuron image "
                    "(neuron-fork, neuron-plugin)",
                )
            ]
        return []
    if itype not in INSTANCE_TYPES:
        return [
            Problem(
                "hardware.instance_type",
                itype,
                f"not a Trn2 instance type; use one of: {', '.join(INSTANCE_TYPES)}"
                + (" (or image=cpu for the local engine)" if itype == "cpu" else ""),
            )
        ]
    return []


def check_tensor_parallel(cfg: ServingConfig) -> list[Problem]:
    """TP must be a degree the Neuron runtime can place on the instance at this LNC."""
    tp = cfg.tensor_parallel_size
    inst = _trn2(cfg)
    if not image_spec(cfg.image).runs_on_trn2:
        if tp != 1:
            return [Problem("tensor_parallel_size", tp, "the CPU engine runs unsharded; use 1")]
        return []
    if inst is None:
        return []  # reported by check_hardware
    lnc = cfg.hardware.lnc
    cores = inst.logical_cores(lnc)
    valid = inst.valid_tp_degrees(lnc)
    if tp in valid:
        return []
    where = f"the {cores} logical cores of {inst.name} at LNC={lnc}"
    if tp > cores:
        return [Problem("tensor_parallel_size", tp, f"exceeds {where}; use {cores} or fewer")]
    return [
        Problem(
            "tensor_parallel_size",
            tp,
            f"does not divide {where}; use {_nearest_degrees(tp, valid)}",
        )
    ]


def check_method_and_image(cfg: ServingConfig) -> list[Problem]:
    """The image must be able to run the method; name the image that can."""
    spec = image_spec(cfg.image)
    method = cfg.speculation.method
    if method in spec.methods:
        return []
    others = [s for s in generations_supporting(method) if s.generation != spec.generation]
    alternative = "; ".join(f"image={s.generation.value} ({s.uri})" for s in others)
    return [
        Problem(
            "speculation.method",
            method,
            f"image {spec.uri} ({spec.generation.value}) cannot run {method} "
            f"(it runs: {', '.join(sorted(spec.methods))}); use {alternative or 'another method'}",
        )
    ]


_HEAD_KIND = {
    "eagle3": "an EAGLE3 head",
    "dflash": "a DFlash drafter trained for the target",
    "draft_model": "a draft model",
}


def check_speculation(cfg: ServingConfig) -> list[Problem]:
    """A draft when speculating, k within the image's window, options not shadowing our keys."""
    s = cfg.speculation
    if s.method == "none":
        return []
    problems = []
    if s.draft is None:
        problems.append(
            Problem(
                "speculation.draft",
                ABSENT,
                f"method={s.method} needs {_HEAD_KIND.get(s.method, 'a draft')}; set "
                "speculation.draft.name and speculation.draft.source (or method=none for the "
                "baseline)",
            )
        )
    spec = image_spec(cfg.image)
    # A DFlash drafter's k is fixed by its training (block size - 1): check_draft_against_target.
    if s.method != "dflash" and s.num_speculative_tokens > spec.max_speculative_tokens:
        problems.append(
            Problem(
                "speculation.num_speculative_tokens",
                s.num_speculative_tokens,
                f"image {spec.generation.value} supports k in 1..{spec.max_speculative_tokens}; "
                f"use {spec.max_speculative_tokens} or less",
            )
        )
    if s.method == "dflash" and cfg.dtype != "bfloat16":
        problems.append(
            Problem(
                "dtype",
                cfg.dtype,
                "DFlash on the Neuron plugin is validated with BF16 target, draft and KV cache "
                "only (vllm-neuron features guide); use dtype=bfloat16",
            )
        )
    reserved = {"model", "method", "num_speculative_tokens", "max_model_len", "revision"}
    for key in sorted(reserved & set(s.options)):
        problems.append(
            Problem(
                f"speculation.options.{key}",
                s.options[key],
                "set by trnspec from the config; remove it from options and set the config field",
            )
        )
    return problems


def check_buckets_and_batch(cfg: ServingConfig) -> list[Problem]:
    """Buckets ascending, unique, within and ending at max_model_len; batch within limits."""
    problems = []
    buckets = cfg.sequence_buckets
    spec = image_spec(cfg.image)
    if buckets:
        if not spec.renders_sequence_buckets:
            problems.append(
                Problem(
                    "sequence_buckets",
                    buckets,
                    f"image {spec.generation.value} chooses its own buckets; "
                    "set sequence_buckets=[]",
                )
            )
        fixed = sorted({b for b in buckets if 0 < b <= cfg.max_model_len})
        if fixed and fixed[-1] != cfg.max_model_len:
            fixed.append(cfg.max_model_len)
        fixed = fixed or [cfg.max_model_len]
        if any(b <= 0 for b in buckets):
            problems.append(
                Problem("sequence_buckets", buckets, f"buckets must be positive; use {fixed}")
            )
        elif buckets != sorted(set(buckets)):
            problems.append(
                Problem(
                    "sequence_buckets", buckets, f"must be ascending without repeats; use {fixed}"
                )
            )
        elif buckets[-1] > cfg.max_model_len:
            problems.append(
                Problem(
                    "sequence_buckets",
                    buckets,
                    f"bucket {buckets[-1]} exceeds max_model_len={cfg.max_model_len}; use {fixed}",
                )
            )
        elif buckets[-1] != cfg.max_model_len:
            problems.append(
                Problem(
                    "sequence_buckets",
                    buckets,
                    f"the largest bucket must equal max_model_len={cfg.max_model_len} or longer "
                    f"sequences cannot be served; use {fixed}",
                )
            )
    if cfg.max_num_seqs > MAX_NUM_SEQS:
        problems.append(
            Problem(
                "max_num_seqs", cfg.max_num_seqs, f"use {MAX_NUM_SEQS} or fewer sequences per batch"
            )
        )
    return problems


# --- draft vs target (needs shapes / tokenizer files) --------------------------------------


@cache
def _tokenizer_fingerprint(directory: str) -> str | None:
    """sha256 of the vocabulary and added tokens in tokenizer.json (None when absent)."""
    path = Path(directory) / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        vocab = (data.get("model") or {}).get("vocab")
        if not isinstance(vocab, dict) or not vocab:
            return None
        added = sorted(
            (str(t.get("id")), str(t.get("content"))) for t in data.get("added_tokens") or []
        )
        canonical = json_io.strict({"vocab": vocab, "added": added}, sort_keys=True)
    except (OSError, ValueError, AttributeError, TypeError):
        return None  # unreadable: the vocab-size comparison still applies
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_draft_against_target(
    cfg: ServingConfig, target: ModelShape | None, draft: ModelShape | None
) -> list[Problem]:
    """Same vocabulary and tokenizer, draft smaller than target, draft kind fits the method."""
    s = cfg.speculation
    if s.method == "none" or s.draft is None:
        return []
    problems = []
    field = "speculation.draft.source"
    if draft is not None:
        if s.method in ("eagle3", "dflash") and draft.kind != s.method:
            problems.append(
                Problem(
                    field,
                    s.draft.source,
                    f"method={s.method} needs {_HEAD_KIND[s.method]}, not "
                    f"{_HEAD_KIND.get(draft.kind, 'a plain model')}",
                )
            )
        if s.method == "draft_model" and draft.kind in ("eagle3", "dflash"):
            problems.append(
                Problem(
                    field,
                    s.draft.source,
                    f"this is {_HEAD_KIND[draft.kind]}; set speculation.method={draft.kind} "
                    "(image=neuron-plugin)",
                )
            )
    if s.method == "dflash":
        problems += _dflash_window(cfg, draft)
    if target is not None and draft is not None:
        if draft.vocab != target.vocab:
            problems.append(
                Problem(
                    field,
                    s.draft.source,
                    f"draft vocabulary ({draft.vocab} tokens) differs from the target's "
                    f"({target.vocab}); pick a draft from the target's family "
                    "with the same tokenizer",
                )
            )
        if draft.kind != "dflash" and draft.params >= target.params:
            problems.append(
                Problem(
                    field,
                    s.draft.source,
                    f"draft ({draft.params / 1e9:.2f} B params) is not smaller than the target "
                    f"({target.params / 1e9:.2f} B); speculation needs a much smaller draft",
                )
            )
    if s.method == "draft_model":
        tdir, ddir = local_dir(cfg.target.source), local_dir(s.draft.source)
        if tdir is not None and ddir is not None:
            t_fp, d_fp = _tokenizer_fingerprint(str(tdir)), _tokenizer_fingerprint(str(ddir))
            if t_fp is not None and d_fp is not None and t_fp != d_fp:
                problems.append(
                    Problem(
                        field,
                        s.draft.source,
                        f"tokenizer.json differs from the target's ({cfg.target.source}); "
                        "the draft must use the target's exact tokenizer",
                    )
                )
    return problems


def _dflash_window(cfg: ServingConfig, draft: ModelShape | None) -> list[Problem]:
    """k must be the drafter's block size - 1: its proposal block is fixed by training."""
    s = cfg.speculation
    block = draft.block_size if draft is not None else None
    if block is None and s.draft is not None:
        block = dflash_block_size(s.draft)
    if block is None or s.num_speculative_tokens == block - 1:
        return []
    return [
        Problem(
            "speculation.num_speculative_tokens",
            s.num_speculative_tokens,
            f"a DFlash drafter proposes exactly block_size - 1 tokens and {s.draft.source} "
            f"was trained with block_size={block}; use {block - 1}",
        )
    ]


def legacy_warnings(cfg: ServingConfig) -> list[Problem]:
    """Warnings (not refusals: the config itself is valid) for a config on an image AWS no
    longer supports, or one current Trn2 nodes cannot run, which `cdk deploy` refuses."""
    spec = image_spec(cfg.image)
    notes = []
    if spec.support_ended is not None:
        notes.append(f"legacy: {spec.support_ended}")
    if (refusal := runtime_refusal(spec)) is not None:
        notes.append(f"refused for deployment: {refusal}")
    if not notes:
        return []
    return [
        Problem(
            "image",
            cfg.image,
            "; ".join(notes) + "; it still renders and checks here, but deploy a neuron-plugin "
            "profile (eagle3 or dflash)",
        )
    ]


#: Rules that need only the config.
CONFIG_RULES: tuple[Rule, ...] = (
    check_hardware,
    check_tensor_parallel,
    check_method_and_image,
    check_speculation,
    check_k_schedule,
    check_buckets_and_batch,
)
