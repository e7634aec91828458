"""`python -m trnspec predict`: decode speed and cost per 1M output tokens of a profile on Trn2.

    python -m trnspec predict --profile qwen3-32b-draft --acceptance-length 3.5 --batch 1,4,16

For every (batch, k) it prints TPOT, output tokens/s of one replica, the speedup over k=0 at the
same batch and the cost per million output tokens of the whole instance (all replicas busy), then
the best k per batch and the batch from which speculation no longer pays. The numbers come from
`trnspec.perf.step_time` with constants fitted to published Trn2 figures (`trnspec.perf.trn2_fit`);
`--format json` lists every constant used with its source. Bad input exits 2 naming the flag.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from trnspec.boundary.args import float_arg, int_arg, price_arg, text_arg
from trnspec.cli.config_args import config_from_args
from trnspec.plan.batch_verdicts import undecided_batches, verdicts_text
from trnspec.plan.predict import PredictQuery, PredictReport, Row, build

#: The line `trnspec --help` lists for the subcommand.
HELP = "predict TPOT, tokens/s and cost per 1M output tokens on Trn2, per batch and k"
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


def query_from_args(args: argparse.Namespace) -> PredictQuery:
    """The parsed flags as the model's query (each field is the flag of the same name)."""
    return PredictQuery(**{f.name: getattr(args, f.name) for f in fields(PredictQuery)})


def main(args: argparse.Namespace) -> int:
    report = build(query_from_args(args), config_from_args(args))
    if args.format == "json":
        # json_io.dumps: never NaN or Infinity (a figure that is not finite is null)
        print(report.to_json(), end="")
    else:
        print(format_table(report))
    return 0


def format_table(report: PredictReport) -> str:
    """Rows grouped by batch, the best k of each marked, then the verdict on large batches."""
    best = report.best_k_per_batch
    per = report.inputs["replicas_per_instance"]
    lines = [
        f"profile {report.profile}: one replica, {per.value} per instance"
        f" ({per.source.split('; limited by ')[-1]});"
        " cost = instance price / (replicas x tokens/s)",
        f"{'batch':>5} {'k':>3} {'tok/step':>8} {'TPOT ms':>8} {'tok/s':>9} {'speedup':>8}"
        f" {'$/1M out':>9} {'error':>7} {'held':>7}  bound",
    ]
    for r in report.rows:
        cost = r.cost_per_1m_output_tokens_usd
        mark = " <- best" if best.get(r.batch) == r.k else ""
        over = "" if r.within_max_num_seqs else " (above max_num_seqs)"
        lines.append(
            f"{r.batch:>5} {r.k:>3} {r.tokens_per_step:>8.2f} {r.tpot_ms:>8.2f}"
            f" {r.output_tokens_per_s:>9.1f} {r.speedup:>7.2f}x"
            f" {(f'{cost:.3f}' if cost is not None else '-'):>9} {_band_cell(r):>7}"
            f" {_held_cell(r):>7}"
            f"  {r.target_bound}{mark}{over}"
        )
    lines.append("best k per batch: " + ", ".join(f"{b}: k={k}" for b, k in sorted(best.items())))
    lines += _verdict_lines(report)
    if report.cost_note:
        lines.append(f"cost: not shown: {report.cost_note}")
    lines += _band_notes(report)
    return "\n".join(lines)


def _verdict_lines(report: PredictReport) -> list[str]:
    """How sure the model is at each batch, and where speculation stops paying."""
    if not report.batch_verdicts:
        return ["no k > 0 asked for: nothing to compare"]
    verdicts = {v.batch: v for v in report.batch_verdicts}
    lines = [
        "how sure (the best k's speedup with both error bands against it, then for it): "
        + verdicts_text(report.batch_verdicts)
    ]
    if unsure := undecided_batches(report.batch_verdicts):
        lines.append(
            f"undecided at batch {unsure}: the model cannot tell speculation from plain"
            " there; measure (tune --schedule against your endpoint, or plan-deploy's"
            " calibration) before choosing"
        )
    stop = report.speculation_stops_paying_at_batch
    if stop is None:
        lines.append("speculation pays at every batch given")
    elif verdicts[stop].sure:
        lines.append(
            f"speculation no longer pays from batch {stop}: serve batches of {stop} and more"
            " with k=0"
        )
    else:
        lines.append(
            f"speculation no longer pays from batch {stop} as predicted, but the bands cannot tell"
            f" there: measure before serving batches of {stop} and more with k=0"
        )
    return lines


def _band_cell(row: Row) -> str:
    return f"+/-{row.error_band:.0%}" if row.error_band is not None else "unknown"


def _held_cell(row: Row) -> str:
    """How often bands of this kind held on unseen sources, as inside/with a band ('-': not
    measured, as after a refit with measured rows)."""
    return f"{row.error_band_held[0]}/{row.error_band_held[1]}" if row.error_band_held else "-"


def _band_notes(report: PredictReport) -> list[str]:
    """The error column's meaning per regime, then every way the query is outside the data."""
    notes = sorted({r.error_band_note for r in report.rows})
    lines = [
        "error (band from sources the fit never saw; held: how often bands of that kind held"
        " figures of unseen sources; unknown: measure it):",
        *(f"  {n}" for n in notes),
    ]
    lines += [f"outside the published data: {o}" for o in report.outside_data]
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `predict` (after the config flags)."""
    acc = p.add_mutually_exclusive_group()
    acc.add_argument(
        "--acceptance-rate", type=float_arg(0, 1), help="per-token acceptance a in [0, 1]"
    )
    acc.add_argument(
        "--acceptance-length",
        type=float_arg(1, 1000),
        help="mean tokens emitted per verification step (as published), at --acceptance-k",
    )
    p.add_argument(
        "--acceptance-k",
        type=int_arg(1, 1000),
        help="the k the acceptance length was measured at (default: the profile's k)",
    )
    p.add_argument(
        "--batch", type=text_arg(), help="batch sizes, e.g. 1,4,16 (default 1,2,4,8,16,32)"
    )
    p.add_argument(
        "--k",
        type=text_arg(),
        help="windows, e.g. 0,3,7 (0 = no speculation; default 0..image max)",
    )
    p.add_argument(
        "--price-per-hour",
        type=price_arg(),
        help="USD per instance hour, 0.01 to 10000 (default: table)",
    )
    p.add_argument(
        "--input-len", type=int_arg(1, 10_000_000), default=512, help="prompt tokens (default 512)"
    )
    p.add_argument(
        "--output-len", type=int_arg(1, 10_000_000), default=256, help="output tokens (default 256)"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
