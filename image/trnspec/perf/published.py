"""The published Trn2 decode figures (`trnspec/data/trn2_published.yaml`) as typed rows.

Each row carries its source, the verbatim quote its figures come from, its date and conditions;
`load_published` checks every field on the way in (unknown fields, missing shapes, missing
quote) and `predicted_step_ms` runs trnspec.perf.step_time under a row's conditions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from trnspec.hardware.model_shapes import KNOWN_SHAPES, ModelShape
from trnspec.hardware.topology import INSTANCE_TYPES
from trnspec.perf.stack_group import DIRECT_GROUPS
from trnspec.perf.step_time import (
    TRN2,
    Deployment,
    Efficiency,
    Hardware,
    decode_context_tokens,
    step_cost,
)

DATA_FILE = "data/trn2_published.yaml"


def data_text() -> str:
    """The shipped data file's text."""
    return resources.files("trnspec").joinpath(DATA_FILE).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Measurement:
    """One published figure with its conditions (see the data file's header)."""

    id: str
    role: str
    source: str
    #: The published words the figures are copied from (verbatim).
    quote: str
    date: str
    stack: str
    stack_group: str
    target: str
    instance: str
    tp: int
    lnc: int
    batch: int
    input_len: int
    output_len: int
    weight_bytes: float
    method: str = "none"
    draft: str | None = None
    k: int = 0
    verify_tokens: int | None = None
    tpot_ms: float | None = None
    step_ms: float | None = None
    output_tokens_per_s: float | None = None
    acceptance_length: float | None = None
    baseline: str | None = None
    note: str = ""
    #: The measurement campaign the row belongs to (None: its source); validation holds out a
    #: whole study at once.
    study: str | None = None
    #: The batch the graph was compiled for, when more than the live batch (None: the same).
    #: Recorded, not priced: the model prices the live batch (see step_cost).
    compiled_batch: int | None = None
    #: Replicas the instance ran at once (their host vCPUs are shared).
    replicas_per_instance: int = 1
    #: Served through a vLLM server (False: NxD Inference measured directly, its own benchmark;
    #: such a row belongs to a DIRECT_GROUPS stack, fitted apart from every served stack).
    served: bool = True

    @property
    def held_out_unit(self) -> str:
        """What leave-one-source-out holds out together: the study, else the source."""
        return self.study or self.source

    @property
    def context_tokens(self) -> int:
        """Mean KV length while decoding: the prompt plus half the generation."""
        return decode_context_tokens(self.input_len, self.output_len)

    @property
    def published_step_ms(self) -> float:
        """Time per decode step of one sequence as published (the fitted quantity).

        A baseline emits one token per step: its TPOT, a 'verify n tokens' step time, or
        batch / throughput when only the throughput is given (closed-loop, prefill included).
        """
        if self.step_ms is not None:
            return self.step_ms
        if self.tpot_ms is not None:
            return self.tpot_ms
        if self.output_tokens_per_s:
            return 1000.0 * self.batch / self.output_tokens_per_s
        raise ValueError(f"{self.id}: no tpot_ms, step_ms or output_tokens_per_s")

    @property
    def fitted_step_ms(self) -> float | None:
        """The step time the fit uses: a baseline's published step; for a speculative row with a
        published acceptance length, that length times its TPOT (a step emits
        `acceptance_length` tokens per sequence), from the throughput when no TPOT is published
        (TPOT first, as for the baselines); None for a speculative row without one."""
        if self.role == "baseline":
            return self.published_step_ms
        if self.acceptance_length is None:
            return None
        if self.tpot_ms is not None:
            return self.tpot_ms * self.acceptance_length
        if self.output_tokens_per_s:
            return 1000.0 * self.batch * self.acceptance_length / self.output_tokens_per_s
        return None


#: The fields a row must give (the rest have defaults: plain decoding, no acceptance).
REQUIRED = frozenset(
    f.name
    for f in dataclasses.fields(Measurement)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)


