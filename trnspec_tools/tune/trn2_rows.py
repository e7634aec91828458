"""Tune's measurements as rows of trnspec/data/trn2_published.yaml, so a user's own Trn2 runs can
refit the perf model's constants: `python -m trnspec fit --add FILE`.

One baseline row per measured concurrency and one speculative row per (k, concurrency), with the
deployed profile's conditions (target, method, TP, LNC, instance, the stack group its image
belongs to) and batch = the run's concurrency (a closed loop of c clients keeps about c sequences
in the running batch; the fit uses the run's p50 TPOT, which prefill and queueing barely touch).
A speculative row carries an acceptance length only when the server's spec-decode counters gave
it (a chunk-size estimate would be fitted as if measured): otherwise it is left out, with the
reason. Every row's `quote` is the figures as tune measured them, and its `source` names the
result file and the endpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from trnspec.config.serving import load_profile
from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.profile_model import profile_model
from trnspec.perf.published import Measurement
from trnspec.perf.step_time import decode_context_tokens

from trnspec_tools.bench.run_result import ArmRun

#: tune's per-concurrency results of one arm: {concurrency: run}.
Levels = Mapping[int, ArmRun]


@dataclass(frozen=True)
class Conditions:
    """What every row of one tune run shares: the deployment and the workload."""

    profile: str
    stack_group: str
    method: str
    target: ModelShape
    draft: ModelShape | None
    instance: str
    tp: int
    lnc: int
    weight_bytes: float
    input_len: int
    output_len: int
    source: str
    date: str


def conditions_for(
    profile: str, input_len: int, output_len: int, source: str, date: str
) -> Conditions:
    """The deployed Trn2 profile's conditions (ConfigError if it is not a Trn2 profile)."""
    cfg = load_profile(profile)
    model = profile_model(cfg, decode_context_tokens(input_len, output_len))
    return Conditions(
        profile=profile,
        stack_group=model.group,
        method=model.method,
        target=model.target,
        draft=model.draft if model.method == "draft_model" else None,
        instance=cfg.hardware.instance_type,
        tp=cfg.tensor_parallel_size,
        lnc=cfg.hardware.lnc,
        weight_bytes=model.deployment.weight_bytes,
        input_len=input_len,
        output_len=output_len,
        source=source,
        date=date,
    )


def _quote(c: int, run: ArmRun) -> str:
    acc = run.result.acceptance
    parts = [
        f"tune measured {run.arm} at concurrency {c}:",
        f"output_tokens_per_s {run.result.output_tokens_per_s}",
        f"tpot_ms p50 {run.result.requests.tpot_ms.p50}",
    ]
    if acc.mean_accepted_length is not None:
        parts.append(f"mean_accepted_length {acc.mean_accepted_length} ({acc.acceptance_source})")
    return ", ".join(parts)


def _row(cond: Conditions, c: int, run: ArmRun, **spec: Any) -> Measurement:
    k = spec.get("k", 0)
    return Measurement(
        id=f"{cond.profile}-c{c}" + (f"-k{k}" if k else ""),
        role="speculative" if k else "baseline",
        source=f"{cond.source} ({run.endpoint})",
        quote=_quote(c, run),
        date=cond.date,
        stack=f"trnspec tune against profile {cond.profile}",
        stack_group=cond.stack_group,
        target=cond.target.name,
        instance=cond.instance,
        tp=cond.tp,
        lnc=cond.lnc,
        batch=c,
        input_len=cond.input_len,
        output_len=cond.output_len,
        weight_bytes=cond.weight_bytes,
        tpot_ms=run.result.requests.tpot_ms.p50,
        output_tokens_per_s=run.result.output_tokens_per_s,
        **spec,
    )


#: how far the counters' draft tokens per draft may lie from the k a row is written for
K_USED_SLACK = 0.5


