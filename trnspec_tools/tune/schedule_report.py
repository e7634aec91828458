"""How a `tune --schedule` result reads: the Markdown summary and the plot per concurrency band.

`markdown(result)` gives the table of every candidate's ratio to plain per level (median [spread],
k used) and the recommendation with its per-level comparison to the best measured; `plot(result,
path)` draws the ratios with their spreads per level, the recommended candidate in bold.
`concurrency_axes` is the log2 concurrency axis this plot and `make demo`'s share.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trnspec_tools.bench.report import LEGEND_OUTSIDE, save_figure
from trnspec_tools.tune.schedule_choice import PLAIN
from trnspec_tools.tune.schedule_result import MeasuredCandidate, ScheduleResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def markdown(result: ScheduleResult) -> str:
    return "\n".join([*_table(result), *_recommendation(result)]) + "\n"


def _table(result: ScheduleResult) -> list[str]:
    """The workload and a row per candidate: its ratio to plain at every level."""
    w, levels = result.workload, result.levels
    prompts = {str(c): n for c, n in w.prompts_per_level.items()}
    bands = [list(b) for b in result.bands]
    lines = [
        "# Batch-aware speculation: candidates per concurrency band",
        "",
        f"- workload: {w.dataset}, output {w.output_len} tokens,"
        f" prompts per arm and round {prompts}, {w.rounds} alternated"
        f" rounds (ABBA), max_num_seqs {result.max_num_seqs}",
        f"- bands (batches per level): {bands}",
        f"- host load at start / end: {result.load_average} / {result.load_average_after}",
        "- each cell: median ratio to plain (same rounds, back to back) [spread], k used",
        "",
        "| candidate | " + " | ".join(f"c={c}" for c in levels) + " |",
        "|---|" + "---:|" * len(levels),
    ]
    plain_tps = result.plain_tokens_per_s
    lines.append(
        f"| {PLAIN} (tok/s) | "
        + " | ".join(f"1.00x ({plain_tps[c]:.0f} tok/s)" for c in levels)
        + " |"
    )
    for m in result.measured:
        lines.append(f"| {m.name} | " + " | ".join(_cell(m, c) for c in levels) + " |")
    return lines


def _cell(m: MeasuredCandidate, c: int) -> str:
    s, k = m.spreads.get(c), m.k_used.get(c)
    if s is None:
        return "-"
    return s.text() + (f", k {k:.2f}" if k is not None else "")


def _recommendation(result: ScheduleResult) -> list[str]:
    """The candidate recommended, how it compares with the best at each level, and its lines."""
    rec = result.recommendation
    choice = rec.choice
    lines = ["", "## Recommendation", "", f"**{rec.candidate.name}**", ""]
    for c, entry in rec.per_level.items():
        lines.append(
            f"- c={c}: {entry.chosen_spread.median:.2f}x plain;"
            f" best measured {entry.best} {entry.best_spread.median:.2f}x;"
            f" chosen / best = {entry.chosen_over_best:.3f}"
        )
    if choice.ties:
        lines.append(
            f"- within the measured spread of {choice.leader} at every level: "
            f"{', '.join(choice.ties)}; the simplest of them is recommended"
            " (the data cannot tell them apart)"
        )
    lines += [f"- {z.note()}" for z in result.zero_bands]
    lines += [
        "",
        f"render / bench --local: `{rec.set_line}`",
        "",
        f"deploy: `{rec.deploy_line}`",
        "",
        f"check against profile {result.profile}: {rec.override_check}",
    ]
    return lines


def plot(result: ScheduleResult, path: Path) -> Path:
    """Ratio to plain per level, one line per candidate, with the spread as error bars."""
    save_figure(bands_figure(result), path)
    return path


def bands_figure(result: ScheduleResult) -> Figure:
    """The plot's figure (a bare matplotlib Figure): one error-bar line per measured candidate."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    levels = result.levels
    for m in result.measured:
        xs = [c for c in levels if c in m.spreads]
        spreads = [m.spreads[c] for c in xs]
        med = [s.median for s in spreads]
        lo = [s.median - s.low for s in spreads]
        hi = [s.high - s.median for s in spreads]
        width = 2.2 if m.name == result.recommendation.candidate.name else 1.0
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, lw=width, label=m.name)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    concurrency_axes(
        ax,
        levels,
        "output tok/s relative to plain (alternated rounds)",
        "Candidates per concurrency band (bold: recommended)",
    )
    return fig


def concurrency_axes(ax: Any, levels: Sequence[int], ylabel: str, title: str) -> None:
    """A log2 concurrency axis with the measured levels as ticks, labels, grid and legend."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(levels), [str(c) for c in levels])
    ax.set_xlabel("concurrency")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, **LEGEND_OUTSIDE)
