"""Acceptance per prompt category: each category of a JSONL dataset measured as its own group.

Workloads differ (a writing assistant's prompts and a coding agent's do not accept drafts alike),
so when the dataset's lines carry "category", `bench.py --per-category` measures each category
separately. The spec-decode counters on /metrics are global to the server, so requests cannot be
attributed to categories after the fact: the categories run one after the other, each between
its own pair of /metrics scrapes (`run.run_level`), at one concurrency level on the
speculative arm. Off by default: it costs one more measured run per category.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from trnspec.boundary.problems import ABSENT, show

from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.versus_predicted import PredictionSetup, predict_run
from trnspec_tools.bench.workload import (
    TINY_CORPUS,
    WorkloadError,
    read_dataset,
    sample_or_cycle,
)
from trnspec_tools.client.request_spec import RequestSpec

#: the group of lines without a "category" in a dataset where other lines have one
UNCATEGORIZED = "uncategorized"

#: the per-run figures a category's entry keeps
KEPT = (
    "num_requests",
    "completed",
    "acceptance_rate",
    "mean_accepted_length",
    "acceptance_per_position",
    "acceptance_source",
    "acceptance_note",
    "spec_decode_deltas",
    "output_tokens_per_s",
    "tpot_ms",
    "errors",
)


def add_category_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--per-category",
        action="store_true",
        help='measure acceptance per "category" of a JSONL --dataset: each category runs on its'
        " own, between two /metrics scrapes, at the first --concurrency level",
    )


def dataset_categories(dataset: str | None) -> list[str]:
    """The distinct "category" values of a JSONL dataset ([] for none, synthetic or tiny-corpus,
    or a file that no longer reads: this runs when the report is written, after the run)."""
    if dataset is None or dataset == TINY_CORPUS:
        return []
    try:
        lines = read_dataset(Path(dataset), 1)
    except WorkloadError:
        return []
    return sorted({str(line.category) for line in lines if line.category not in (None, "")})


def category_groups(dataset: str | None, output_len: int) -> dict[str, list[RequestSpec]]:
    """The dataset's prompts grouped by "category" (lines without one: "uncategorized"), sorted by
    category. Refuses what cannot be grouped: no JSONL dataset, or no line with a category."""
    if dataset is None or dataset == TINY_CORPUS:
        raise WorkloadError(
            "--per-category", ABSENT, 'give a JSONL --dataset whose lines carry "category"'
        )
    path = Path(dataset)
    groups: dict[str, list[RequestSpec]] = {}
    for line in read_dataset(path, output_len):
        cat = line.category
        if cat is not None and not isinstance(cat, str | int):
            raise WorkloadError(
                "--dataset",
                f"{path} line {line.lineno}",
                f"category={show(cat)} must be a string or an integer",
            )
        groups.setdefault(str(cat) if cat not in (None, "") else UNCATEGORIZED, []).append(
            line.spec
        )
    if set(groups) <= {UNCATEGORIZED}:
        raise WorkloadError(
            "--per-category",
            ABSENT,
            f'no line of --dataset={path} carries a "category",'
            ' e.g. {"prompt": "def f(", "category": "code"}',
        )
    return dict(sorted(groups.items()))


def sample_groups(
    groups: Mapping[str, list[RequestSpec]], per_group: int, seed: int
) -> dict[str, list[RequestSpec]]:
    """Each group sampled (or cycled, when it is smaller) to `per_group` prompts, with one seeded
    generator over the groups in order, like the whole workload."""
    rng = random.Random(seed)
    return {cat: sample_or_cycle(specs, per_group, rng) for cat, specs in groups.items()}


def category_workloads(
    dataset: str | None, num_prompts: int, output_len: int, seed: int
) -> dict[str, list[RequestSpec]]:
    """bench's per-category workloads: `num_prompts` prompts of every category."""
    if num_prompts < 1:
        raise WorkloadError("--num-prompts", num_prompts, "must be at least 1")
    return sample_groups(category_groups(dataset, output_len), num_prompts, seed)


async def run_categories(
    endpoint: str,
    model: str,
    k: int | None,
    categories: Mapping[str, list[RequestSpec]],
    concurrency: int,
    opts: RunOptions,
    price: float | None,
    ps: PredictionSetup | None,
) -> dict[str, Any]:
    """`measure_categories` against a live speculative endpoint with the bench's options (and the
    model's prediction per category when bench has a --profile)."""
    run_opts = dataclasses.replace(opts, num_speculative_tokens=opts.num_speculative_tokens or k)

    async def measure(specs: list[RequestSpec], c: int) -> dict[str, Any]:
        run = await run_level(endpoint, model, specs, c, run_opts, price)
        stats = run.to_json()
        if ps is not None:
            stats["prediction"] = predict_run(ps, run, len(specs), speculative=True)
        return stats

    return await measure_categories(categories, concurrency, measure)


async def measure_categories(
    categories: Mapping[str, list[RequestSpec]],
    concurrency: int,
    measure: Callable[[list[RequestSpec], int], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """Each category measured on its own, one after the other (`measure(specs, concurrency)`
    warms up, scrapes /metrics, runs, scrapes again). Returns the JSON block."""
    out: dict[str, Any] = {}
    for cat, specs in categories.items():
        stats = await measure(specs, concurrency)
        out[cat] = {"num_prompts": len(specs), **{k: stats.get(k) for k in KEPT}}
        if "prediction" in stats:
            out[cat]["prediction"] = stats["prediction"]
    return {
        "concurrency": concurrency,
        "arm": "target",
        "method": "each category run alone between two /metrics scrapes (counters are global)",
        "categories": out,
    }


def _f(value: object, fmt: str) -> str:
    return fmt.format(value) if isinstance(value, int | float) else "-"


def categories_markdown(result: Mapping[str, Any]) -> list[str]:
    """The Markdown section: acceptance per category ([] when not measured); a hint when the
    dataset carries categories that were not measured."""
    block = result.get("per_category")
    if not block:
        found = (result.get("config") or {}).get("dataset_categories") or []
        if found:
            return [
                f"- the dataset tags {len(found)} categories ({', '.join(found[:8])}):"
                " pass --per-category to measure acceptance for each",
                "",
            ]
        return []
    lines = [
        f"## Acceptance per category (target, c={block['concurrency']}, each category run alone)",
        "",
        "| category | prompts | accept. rate | mean acc. len | out tok/s | TPOT p50 ms | source |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for cat, e in block["categories"].items():
        src = e.get("acceptance_source") or e.get("acceptance_note") or "-"
        lines.append(
            f"| {cat} | {e['num_prompts']} | {_f(e.get('acceptance_rate'), '{:.3f}')}"
            f" | {_f(e.get('mean_accepted_length'), '{:.2f}')}"
            f" | {_f(e.get('output_tokens_per_s'), '{:.1f}')}"
            f" | {_f((e.get('tpot_ms') or {}).get('p50'), '{:.2f}')} | {src} |"
        )
    lines.append("")
    return lines
