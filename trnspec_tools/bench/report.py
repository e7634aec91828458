"""Markdown summaries and PNG plots of benchmark and tuning results.

Plots are drawn on a bare matplotlib Figure with the Agg canvas (no pyplot global state, no
display needed), and every file is written by trnspec.boundary.write.write_file (a temporary name
renamed when complete, regular targets only), so a crashed run never leaves half a report.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from trnspec.boundary.write import write_file

from trnspec_tools.bench.categories import categories_markdown
from trnspec_tools.bench.versus_predicted import prediction_markdown

Run = Mapping[str, Any]


#: the client's CPU share of the host above which a run on the server's own host is flagged
HOST_CPU_WARN_FRACTION = 0.03


def _f(value: object, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, int | float) else "-"


def _pct(value: object) -> str:
    return f"{value * 100:+.1f}%" if isinstance(value, int | float) else "-"


def _q(run: Run, key: str, q: str) -> object:
    block = run.get(key)
    return block.get(q) if isinstance(block, Mapping) else None


def runs_table(runs: Sequence[Run]) -> list[str]:
    lines = [
        "| arm | conc. | out tok/s | req/s | TTFT p50 / p99 ms | ITL p50 / p99 ms | TPOT p50 ms"
        " | E2E p50 ms | accept. rate | mean acc. len | k used | USD / 1M out tok | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        src = r.get("acceptance_source")
        mark = " (est.)" if src == "estimate-from-chunks" else ""
        errors = r.get("errors") or {}
        lines.append(
            f"| {r.get('arm', '-')} | {r.get('concurrency', '-')} "
            f"| {_f(r.get('output_tokens_per_s'))} | {_f(r.get('requests_per_s'), '{:.2f}')} "
            f"| {_f(_q(r, 'ttft_ms', 'p50'))} / {_f(_q(r, 'ttft_ms', 'p99'))} "
            f"| {_f(_q(r, 'itl_ms', 'p50'))} / {_f(_q(r, 'itl_ms', 'p99'))} "
            f"| {_f(_q(r, 'tpot_ms', 'p50'))} | {_f(_q(r, 'e2e_ms', 'p50'))} "
            f"| {_f(r.get('acceptance_rate'), '{:.3f}')}{mark} "
            f"| {_f(r.get('mean_accepted_length'), '{:.2f}')}{mark} "
            f"| {_f(r.get('k_used'), '{:.2f}')} "
            f"| {_f(r.get('cost_per_1m_output_tokens_usd'), '{:.2f}')} "
            f"| {errors.get('total', 0)} |"
        )
    return lines


def _order(cfg: Mapping[str, Any]) -> str:
    """How the arms were measured, when there were two: ', measured in the order target c=1,
    baseline c=1, baseline c=8, target c=8' (nothing for a file written before alternation)."""
    order = cfg.get("measurement_order")
    if not cfg.get("compare") or not order:
        return ""
    rounds = cfg.get("rounds") or 1
    each = f" ({rounds} rounds of each arm per level)" if rounds > 1 else ""
    return f", measured in the order{each} " + ", ".join(f"{arm} c={c}" for arm, c in order)


def _rounds_note(cfg: Mapping[str, Any]) -> list[str]:
    """What the runs table shows when each arm ran several rounds per level."""
    rounds = cfg.get("rounds") or 1
    if rounds < 2:
        return []
    return [
        f"Each arm ran {rounds} rounds per level: the table shows its round of median output"
        " tok/s (every round is in the JSON's `runs_by_round`); the speedup below is the median"
        " of the rounds' paired ratios, with their range (the 90 % interval of the median from"
        " five rounds on).",
        "",
    ]


def _speedup(c: Mapping[str, Any]) -> str:
    """'1.52x', or '1.52x (1.40-1.61)' with the spread of several rounds."""
    text = _f(c.get("speedup_output_tokens_per_s"), "{:.2f}x")
    low, high = c.get("speedup_low"), c.get("speedup_high")
    if isinstance(low, int | float) and isinstance(high, int | float):
        text += f" ({low:.2f}-{high:.2f})"
    return text


