"""Model shapes for sizing and compatibility: from the model's config.json, or an offline table.

Sizing must work before any weights are downloaded (a plan is made on a laptop, the weights sit in
S3), so well-known models have their published shapes here; a local model directory's own
config.json always wins over the table.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from trnspec.boundary.errors import BoundaryError
from trnspec.config.serving import ModelRef

ShapeKind = Literal["decoder", "eagle3", "dflash"]


@dataclass(frozen=True)
class ModelShape:
    """The numbers that decide a model's HBM footprint and its draft compatibility."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    kind: ShapeKind = "decoder"
    #: EAGLE3 heads predict over a reduced vocabulary (mapped back to the target's).
    draft_vocab: int | None = None
    #: Where the numbers came from ("config.json at ...", or "offline table").
    origin: str = "offline table"
    #: DFlash drafters: the proposal block they were trained with (k = block_size - 1).
    block_size: int | None = None
    #: DFlash drafters: how many target layers' hidden states they project (fc input width).
    target_layers: int = 0

    @property
    def params(self) -> int:
        """Parameter count from the shape (Llama/Qwen3 layout; norms included, biases none)."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        mlp = 3 * h * self.intermediate
        if self.kind == "eagle3":
            # One decoder layer fed [embedding; fused target features] (2h wide), the fc that
            # fuses three target hidden states (3h -> h), and a head over the draft vocabulary;
            # the token embedding is shared with the target.
            attn = 2 * h * q + 2 * (2 * h * kv) + q * h
            head = (self.draft_vocab or self.vocab) * h
            return 3 * h * h + self.layers * (attn + mlp + 3 * h) + head + h
        attn = h * q + 2 * h * kv + q * h
        if self.kind == "dflash":
            # Decoder layers and the fc that projects the target's hidden states; the token
            # embedding and the LM head are borrowed from the target (vllm-neuron features guide).
            return self.target_layers * h * h + self.layers * (attn + mlp + 2 * h) + h
        embeddings = self.vocab * h * (1 if self.tied_embeddings else 2)
        return embeddings + self.layers * (attn + mlp + 2 * h) + h

    def kv_bytes_per_token(self, bytes_per_element: int) -> int:
        """K and V for every layer and KV head: layers x KV heads x head dim x 2 x bytes."""
        return self.layers * self.kv_heads * self.head_dim * 2 * bytes_per_element


def _shape(name: str, *values: int, tied: bool, **kw: object) -> ModelShape:
    layers, hidden, heads, kv_heads, head_dim, intermediate, vocab = values
    return ModelShape(
        name, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, tied, **kw
    )  # type: ignore[arg-type]


#: Published config.json values (layers, hidden, heads, KV heads, head dim, MLP, vocab).
KNOWN_SHAPES: dict[str, ModelShape] = {
    s.name.lower(): s
    for s in (
        _shape("Qwen3-32B", 64, 5120, 64, 8, 128, 25600, 151936, tied=False),
        # huggingface.co/Qwen/Qwen3-14B config.json
        _shape("Qwen3-14B", 40, 5120, 40, 8, 128, 17408, 151936, tied=False),
        _shape("Qwen3-8B", 36, 4096, 32, 8, 128, 12288, 151936, tied=False),
        # huggingface.co/Qwen/Qwen3-4B config.json
        _shape("Qwen3-4B", 36, 2560, 32, 8, 128, 9728, 151936, tied=True),
        _shape("Qwen3-1.7B", 28, 2048, 16, 8, 128, 6144, 151936, tied=True),
        _shape("Qwen3-0.6B", 28, 1024, 16, 8, 128, 3072, 151936, tied=True),
        _shape("Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256, tied=False),
        _shape("Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, tied=False),
        # huggingface.co/meta-llama/Llama-3.2-3B config.json
        _shape("Llama-3.2-3B", 28, 3072, 24, 8, 128, 8192, 128256, tied=True),
        _shape("Llama-3.2-1B", 16, 2048, 32, 8, 64, 8192, 128256, tied=True),
        _shape(
            "EAGLE3-LLaMA3.1-Instruct-8B",
            1,
            4096,
            32,
            8,
            128,
            14336,
            128256,
            tied=False,
            kind="eagle3",
            draft_vocab=32000,
        ),
    )
}

#: Published DFlash drafters and the block size each was trained with (k = block_size - 1).
#: z-lab's model list (github.com/z-lab/dflash README); the vllm-neuron features guide's DFlash
#: command runs the Llama drafter at k=9 and names 7, 9 and 15 as the published drafters' k;
#: "-b16" in the Qwen3 drafters' names is their block size.
DFLASH_BLOCK_SIZES: dict[str, int] = {
    "llama3.1-8b-instruct-dflash-ultrachat": 10,
    "qwen3-4b-dflash-b16": 16,
    "qwen3-8b-dflash-b16": 16,
}

_SUFFIXES = re.compile(r"-(instruct|chat|base|hf|fp8|bf16)$")


def _candidates(ref: ModelRef) -> list[str]:
    names = []
    for text in (ref.source, ref.name):
        base = text.rstrip("/").rsplit("/", 1)[-1].lower()
        names.append(base)
        stripped = base
        while (shorter := _SUFFIXES.sub("", stripped)) != stripped:
            stripped = shorter
        names.append(stripped)
    return names


def is_local(source: str) -> bool:
    """A local directory (absolute or explicitly relative), as opposed to s3:// or a hub id."""
    return not source.startswith("s3://") and (
        source.startswith(("/", "./", "../", "~")) or Path(source).expanduser().is_dir()
    )


