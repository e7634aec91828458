"""Predicted next to measured: the Trn2 performance model evaluated at what bench.py measured.

`bench.py --profile P [--set path=value ...]` names the Trn2 profile the endpoint serves. After
the run, each measured level gets a `prediction` block: `trnspec.perf.step_time` (through
`trnspec.perf.profile_model`, the constants fitted to published Trn2 figures) evaluated at

* context = the workload's mean prompt length in words + half of --output-len,
* batch = the level's concurrency (capped by the number of prompts and the profile's
  `max_num_seqs`, the most sequences the server batches),
* k = the profile's `speculation.num_speculative_tokens` (0 for a baseline arm),
* tokens per step = the MEASURED mean accepted length, from the consistent spec-decode counter
  deltas of that window (1 + accepted / drafts). Without them (no counters, inconsistent
  counters, only the chunk-based estimate) a speculative level gets no prediction, with the
  reason: a model fed a guess would look like a check and be none.

The model is decode-only and for one replica: it leaves out prefill (which the measured
throughput includes) and assumes one replica serves the whole load. It is a model estimate, and
labelled so. Pure apart from reading the packaged profile and calibration data.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trnspec.config.serving import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    load_profile,
)
from trnspec.perf.profile_model import ProfileModel, profile_model
from trnspec.perf.step_time import decode_context_tokens

from trnspec_tools.bench.run_result import ArmRun, RunResult
from trnspec_tools.client.request_spec import RequestSpec

if TYPE_CHECKING:
    from trnspec_tools.bench.rounds import LevelComparison

LABEL = "model estimate (trnspec.perf.step_time, constants fitted to published Trn2 figures)"
SCOPE = "decode only, one replica: the measured figures also hold prefill and queueing"
SOURCE = "trnspec.perf.step_time via trnspec.perf.profile_model; fit trnspec.perf.trn2_fit"


@dataclass(frozen=True)
class PredictionSetup:
    """The profile's model, built before the run so a bad profile is refused before measuring."""

    profile: str
    model: ProfileModel
    context_tokens: int
    context_source: str

    @property
    def k(self) -> int:
        spec = self.model.cfg.speculation
        return spec.num_speculative_tokens if spec.method != "none" else 0


def add_predict_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--profile",
        help="the Trn2 profile the endpoint serves (`python -m trnspec profiles`): report the"
        " performance model's prediction next to each measured level",
    )


def setup(
    profile: str | None,
    overrides: Sequence[str],
    prompts: Sequence[RequestSpec],
    output_len: int,
    local: bool,
) -> PredictionSetup | None:
    """The model of `profile` with `overrides`, or None without --profile. ConfigError (one line
    naming the flag) for an unknown or non-Trn2 profile, or one the model cannot cost."""
    if profile is None:
        return None
    if local:
        raise ConfigError(
            [Problem("--profile", profile, "predicts Trn2; --local runs the CPU engine")]
        )
    cfg: ServingConfig = load_profile(profile)  # ConfigError on --profile when unknown
    if overrides:
        cfg = apply_overrides(cfg, list(overrides))
    words = round(sum(len(p.prompt.split()) for p in prompts) / max(1, len(prompts)))
    context = decode_context_tokens(words, output_len)
    model = profile_model(cfg, context)
    return PredictionSetup(
        profile,
        model,
        context,
        f"mean prompt length of the workload, {words} words (the client has no tokenizer),"
        f" + half of --output-len {output_len}",
    )


def _absent(reason: str) -> dict[str, Any]:
    return {"label": LABEL, "source": SOURCE, "predicted": None, "reason": reason}


def predict_run(
    ps: PredictionSetup, run: RunResult, num_prompts: int, speculative: bool
) -> dict[str, Any]:
    """The `prediction` block of one measured run (JSON-ready)."""
    cfg = ps.model.cfg
    c = run.concurrency
    batch = min(c, num_prompts, cfg.max_num_seqs)
    notes = []
    if batch < c:
        notes.append(
            f"batch {batch} < concurrency {c}: capped by the prompts ({num_prompts}) or the"
            f" profile's max_num_seqs ({cfg.max_num_seqs})"
        )
    if run.request_rate is not None:
        notes.append("open-loop arrivals: the concurrency is an upper bound on the batch")
    k = ps.k if speculative else 0
    inputs: dict[str, Any] = {
        "profile": ps.profile,
        "batch": batch,
        "k": k,
        "context_tokens": ps.context_tokens,
        "context_source": ps.context_source,
        "method": ps.model.method if k else "none",
    }
    if speculative and k == 0:
        return _absent(f"profile {ps.profile} has no speculation; compare a speculative profile")
    tau = 1.0
    if k:
        acc = run.acceptance
        deltas = acc.spec_decode_deltas
        if acc.acceptance_source != "server-metrics" or deltas is None:
            why = acc.acceptance_note or "no consistent spec-decode counter deltas"
            return _absent(f"no measured acceptance from the server's counters ({why})")
        drafts, draft_tokens = deltas.num_drafts, deltas.num_draft_tokens
        if drafts < 1:
            return _absent("the counters recorded no draft in the window")
        if draft_tokens != drafts * k:
            return _absent(
                f"the counters show {draft_tokens / drafts:g} draft tokens per draft but profile"
                f" {ps.profile} has k={k}; pass --set speculation.num_speculative_tokens=K"
            )
        tau = 1.0 + deltas.num_accepted_tokens / drafts
        inputs["mean_accepted_length"] = tau
        inputs["acceptance_rate"] = acc.acceptance_rate
        inputs["acceptance_source"] = "server-metrics (spec-decode counter deltas of this window)"
    points = ps.model.grid(lambda _k: tau, sorted({0, k}), [batch])
    point = next(p for p in points if p.k == k)
    predicted = {
        "tpot_ms": point.tpot_s * 1e3,
        "output_tokens_per_s": point.output_tokens_per_s,
        "speedup": point.speedup if k else None,
        "tokens_per_step": point.tokens_per_step,
        "step_ms": point.step.total_s * 1e3,
        "target_bound": point.step.target.bound,
    }
    tpot = run.requests.tpot_ms.p50
    tps = run.output_tokens_per_s
    measured = {"tpot_ms": tpot, "output_tokens_per_s": tps}
    return {
        "label": LABEL,
        "source": SOURCE,
        "inputs": inputs,
        "predicted": predicted,
        "measured": measured,
        "measured_over_predicted": {
            "tpot_ms": _ratio(tpot, predicted["tpot_ms"]),
            "output_tokens_per_s": _ratio(tps, predicted["output_tokens_per_s"]),
        },
        "scope": SCOPE,
        "notes": notes,
        "reason": None,
    }