def bench_markdown(result: Mapping[str, Any]) -> str:
    """The human summary of a bench.py run (the JSON holds every figure)."""
    cfg = result.get("config", {})
    runs: list[Run] = result.get("runs", [])
    lines = [
        "# Benchmark summary",
        "",
        f"- endpoint: `{cfg.get('endpoint')}`, model `{cfg.get('model')}`, API {cfg.get('api')}",
        f"- baseline: `{cfg.get('compare') or 'none'}`{_order(cfg)}",
        f"- {cfg.get('num_prompts')} prompts, input {cfg.get('input_desc')}, output"
        f" {cfg.get('output_len')} tokens,"
        f" warm-up {cfg.get('warmup') or 'one per slot'} (excluded),"
        f" request rate {cfg.get('request_rate') or 'closed loop'}, seed {cfg.get('seed')}",
        f"- price: {_f(cfg.get('price_per_hour_usd'), '{:.3f}')} USD/h for"
        f" {cfg.get('instance_type')} ({cfg.get('price_source')})",
        f"- host load at start: {cfg.get('load_average', '-')}",
        "",
        *runs_table(runs),
        "",
        *_rounds_note(cfg),
    ]
    comparisons = result.get("comparison") or []
    if comparisons:
        lines += [
            "## Speculative vs baseline (same prompts, same order)",
            "",
            "| conc. | speedup (out tok/s) | ITL p50 change | TPOT p50 change | TTFT p50 change"
            " | E2E p50 change |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for c in comparisons:
            lines.append(
                f"| {c['concurrency']} | {_speedup(c)} "
                f"| {_pct(c.get('itl_p50_change'))} | {_pct(c.get('tpot_p50_change'))} "
                f"| {_pct(c.get('ttft_p50_change'))} | {_pct(c.get('e2e_p50_change'))} |"
            )
        lines.append("")
        lines += [f"- c={c['concurrency']}: {c['note']}" for c in comparisons if c.get("note")]
        lines.append("")
    pos_runs = [r for r in runs if r.get("acceptance_per_position")]
    if pos_runs:
        lines += ["## Acceptance by draft position (server counters)", ""]
        for r in pos_runs:
            vals = ", ".join(f"{v:.3f}" for v in r["acceptance_per_position"])
            lines.append(f"- {r.get('arm')} c={r.get('concurrency')}: {vals}")
        lines.append("")
    lines += prediction_markdown(result) + categories_markdown(result)
    sources = sorted({str(r.get("acceptance_source")) for r in runs})
    overhead = [r.get("tool_overhead_us_per_chunk") for r in runs]
    overhead = [o for o in overhead if isinstance(o, int | float)]
    lines += [
        "## Notes",
        "",
        f"- acceptance source: {', '.join(sources)} ('estimate-from-chunks' = tokens per streamed"
        " chunk, an estimate; 'server-metrics' = vllm:spec_decode_* counter deltas)",
        "- client parse overhead: "
        + (f"{max(overhead):.0f} us per chunk (max over runs)" if overhead else "-"),
        "- client CPU: "
        + ", ".join(
            f"{r.get('arm')} c={r.get('concurrency')}"
            f" {_f(r.get('tool_cpu_us_per_output_token'), '{:.0f}')} us/token"
            f" ({_f((r.get('tool_cpu_fraction_of_one_core') or 0) * 100, '{:.1f}')}% of a core)"
            for r in runs
        ),
    ]
    if warning := client_cpu_warning(runs, cfg):
        lines.append(f"- **warning**: {warning}")
    return "\n".join(lines) + "\n"


def client_cpu_warning(runs: Sequence[Run], cfg: Mapping[str, Any]) -> str | None:
    """A note when the client ran on the server's host and took more than a few percent of its
    CPU: that CPU was taken from the server, so the figures are biased against it."""
    cpus = cfg.get("cpu_count")
    if not cfg.get("client_on_server_host") or not isinstance(cpus, int) or cpus < 1:
        return None
    fractions = [
        f / cpus for r in runs if isinstance(f := r.get("tool_cpu_fraction_of_one_core"), float)
    ]
    worst = max(fractions, default=0.0)
    if worst <= HOST_CPU_WARN_FRACTION:
        return None
    return (
        f"the client ran on the server's host and used {worst * 100:.1f}% of its {cpus} CPUs"
        f" (more than {HOST_CPU_WARN_FRACTION * 100:.0f}%): that CPU was taken from the server,"
        " so throughput and latency are biased against it; run the client on another host"
    )


#: Every plot's legend: right of the axes, never over the data, and a fixed place ("best" searches
#: the data for a free corner, which is slow on large plots and warns after a time limit).
LEGEND_OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}


