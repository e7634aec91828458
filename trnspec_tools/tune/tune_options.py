"""tune's command line, parsed once at the edge into one typed, frozen options object.

`tune_options(args)` parses every list flag (--k, --concurrency, --batch-sizes, --endpoint-for-k)
and the client flags (one line naming the flag, the value and the fix, as a UsageError) and
returns the TuneOptions the sweep and `--schedule` read; no module below tune.main sees the
argparse namespace. The checks that depend on the combination of flags (remote or local arms, the
fit concurrency among the levels) stay with the code that uses them.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trnspec.boundary.problems import Problem

from trnspec_tools.bench.options import UsageError, parse_int_list
from trnspec_tools.bench.run import RunOptions, run_options_from_args
from trnspec_tools.bench.workload import Workload
from trnspec_tools.bench.workload_args import workload_of
from trnspec_tools.client.client_args import client_arg_problems
from trnspec_tools.client.metrics import MAX_POSITIONS


@dataclass(frozen=True)
class TuneOptions:
    """Everything a tune run reads, parsed."""

    #: --k: windows for the local launcher (None when not given)
    k: tuple[int, ...] | None
    #: --set profile overrides for the local launcher
    overrides: tuple[str, ...]
    #: --endpoint-for-k: an already running server per window
    endpoints: Mapping[int, str]
    baseline: str | None
    model: str | None
    #: --stack (and where to reach it): the deployed stack as the speculative arm
    stack: str | None
    region: str | None
    via: str
    levels: tuple[int, ...]
    fit_concurrency: int | None
    batches: tuple[int, ...]
    trn2_profile: str | None
    from_json: Path | None
    per_category: bool
    workload: Workload
    run: RunOptions
    k_max: int
    #: the profile the override line is checked against
    profile: str
    out: Path
    rows_out: Path | None
    #: where the override line goes (default: <out>.override)
    override_out: Path
    plots: bool
    schedule: bool
    rounds: int

    @property
    def remote(self) -> bool:
        """The arms are servers already running (--endpoint-for-k or --stack), not launched."""
        return bool(self.endpoints)

    def output_paths(self) -> list[tuple[str, Path]]:
        """The files a run writes, named for messages (checked for clashes before the run)."""
        return [
            ("--out", self.out),
            ("the Markdown summary", self.out.with_suffix(".md")),
            ("--override-out", self.override_out),
            *([("--rows-out", self.rows_out)] if self.rows_out else []),
        ]

    def input_paths(self) -> list[tuple[str, Path]]:
        """The files a run reads (no output may replace one of them)."""
        inputs = [("--from-json", self.from_json)] if self.from_json else []
        dataset = self.workload.dataset
        if dataset and Path(dataset).suffix == ".jsonl":
            inputs.append(("--dataset", Path(dataset)))
        return inputs


def input_clash(
    outputs: Sequence[tuple[str, Path]], inputs: Sequence[tuple[str, Path]]
) -> Problem | None:
    """The first output that is an input of the same run (the file it would replace holds what
    the run reads, e.g. the measurements of --from-json), as a problem naming it, else None."""
    for name, out in outputs:
        for in_name, given in inputs:
            if _same_file(out, given):
                return Problem(
                    name,
                    str(out),
                    f"is the {in_name} input of this run; writing it would replace what the run"
                    " reads (choose another path)",
                )
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def parse_endpoints(items: Sequence[str]) -> dict[int, str]:
    """--endpoint-for-k K=URL items as {K: URL}."""
    out: dict[int, str] = {}
    for item in items:
        k_text, sep, url = item.partition("=")
        k_text = k_text.strip()
        if not sep or not (k_text.isascii() and k_text.isdigit()) or len(k_text) > 2:
            k_text = ""
        if not k_text or k_text != str(int(k_text)) or not 1 <= int(k_text) <= MAX_POSITIONS:
            shown = item if len(item) <= 80 else f"{item[:40]}...{item[-20:]}"
            raise UsageError.of(
                "--endpoint-for-k",
                shown,
                f"use K=URL with K in 1..{MAX_POSITIONS}, e.g. 4=http://h:80",
            )
        if not url.startswith(("http://", "https://")):
            raise UsageError.of("--endpoint-for-k", item, f"{url!r} is not an http(s):// URL")
        out[int(k_text)] = url
    return out


def _windows(text: str) -> tuple[int, ...]:
    """--k: windows in 1..MAX_POSITIONS."""
    ks = tuple(parse_int_list("--k", text))
    if (big := max(ks)) > MAX_POSITIONS:
        raise UsageError.of("--k", big, f"a window is at most {MAX_POSITIONS} draft tokens")
    return ks


def tune_options(args: argparse.Namespace) -> TuneOptions:
    """The parsed options of a tune command line, or UsageError naming the flag."""
    if problems := client_arg_problems(args):
        raise UsageError(problems)
    return TuneOptions(
        k=_windows(args.k) if args.k else None,
        overrides=tuple(args.overrides),
        endpoints=parse_endpoints(args.endpoint_for_k),
        baseline=args.baseline,
        model=args.model,
        stack=args.stack,
        region=args.region,
        via=args.via,
        levels=tuple(parse_int_list("--concurrency", args.concurrency)),
        fit_concurrency=args.fit_concurrency,
        batches=tuple(parse_int_list("--batch-sizes", args.batch_sizes)),
        trn2_profile=args.trn2_profile,
        from_json=args.from_json,
        per_category=bool(args.per_category),
        workload=workload_of(args),
        run=run_options_from_args(args),
        k_max=args.k_max,
        profile=args.profile,
        out=args.out,
        rows_out=args.rows_out,
        override_out=args.override_out or args.out.with_suffix(".override"),
        plots=not args.no_plots,
        schedule=bool(args.schedule),
        rounds=args.rounds,
    )