def local_dir(source: str) -> Path | None:
    """The model directory if `source` is local and exists, else None."""
    if not is_local(source):
        return None
    path = Path(source).expanduser()
    return path if path.is_dir() else None


def _positive(data: dict, key: str) -> int:
    value = int(data[key])
    if value <= 0:
        raise ValueError(f"{key}={value} must be positive")
    return value


def shape_from_config_json(data: dict, origin: str) -> ModelShape:
    """Read a Hugging Face config.json (Llama/Qwen-style keys; EAGLE3 heads detected)."""
    if not isinstance(data, dict):
        raise TypeError("config.json must hold a JSON object")
    heads = _positive(data, "num_attention_heads")
    hidden = _positive(data, "hidden_size")
    archs = " ".join(data.get("architectures") or []).lower()
    model_type = str(data.get("model_type", "")).lower()
    is_eagle3 = "eagle3" in archs or "eagle3" in model_type
    is_dflash = "dflash" in archs or "dflash" in model_type
    dflash_cfg = data.get("dflash_config") if isinstance(data.get("dflash_config"), dict) else {}
    kind: ShapeKind = "eagle3" if is_eagle3 else "dflash" if is_dflash else "decoder"
    return ModelShape(
        name=str(data.get("_name_or_path") or origin),
        layers=_positive(data, "num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        kv_heads=_positive(data, "num_key_value_heads")
        if data.get("num_key_value_heads")
        else heads,
        head_dim=_positive(data, "head_dim") if data.get("head_dim") else max(1, hidden // heads),
        intermediate=_positive(data, "intermediate_size"),
        vocab=_positive(data, "vocab_size"),
        tied_embeddings=bool(data.get("tie_word_embeddings", False)),
        kind=kind,
        draft_vocab=int(data["draft_vocab_size"]) if data.get("draft_vocab_size") else None,
        origin=origin,
        block_size=_positive(data, "block_size") if is_dflash and data.get("block_size") else None,
        target_layers=len(dflash_cfg.get("target_layer_ids") or []) if is_dflash else 0,
    )


class ShapeError(BoundaryError):
    """A local config.json exists but cannot be read as a model shape: one problem naming it."""

    @property
    def reason(self) -> str:
        """The refusal as a caller puts it under its own field: `PATH is not a readable ...`."""
        return f"{self.value} is {self.fix}"


def _why(err: Exception) -> str:
    """Why a config.json could not be read, in words rather than an exception's repr."""
    if isinstance(err, json.JSONDecodeError):
        return f"not JSON: {err.msg} at line {err.lineno}, column {err.colno}"
    if isinstance(err, KeyError):
        return f"no {err.args[0]} field" if err.args else "a field is missing"
    if isinstance(err, OSError):
        return err.strerror or str(err)
    return str(err) or type(err).__name__


def resolve_shape(ref: ModelRef) -> ModelShape | None:
    """The model's shape: its local config.json if present, else the offline table, else None."""
    directory = local_dir(ref.source)
    if directory is not None and (directory / "config.json").is_file():
        path = directory / "config.json"
        try:
            return shape_from_config_json(json.loads(path.read_text(encoding="utf-8")), str(path))
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as err:
            # OverflowError: json reads Infinity, and int(inf) overflows.
            raise ShapeError(
                "config.json", str(path), f"not a readable model config ({_why(err)})"
            ) from None
    for candidate in _candidates(ref):
        if candidate in KNOWN_SHAPES:
            return KNOWN_SHAPES[candidate]
    return None


def dflash_block_size(ref: ModelRef) -> int | None:
    """The block size of a published DFlash drafter named by `ref` (None when unknown)."""
    for candidate in _candidates(ref):
        if candidate in DFLASH_BLOCK_SIZES:
            return DFLASH_BLOCK_SIZES[candidate]
    return None


def known_model_names() -> list[str]:
    """Names the offline table recognises, for error messages."""
    return [s.name for s in KNOWN_SHAPES.values()]
