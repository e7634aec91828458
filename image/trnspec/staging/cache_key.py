"""The key under which compiled Neuron artifacts are cached in S3.

A Neuron compile takes tens of minutes for a large model and is valid only for the exact shapes
and software it was built for. The key therefore covers everything that changes the compiled
graph: target and draft weights (source + revision), speculation method, k, its options and k
schedule, TP, LNC, sequence buckets, batch (max_num_seqs), max_model_len, dtype, the image
(generation and tag) and the Neuron SDK version. Anything else (served model name, port, host)
is left out, so renaming a deployment reuses its cache.

The key is a human-readable prefix (to find a cache by eye in the S3 console) plus a short hash
of a canonical JSON of all inputs (so two keys are equal exactly when the inputs are).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from trnspec.boundary import json_io

if TYPE_CHECKING:
    from trnspec.config.serving import ServingConfig

#: Hex digits of sha256 kept in the key: 16 (64 bits) makes an accidental collision negligible.
HASH_CHARS = 16
_SDK_IN_TAG = re.compile(r"sdk(\d+(?:\.\d+)+)")


@dataclass(frozen=True)
class CompileIdentity:
    """Everything that changes a Neuron compile, normalised (order-independent, canonical)."""

    target: str
    target_revision: str | None
    draft: str | None
    draft_revision: str | None
    method: str
    num_speculative_tokens: int
    speculation_options: str  # canonical JSON, keys sorted
    tensor_parallel_size: int
    lnc: int
    sequence_buckets: tuple[int, ...]  # sorted, unique: the set of buckets is what is compiled
    max_num_seqs: int
    max_model_len: int
    dtype: str
    image_generation: str
    image: str
    neuron_sdk: str | None


def sdk_version_from_image(image: str) -> str | None:
    """The Neuron SDK version the DLC tags carry ("...-sdk2.26.1-..." -> "2.26.1"), if any."""
    m = _SDK_IN_TAG.search(image)
    return m.group(1) if m else None


def _canonical(value: Any) -> str:
    """Compact, keys sorted; a non-finite number refused (a NaN in a cache key is a bug)."""
    return json_io.strict(value, sort_keys=True, separators=(",", ":"), default=str)


def identity_from_config(
    cfg: ServingConfig, image: str, neuron_sdk: str | None = None
) -> CompileIdentity:
    """Read only the compile-relevant fields of the config (see the module docstring)."""
    spec = cfg.speculation
    draft = spec.draft if spec.method != "none" else None
    generation = getattr(cfg.image, "value", cfg.image)
    return CompileIdentity(
        target=cfg.target.source,
        target_revision=cfg.target.revision,
        draft=draft.source if draft is not None else None,
        draft_revision=draft.revision if draft is not None else None,
        method=spec.method,
        num_speculative_tokens=spec.num_speculative_tokens if spec.method != "none" else 0,
        # The k schedule joins the options only when set, so keys without one do not move.
        speculation_options=_canonical(
            {
                **spec.options,
                **({"k_schedule": [list(b) for b in spec.k_schedule]} if spec.k_schedule else {}),
            }
            if spec.method != "none"
            else {}
        ),
        tensor_parallel_size=cfg.tensor_parallel_size,
        lnc=int(cfg.hardware.lnc),
        sequence_buckets=tuple(sorted(set(cfg.sequence_buckets))),
        max_num_seqs=cfg.max_num_seqs,
        max_model_len=cfg.max_model_len,
        dtype=cfg.dtype,
        image_generation=str(generation),
        image=image,
        neuron_sdk=neuron_sdk or sdk_version_from_image(image),
    )


def _slug(text: str, limit: int = 32) -> str:
    """Last path component of a model source, lower-cased, S3-key safe."""
    base = text.rstrip("/").rsplit("/", 1)[-1] or text
    slug = re.sub(r"[^a-z0-9.]+", "-", base.lower()).strip("-.")
    return (slug or "model")[:limit]


def digest(identity: CompileIdentity) -> str:
    return hashlib.sha256(_canonical(asdict(identity)).encode()).hexdigest()[:HASH_CHARS]


def cache_key(identity: CompileIdentity) -> str:
    """E.g. "qwen3-32b_qwen3-1.7b-draft-model-k7-tp64-lnc2-sdk2.26.1-3f9c0a1b2c3d4e5f"."""
    models = _slug(identity.target)
    if identity.draft is not None:
        models += "_" + _slug(identity.draft)
    method = identity.method.replace("_", "-")
    spec = method if identity.method == "none" else f"{method}-k{identity.num_speculative_tokens}"
    sdk = f"sdk{identity.neuron_sdk}" if identity.neuron_sdk else _slug(identity.image_generation)
    parts = [models, spec, f"tp{identity.tensor_parallel_size}", f"lnc{identity.lnc}", sdk]
    return "-".join(parts) + "-" + digest(identity)


def compile_cache_key(
    cfg: ServingConfig, image: str | None = None, neuron_sdk: str | None = None
) -> str:
    """The cache key of a validated config; image and SDK default to its generation's pins."""
    from trnspec.config.images import image_spec

    spec = image_spec(cfg.image)
    image = image or (f"{spec.uri}@{spec.digest}" if spec.digest else spec.uri)
    return cache_key(identity_from_config(cfg, image, neuron_sdk or spec.neuron_sdk))