def figure_png(fig: Figure) -> bytes:
    """The figure as PNG bytes (for a writer that keeps a fallback copy: write_outputs)."""
    FigureCanvasAgg(fig)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    return png.getvalue()


def save_figure(fig: Figure, path: Path) -> None:
    """The figure as a PNG at `path`, written like every report file (trnspec.boundary.write)."""
    write_file(path, figure_png(fig))


def plot_latency_vs_throughput(runs: Sequence[Run], path: Path) -> Path:
    """Median TPOT, ITL and TTFT against output throughput, one line per arm, points labelled by
    concurrency. TPOT is the per-token figure; ITL is per chunk, which holds several tokens when
    drafts are accepted, so both are shown."""
    keys = (("tpot_ms", "median TPOT"), ("itl_ms", "median ITL"), ("ttft_ms", "median TTFT"))
    fig = Figure(figsize=(14, 4), layout="constrained")
    axes = fig.subplots(1, len(keys))
    arms = sorted({str(r.get("arm")) for r in runs})
    for arm in arms:
        pts = sorted(
            (r for r in runs if str(r.get("arm")) == arm),
            key=lambda r: r.get("output_tokens_per_s") or 0,
        )
        for ax, (key, _) in zip(axes, keys, strict=True):
            xs = [r.get("output_tokens_per_s") or 0 for r in pts]
            ys = [_q(r, key, "p50") for r in pts]
            keep = [(x, y, r) for x, y, r in zip(xs, ys, pts, strict=True) if y is not None]
            if not keep:
                continue
            ax.plot([k[0] for k in keep], [k[1] for k in keep], marker="o", label=arm)
            for x, y, r in keep:
                ax.annotate(
                    f"c={r.get('concurrency')}",
                    (x, y),
                    fontsize=7,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
    for ax, (_, title) in zip(axes, keys, strict=True):
        ax.set_xlabel("output tokens / s")
        ax.set_ylabel(f"{title} (ms)")
        ax.set_title(f"{title} vs throughput")
        ax.grid(True, alpha=0.3)
    if arms:  # the arms are the same in every panel: one legend, right of the last
        axes[-1].legend(**LEGEND_OUTSIDE)
    save_figure(fig, path)
    return path


def plot_acceptance_by_position(runs: Sequence[Run], path: Path) -> Path | None:
    """Per-position acceptance bars; None (no file) when no run exposed per-position counters."""
    pos_runs = [r for r in runs if r.get("acceptance_per_position")]
    if not pos_runs:
        return None
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    width = 0.8 / len(pos_runs)
    for j, r in enumerate(pos_runs):
        vals = r["acceptance_per_position"]
        xs = [i + 1 + (j - (len(pos_runs) - 1) / 2) * width for i in range(len(vals))]
        ax.bar(xs, vals, width=width, label=f"{r.get('arm')} c={r.get('concurrency')}")
    ax.set_xticks(range(1, max(len(r["acceptance_per_position"]) for r in pos_runs) + 1))
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance (fraction of drafts)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Acceptance by draft position")
    ax.legend(fontsize=7, **LEGEND_OUTSIDE)
    ax.grid(True, axis="y", alpha=0.3)
    save_figure(fig, path)
    return path
