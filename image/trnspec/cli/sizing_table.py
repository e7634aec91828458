"""The HBM sizing plan `trnspec plan` prints (rich tables); presentation only.

"plan" here is the sizing plan of trnspec.hardware.sizing (does the config fit the chips?), not
`plan-deploy`'s deployment (trnspec.plan.deploy_plan) nor the steps `serve` takes
(trnspec.serve.steps).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from trnspec.checks.all_checks import Assessment
from trnspec.config.images import ImageSpec, image_spec
from trnspec.config.serving import ServingConfig
from trnspec.hardware.sizing import CPU_KVCACHE_GIB, GIB, HEADROOM_FRACTION, SizingPlan

#: The per-model memory table's columns; the rest are right-aligned figures.
MODEL_COLUMNS = (
    "role",
    "model",
    "params",
    "weights",
    "weights/shard",
    "KV/token",
    "KV total",
    "KV/shard",
    "shape from",
)
_TEXT_COLUMNS = ("role", "model", "shape from")

Row = tuple[str, str]


def _gib(n: int) -> str:
    return f"{n / GIB:,.2f} GiB"


def _mib(n: int) -> str:
    return f"{n / 1024**2:,.1f} MiB"


def _image_rows(spec: ImageSpec) -> list[Row]:
    rows = [("image", f"{spec.generation.value}  {spec.uri}")]
    if spec.support_ended:
        rows.append(("support", f"LEGACY: {spec.support_ended}"))
    rows.append(
        (
            "spec-decode signals",
            ", ".join(sorted(spec.spec_decode_signals)) or f"none exported ({spec.signals_note})",
        )
    )
    return rows


def _config_rows(cfg: ServingConfig, assessment: Assessment) -> list[Row]:
    """What the config serves: the speculation, the models and the shape of the engine."""
    s = cfg.speculation
    window = f"{s.method}, k={s.num_speculative_tokens}"
    rows = [
        ("speculation", "none (baseline)" if s.method == "none" else window),
        ("target", f"{cfg.target.name} ({cfg.target.source})"),
    ]
    if s.method != "none":
        rows.append(("draft", f"{s.draft.name} ({s.draft.source})" if s.draft else "-"))
        if assessment.plan is not None and assessment.draft_shape is None:
            rows.append(
                (
                    "draft size",
                    "not sized: not in the shape table and no local config.json (a DFlash drafter "
                    "borrows the target's embedding and LM head); the plan below is the target's",
                )
            )
    rows.append(
        (
            "shape",
            f"max_model_len={cfg.max_model_len}, max_num_seqs={cfg.max_num_seqs}, "
            f"dtype={cfg.dtype}, buckets={cfg.sequence_buckets or 'runtime default'}",
        )
    )
    return rows


def _fit_rows(plan: SizingPlan | None, spec: ImageSpec) -> list[Row]:
    """Where the replica runs and whether it fits (or why it was not sized)."""
    if plan is not None and plan.on_trn2:
        verdict = "fits" if plan.fits else "DOES NOT FIT"
        return [
            (
                "placement",
                f"{plan.instance_type}, LNC={plan.lnc}, TP={plan.tensor_parallel_size} logical "
                f"cores -> {plan.chips} chip(s) (aws.amazon.com/neuron: {plan.chips})",
            ),
            ("HBM of those chips", _gib(plan.hbm_bytes)),
            (
                "needed",
                f"{_gib(plan.needed_bytes)} = {plan.tensor_parallel_size} shards x "
                f"{_gib(plan.bytes_per_shard)} + {_gib(plan.headroom_bytes)} headroom "
                f"({HEADROOM_FRACTION:.0%})",
            ),
            ("verdict", f"{verdict} ({plan.utilisation:.1%} of HBM)"),
        ]
    if plan is not None:
        return [
            ("placement", "CPU engine (no Trn2 topology)"),
            (
                "KV cache",
                f"{_mib(plan.kv_bytes)} of {CPU_KVCACHE_GIB} GiB VLLM_CPU_KVCACHE_SPACE "
                f"({'fits' if plan.fits else 'DOES NOT FIT'})",
            ),
        ]
    if not spec.runs_on_trn2:
        return [("sizing", "skipped: model shapes unknown (no config.json at the sources yet)")]
    return [("sizing", "not computed (see the problems below)")]


def overview_rows(cfg: ServingConfig, assessment: Assessment) -> list[Row]:
    """The overview table's (item, value) rows."""
    spec = image_spec(cfg.image)
    return [
        *_image_rows(spec),
        *_config_rows(cfg, assessment),
        *_fit_rows(assessment.plan, spec),
    ]


def model_rows(plan: SizingPlan) -> list[tuple[str, ...]]:
    """One row per model (target, draft) in MODEL_COLUMNS order."""
    return [
        (
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
        for f in plan.footprints
    ]


def sizing_tables(cfg: ServingConfig, assessment: Assessment) -> list[Table]:
    """The overview table and, when sizes are known, the per-model memory table."""
    overview = Table(title=f"plan: {cfg.name}", show_header=False, title_justify="left")
    overview.add_column("item", style="bold")
    overview.add_column("value")
    for row in overview_rows(cfg, assessment):
        overview.add_row(*row)
    if assessment.plan is None:
        return [overview]
    models = Table(title="memory per model", title_justify="left")
    for col in MODEL_COLUMNS:
        models.add_column(col, justify="left" if col in _TEXT_COLUMNS else "right")
    for row in model_rows(assessment.plan):
        models.add_row(*row)
    return [overview, models]


def print_sizing_plan(
    cfg: ServingConfig, assessment: Assessment, console: Console | None = None
) -> None:
    out = console or Console(width=120)
    for table in sizing_tables(cfg, assessment):
        out.print(table)
