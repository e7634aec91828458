"""Human-readable sizing plan for `trnspec plan` (rich table); presentation only."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from trnspec.checks.all_checks import Assessment
from trnspec.config.images import image_spec
from trnspec.config.serving import ServingConfig
from trnspec.hardware.sizing import CPU_KVCACHE_GIB, GIB, HEADROOM_FRACTION


def _gib(n: int) -> str:
    return f"{n / GIB:,.2f} GiB"


def _mib(n: int) -> str:
    return f"{n / 1024**2:,.1f} MiB"


def plan_tables(cfg: ServingConfig, assessment: Assessment) -> list[Table]:
    """The overview table and, when sizes are known, the per-model memory table."""
    spec = image_spec(cfg.image)
    plan = assessment.plan
    overview = Table(title=f"plan: {cfg.name}", show_header=False, title_justify="left")
    overview.add_column("item", style="bold")
    overview.add_column("value")
    overview.add_row("image", f"{spec.generation.value}  {spec.uri}")
    if spec.support_ended:
        overview.add_row("support", f"LEGACY: {spec.support_ended}")
    overview.add_row(
        "spec-decode signals",
        ", ".join(sorted(spec.spec_decode_signals)) or f"none exported ({spec.signals_note})",
    )
    s = cfg.speculation
    draft = f"{s.draft.name} ({s.draft.source})" if s.draft else "-"
    overview.add_row(
        "speculation",
        "none (baseline)" if s.method == "none" else f"{s.method}, k={s.num_speculative_tokens}",
    )
    overview.add_row("target", f"{cfg.target.name} ({cfg.target.source})")
    if s.method != "none":
        overview.add_row("draft", draft)
        if plan is not None and assessment.draft_shape is None:
            overview.add_row(
                "draft size",
                "not sized: not in the shape table and no local config.json (a DFlash drafter "
                "borrows the target's embedding and LM head); the plan below is the target's",
            )
    overview.add_row(
        "shape",
        f"max_model_len={cfg.max_model_len}, max_num_seqs={cfg.max_num_seqs}, dtype={cfg.dtype}, "
        f"buckets={cfg.sequence_buckets or 'runtime default'}",
    )
    if plan is not None and plan.on_trn2:
        overview.add_row(
            "placement",
            f"{plan.instance_type}, LNC={plan.lnc}, TP={plan.tensor_parallel_size} logical cores "
            f"-> {plan.chips} chip(s) (aws.amazon.com/neuron: {plan.chips})",
        )
        overview.add_row("HBM of those chips", _gib(plan.hbm_bytes))
        overview.add_row(
            "needed",
            f"{_gib(plan.needed_bytes)} = {plan.tensor_parallel_size} shards x "
            f"{_gib(plan.bytes_per_shard)} + {_gib(plan.headroom_bytes)} headroom "
            f"({HEADROOM_FRACTION:.0%})",
        )
        verdict = "fits" if plan.fits else "DOES NOT FIT"
        overview.add_row("verdict", f"{verdict} ({plan.utilisation:.1%} of HBM)")
    elif plan is not None:
        overview.add_row("placement", "CPU engine (no Trn2 topology)")
        overview.add_row(
            "KV cache",
            f"{_mib(plan.kv_bytes)} of {CPU_KVCACHE_GIB} GiB VLLM_CPU_KVCACHE_SPACE "
            f"({'fits' if plan.fits else 'DOES NOT FIT'})",
        )
    elif not spec.runs_on_trn2:
        overview.add_row(
            "sizing", "skipped: model shapes unknown (no config.json at the sources yet)"
        )
    else:
        overview.add_row("sizing", "not computed (see the problems below)")
    tables = [overview]
    if plan is not None:
        models = Table(title="memory per model", title_justify="left")
        for col in (
            "role",
            "model",
            "params",
            "weights",
            "weights/shard",
            "KV/token",
            "KV total",
            "KV/shard",
            "shape from",
        ):
            models.add_column(
                col, justify="left" if col in ("role", "model", "shape from") else "right"
            )
        for f in plan.footprints:
            models.add_row(
                f.role,
                f.shape.name,
                f"{f.params / 1e9:.2f} B",
                _gib(f.weight_bytes),
                _mib(f.weight_bytes_per_shard),
                f"{f.kv_bytes_per_token / 1024:.0f} KiB",
                _gib(f.kv_bytes),
                _mib(f.kv_bytes_per_shard),
                f.shape.origin,
            )
        tables.append(models)
    return tables


def print_plan(cfg: ServingConfig, assessment: Assessment, console: Console | None = None) -> None:
    out = console or Console(width=120)
    for table in plan_tables(cfg, assessment):
        out.print(table)