def _ratio(measured: object, predicted: float | None) -> float | None:
    if not isinstance(measured, int | float) or not predicted:
        return None
    return measured / predicted


@dataclass(frozen=True)
class SpeedupPrediction:
    """The model's speedup at a measured level beside the measured one (bench --profile)."""

    predicted_speedup: float | None
    measured_speedup: float | None
    measured_over_predicted: float | None
    #: why there is no predicted speedup (None when there is one)
    reason: str | None

    def to_json(self) -> dict[str, object]:
        """The `prediction` block of a level in bench's JSON `comparison`."""
        return {
            "label": LABEL,
            "predicted_speedup": self.predicted_speedup,
            "measured_speedup": self.measured_speedup,
            "measured_over_predicted": self.measured_over_predicted,
            "reason": self.reason,
        }


def attach(
    ps: PredictionSetup | None,
    runs: Sequence[ArmRun],
    comparison: Sequence[LevelComparison],
    num_prompts: int,
) -> tuple[list[ArmRun], list[LevelComparison]]:
    """Every run with its `prediction` block, and every level's comparison with the predicted
    speedup beside the measured one (both unchanged without a --profile)."""
    if ps is None:
        return list(runs), list(comparison)
    predicted = [
        dataclasses.replace(
            r,
            prediction=predict_run(ps, r.result, num_prompts, speculative=r.arm != "baseline"),
        )
        for r in runs
    ]
    levels = []
    for level in comparison:
        t = next(
            (r for r in predicted if r.arm == "target" and r.concurrency == level.concurrency),
            None,
        )
        pred: Mapping[str, Any] = (t.prediction if t else None) or {}
        speedup = (pred.get("predicted") or {}).get("speedup")
        measured = level.speedup_output_tokens_per_s
        prediction = SpeedupPrediction(
            predicted_speedup=speedup,
            measured_speedup=measured,
            measured_over_predicted=_ratio(measured, speedup),
            reason=None if speedup is not None else pred.get("reason"),
        )
        levels.append(dataclasses.replace(level, prediction=prediction))
    return predicted, levels


def _f(value: object, fmt: str) -> str:
    return fmt.format(value) if isinstance(value, int | float) else "-"


def prediction_markdown(result: Mapping[str, Any]) -> list[str]:
    """The Markdown section: predicted vs measured per run and per comparison ([] without)."""
    runs = [r for r in result.get("runs", []) if "prediction" in r]
    if not runs:
        return []
    profile = (result.get("config") or {}).get("profile")
    lines = [
        f"## Predicted vs measured (profile `{profile}`; {LABEL})",
        "",
        "| arm | conc. | batch | k | tok/step | TPOT p50 ms meas. / pred. (ratio)"
        " | out tok/s meas. / pred. (ratio) | note |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        p = r["prediction"]
        pred = p.get("predicted")
        if pred is None:
            lines.append(
                f"| {r.get('arm')} | {r.get('concurrency')} | - | - | - | - | - | {p['reason']} |"
            )
            continue
        m, q = p["measured"], p["measured_over_predicted"]
        lines.append(
            f"| {r.get('arm')} | {r.get('concurrency')} | {p['inputs']['batch']}"
            f" | {p['inputs']['k']} | {pred['tokens_per_step']:.2f}"
            f" | {_f(m['tpot_ms'], '{:.2f}')} / {pred['tpot_ms']:.2f}"
            f" ({_f(q['tpot_ms'], '{:.2f}')})"
            f" | {_f(m['output_tokens_per_s'], '{:.1f}')} / {pred['output_tokens_per_s']:.1f}"
            f" ({_f(q['output_tokens_per_s'], '{:.2f}')}) | {'; '.join(p['notes'])} |"
        )
    comps = [c for c in result.get("comparison") or [] if "prediction" in c]
    if comps:
        lines += ["", "| conc. | speedup meas. / pred. (ratio) | note |", "|---:|---:|---|"]
        for c in comps:
            p = c["prediction"]
            lines.append(
                f"| {c['concurrency']} | {_f(p['measured_speedup'], '{:.2f}x')}"
                f" / {_f(p['predicted_speedup'], '{:.2f}x')}"
                f" ({_f(p['measured_over_predicted'], '{:.2f}')}) | {p['reason'] or ''} |"
            )
    lines += [
        "",
        "- the model is decode-only for one replica; measured throughput also holds prefill and"
        " queueing, so a ratio below 1 on tok/s is expected at short outputs",
        "",
    ]
    return lines
