"""The workload flags the benchmark, the tuner and the side-by-side with `vllm bench serve` share,
declared once with one set of defaults (so the same command line means the same load in all
three)."""

from __future__ import annotations

import argparse

from trnspec.boundary.numbers import int_arg

from trnspec_tools.bench.workload import TINY_CORPUS, Workload

#: requests measured per arm and concurrency level
DEFAULT_NUM_PROMPTS = 32
#: synthetic prompt length in words (ignored with --dataset)
DEFAULT_INPUT_LEN = 64
#: max_tokens per request
DEFAULT_OUTPUT_LEN = 128
#: seed of the synthetic prompts, the dataset shuffle and the arrivals
DEFAULT_SEED = 0
#: concurrency levels of a sweep (bench, tune)
DEFAULT_CONCURRENCY = "1"

Group = argparse.ArgumentParser | argparse._ArgumentGroup


def add_workload_args(group: Group, *, sweep: bool = True, warmup: bool = True) -> None:
    """--num-prompts, --input-len, --output-len, --dataset, --seed; with `sweep` also
    --concurrency as a list of levels, with `warmup` also --warmup."""
    if sweep:
        group.add_argument(
            "--concurrency",
            default=DEFAULT_CONCURRENCY,
            help=f"one level or a sweep, e.g. 1,4,16 (default {DEFAULT_CONCURRENCY}; every arm"
            " is measured at every level)",
        )
    for flag, default, what in (
        ("--num-prompts", DEFAULT_NUM_PROMPTS, "requests per arm and level"),
        ("--input-len", DEFAULT_INPUT_LEN, "synthetic prompt length in words"),
        ("--output-len", DEFAULT_OUTPUT_LEN, "max_tokens per request"),
    ):
        group.add_argument(
            flag, type=int_arg(), default=default, help=f"{what} (default {default})"
        )
    group.add_argument(
        "--dataset",
        help=f'JSONL prompts ({{"prompt": ...}} per line), or "{TINY_CORPUS}": prompts in the '
        "style the local tiny models were trained on",
    )
    if warmup:
        group.add_argument(
            "--warmup",
            type=int_arg(0),
            help="warm-up requests, not measured (default: one per concurrency slot)",
        )
    group.add_argument(
        "--seed",
        type=int_arg(None, 2**63 - 1),
        default=DEFAULT_SEED,
        help=f"default {DEFAULT_SEED}",
    )


def workload_of(args: argparse.Namespace) -> Workload:
    """The parsed workload flags (add_workload_args) as one value."""
    return Workload(args.dataset, args.num_prompts, args.input_len, args.output_len, args.seed)
