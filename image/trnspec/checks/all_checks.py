"""All pure checks in one call: `check(cfg)` lists every problem, `validate(cfg)` raises them.

Runs before anything starts (CLI `check`/`plan`/`render`, the serve entrypoint, CDK synth), so a
config the image cannot run, or one that does not fit the HBM of its cores, is refused in seconds
rather than after an hour of Neuron compilation.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.checks.compat import CONFIG_RULES, check_draft_against_target, legacy_warnings
from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, ModelRef, Problem, ServingConfig
from trnspec.hardware.model_shapes import ModelShape, ShapeError, known_model_names, resolve_shape
from trnspec.hardware.sizing import CPU_KVCACHE_GIB, GIB, SizingPlan, make_plan
from trnspec.hardware.topology import INSTANCE_TYPES


@dataclass(frozen=True)
class Assessment:
    """Everything the checks found: the problems, and the plan when it could be made."""

    problems: tuple[Problem, ...]
    plan: SizingPlan | None
    target_shape: ModelShape | None
    draft_shape: ModelShape | None


def _shape(ref: ModelRef | None, field: str, problems: list[Problem]) -> ModelShape | None:
    if ref is None:
        return None
    try:
        return resolve_shape(ref)
    except ShapeError as err:
        problems.append(
            Problem(f"{field}.source", ref.source, f"{err.reason}; fix or remove that file")
        )
        return None


def _unknown_shape(field: str, ref: ModelRef) -> Problem:
    return Problem(
        f"{field}.source",
        ref.source,
        "model size unknown, so the HBM fit cannot be checked: point the source at a local "
        f"directory with its config.json, name a known model ({', '.join(known_model_names())}), "
        "or set hardware.check_hbm=false to skip the check",
    )


def _smallest_fitting_tp(
    cfg: ServingConfig, plan: SizingPlan, target: ModelShape, draft: ModelShape | None
) -> int | None:
    inst = INSTANCE_TYPES[plan.instance_type]
    for degree in inst.valid_tp_degrees(plan.lnc):
        if degree > plan.tensor_parallel_size:
            trial = cfg.model_copy(update={"tensor_parallel_size": degree})
            if make_plan(trial, target, draft).fits:
                return degree
    return None


def _sizing_problems(
    cfg: ServingConfig, plan: SizingPlan, target: ModelShape, draft: ModelShape | None
) -> list[Problem]:
    if plan.fits:
        return []
    if not plan.on_trn2:
        return [
            Problem(
                "max_model_len",
                cfg.max_model_len,
                f"KV cache needs {plan.kv_bytes / GIB:.2f} GiB but the CPU engine gets "
                f"{CPU_KVCACHE_GIB} GiB; lower max_model_len or max_num_seqs",
            )
        ]
    degree = _smallest_fitting_tp(cfg, plan, target, draft)
    hint = f"use tensor_parallel_size={degree}" if degree else f"no TP on {plan.instance_type} fits"
    return [
        Problem(
            "tensor_parallel_size",
            cfg.tensor_parallel_size,
            f"needs {plan.needed_bytes / GIB:.1f} GiB (weights + KV cache + "
            f"{plan.headroom_bytes / GIB:.1f} GiB headroom) but its {plan.chips} chip(s) have "
            f"{plan.hbm_bytes / GIB:.0f} GiB HBM; {hint}, or lower max_model_len / max_num_seqs",
        )
    ]


def assess(cfg: ServingConfig) -> Assessment:
    """Run every rule; also return the sizing plan (used by `trnspec plan`)."""
    problems: list[Problem] = [p for rule in CONFIG_RULES for p in rule(cfg)]
    target = _shape(cfg.target, "target", problems)
    speculating = cfg.speculation.method != "none"
    draft = _shape(cfg.speculation.draft, "speculation.draft", problems) if speculating else None
    problems += check_draft_against_target(cfg, target, draft)

    spec = image_spec(cfg.image)
    topology_ok = not any(
        p.field in ("tensor_parallel_size", "hardware.instance_type") for p in problems
    )
    plan = None
    refs = [("target", cfg.target, target)]
    if speculating:
        refs.append(("speculation.draft", cfg.speculation.draft, draft))
    missing = [(f, r) for f, r, s in refs if r is not None and s is None]
    if cfg.speculation.method == "dflash" and draft is None:
        # Published DFlash drafters have no entry in the shape table (their configs are not
        # mirrored here); they are small and borrow the target's embedding and LM head, so the
        # plan sizes the target alone and says so (trnspec.cli.sizing_table), instead of refusing.
        missing = [(f, r) for f, r in missing if f != "speculation.draft"]
    if target is not None and topology_ok and not missing:
        plan = make_plan(cfg, target, draft)
        if cfg.hardware.check_hbm or not spec.runs_on_trn2:
            problems += _sizing_problems(cfg, plan, target, draft)
    elif spec.runs_on_trn2 and cfg.hardware.check_hbm:
        # a source whose config.json is unreadable is already named, with the cause
        named = {p.field for p in problems}
        problems += [_unknown_shape(f, r) for f, r in missing if f"{f}.source" not in named]
    return Assessment(tuple(problems), plan, target, draft)


def warnings(cfg: ServingConfig) -> list[Problem]:
    """What `check`, `plan` and `profiles` warn about without refusing (legacy images)."""
    return legacy_warnings(cfg)


def check(cfg: ServingConfig) -> list[Problem]:
    """Every problem with `cfg` (empty when it can run)."""
    return list(assess(cfg).problems)


def validate(cfg: ServingConfig) -> ServingConfig:
    """Raise ConfigError listing every problem; returns the config for chaining."""
    problems = check(cfg)
    if problems:
        raise ConfigError(problems)
    return cfg