def _shape_from_entry(entry: Mapping[str, Any]) -> ModelShape:
    return ModelShape(
        name=str(entry["name"]),
        layers=int(entry["layers"]),
        hidden=int(entry["hidden"]),
        heads=int(entry["heads"]),
        kv_heads=int(entry["kv_heads"]),
        head_dim=int(entry["head_dim"]),
        intermediate=int(entry["intermediate"]),
        vocab=int(entry["vocab"]),
        tied_embeddings=bool(entry["tied_embeddings"]),
        origin=str(entry["source"]),
    )


def load_published(
    text: str | None = None, extra: Sequence[str] = ()
) -> tuple[list[Measurement], dict[str, ModelShape]]:
    """The data file's measurements and the shapes they need (offline table + the file's own),
    followed by the rows of each `extra` text in the same format (a user's own runs)."""
    if text is None:
        text = data_text()
    shapes = dict(KNOWN_SHAPES)
    out: list[Measurement] = []
    for part in (text, *extra):
        out += _rows(part, shapes)
    ids = [m.id for m in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"id: {dup} appear more than once; give every row its own id")
    return out, shapes


def _rows(text: str, shapes: dict[str, ModelShape]) -> list[Measurement]:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"not YAML: {str(err).splitlines()[0]}") from None
    for entry in data.get("shapes") or []:
        shape = _shape_from_entry(entry)
        shapes[shape.name.lower()] = shape  # keyed by the lower-cased name, as KNOWN_SHAPES
    known = {f.name for f in Measurement.__dataclass_fields__.values()}
    out = []
    for entry in data.get("measurements") or []:
        unknown = set(entry) - known
        if unknown:
            raise ValueError(f"{entry.get('id')}: unknown fields {sorted(unknown)}")
        if not str(entry.get("quote") or "").strip():
            raise ValueError(
                f"{entry.get('id')}: quote={entry.get('quote')!r}; copy the published words"
                " the figures are from"
            )
        missing = sorted(REQUIRED - set(entry))
        if missing:
            raise ValueError(
                f"{entry.get('id')}: missing fields {missing}; every row needs {sorted(REQUIRED)}"
            )
        m = Measurement(**{**entry, "method": entry.get("method") or "none"})
        if m.compiled_batch is not None and m.compiled_batch < m.batch:
            raise ValueError(
                f"{m.id}: compiled_batch={m.compiled_batch} is below batch={m.batch}; a graph"
                " holds at least the sequences it runs"
            )
        if m.served == (m.stack_group in DIRECT_GROUPS):
            direct = ", ".join(sorted(DIRECT_GROUPS))
            fix = (
                f"a row measured through a vLLM server needs a stack group other than {direct}"
                if m.served
                else f"a row measured without a server needs stack group {direct}"
            )
            raise ValueError(f"{m.id}: stack_group={m.stack_group!r} with served={m.served}; {fix}")
        if m.replicas_per_instance < 1:
            raise ValueError(
                f"{m.id}: replicas_per_instance={m.replicas_per_instance}; give the replicas the"
                " instance ran at once (>= 1)"
            )
        for name in (m.target, m.draft):
            if name is not None and name.lower() not in shapes:
                raise ValueError(f"{m.id}: no shape for {name}; add it under shapes:")
        out.append(m)
    return out


def deployment_for(m: Measurement, hardware: Hardware = TRN2) -> Deployment:
    instance = INSTANCE_TYPES.get(m.instance)
    vcpus = instance.vcpus / m.replicas_per_instance if instance else 192.0
    return Deployment(
        hardware=hardware,
        tensor_parallel_size=m.tp,
        lnc=m.lnc,
        weight_bytes=m.weight_bytes,
        draft_weight_bytes=2,
        kv_bytes=2,
        context_tokens=m.context_tokens,
        vcpus_per_replica=vcpus,
    )


def predicted_step_ms(
    m: Measurement, shapes: Mapping[str, ModelShape], eff: Efficiency, hw: Hardware = TRN2
) -> float:
    """The model's step time (ms) under the measurement's conditions, at its own k."""
    target = shapes[m.target.lower()]
    draft = shapes[m.draft.lower()] if m.draft else None
    step = step_cost(
        target,
        m.method,
        draft,
        m.k,
        m.batch,
        deployment_for(m, hw),
        eff,
        m.verify_tokens,
    )
    return 1000.0 * step.total_s