def _unmeasured(run: ArmRun) -> str | None:
    """Why a run's figures cannot be a row (None: they can): a row is fitted on its throughput
    and its p50 TPOT, which must both be positive; a TPOT of 0 is what a stream merged into
    bursts shows (a buffering proxy, an API process behind its engine), not a step time."""
    if not run.result.output_tokens_per_s > 0:
        return "no output throughput measured"
    tpot = run.result.requests.tpot_ms.p50
    if tpot is None or not tpot > 0:
        return (
            f"no per-token time measured (p50 TPOT {tpot}): the stream arrived in bursts"
            " (a buffering proxy or a server behind its engine), so it times no decode step"
        )
    return None


def _not_at_k(k: int, accepted_length: float, k_used: float | None) -> str | None:
    """Why an acceptance length cannot stand for window k (None: it can): at most k + 1 tokens
    per step, and the server's counters must show drafts of about k tokens (a row written for
    k=15 from a server drafting 4 would fit the wrong window)."""
    if accepted_length > k + 1:
        return f"acceptance length {accepted_length:.2f} exceeds k + 1 = {k + 1}: not physical"
    if k_used is not None and abs(k_used - k) > K_USED_SLACK:
        return (
            f"the server drafted {k_used:.2f} tokens per draft, not k={k}: the row would carry"
            " another window's acceptance"
        )
    return None


def measured_rows(
    cond: Conditions, baseline: Levels, runs: Mapping[int, Levels]
) -> tuple[list[Measurement], list[str]]:
    """The rows of one tune run, and a line for each measurement left out and why."""
    rows: list[Measurement] = []
    skipped: list[str] = []
    base_ids: dict[int, str] = {}
    for c, run in sorted(baseline.items()):
        if (why := _unmeasured(run)) is not None:
            skipped.append(f"baseline at concurrency {c}: {why}")
            continue
        row = _row(cond, c, run)
        base_ids[c] = row.id
        rows.append(row)
    for k, by_c in sorted(runs.items()):
        for c, run in sorted(by_c.items()):
            where = f"k={k} at concurrency {c}"
            if c not in base_ids:
                skipped.append(f"{where}: no baseline at the same concurrency")
            elif (acc := run.result.acceptance).acceptance_source != "server-metrics":
                skipped.append(
                    f"{where}: acceptance not from the server's counters"
                    f" ({acc.acceptance_source or acc.acceptance_note})"
                )
            elif (why := _unmeasured(run)) is not None:
                skipped.append(f"{where}: {why}")
            elif acc.mean_accepted_length is None:
                skipped.append(f"{where}: the counters gave no acceptance length")
            elif (why := _not_at_k(k, acc.mean_accepted_length, acc.k_used)) is not None:
                skipped.append(f"{where}: {why}")
            else:
                rows.append(
                    _row(
                        cond,
                        c,
                        run,
                        k=k,
                        method=cond.method,
                        draft=cond.draft.name if cond.draft else None,
                        baseline=base_ids[c],
                        acceptance_length=acc.mean_accepted_length,
                    )
                )
    return rows, skipped


def _shape_entry(shape: ModelShape) -> dict[str, Any]:
    return {
        "name": shape.name,
        "layers": shape.layers,
        "hidden": shape.hidden,
        "heads": shape.heads,
        "kv_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "intermediate": shape.intermediate,
        "vocab": shape.vocab,
        "tied_embeddings": shape.tied_embeddings,
        "source": shape.origin,
    }


def shapes_needed(*conds: Conditions) -> tuple[ModelShape, ...]:
    """The shapes the conditions' rows need (each one's target, then its draft when that is a
    separate model), each name once, in that order."""
    out: dict[str, ModelShape] = {}
    for cond in conds:
        for shape in (cond.target, *([cond.draft] if cond.draft else [])):
            out.setdefault(shape.name, shape)
    return tuple(out.values())


def rows_yaml(cond: Conditions, rows: Sequence[Measurement], *others: Conditions) -> str:
    """The rows in the data file's format, with the shapes they need: `cond`'s, then those of
    `others` not already named (keys in their order, text as written)."""
    measurements = [
        {key: value for key, value in dataclasses.asdict(m).items() if value not in (None, "")}
        for m in rows
    ]
    doc = {
        "shapes": [_shape_entry(s) for s in shapes_needed(cond, *others)],
        "measurements": measurements,
    }
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
