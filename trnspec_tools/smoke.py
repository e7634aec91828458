"""Smoke checks for any OpenAI-compatible endpoint serving with speculative decoding.

    python scripts/smoke.py --endpoint http://127.0.0.1:8000 [--baseline-endpoint URL]
    python scripts/smoke.py --stack TrnspecPlatform-serving --region us-east-2 [--via port-forward]

Checks: the model list; completions and chat, streamed and not; finish reasons and usage counts
agree with each other; under greedy decoding the streamed text equals the non-streamed text;
with `--baseline-endpoint`, the speculative server's greedy outputs equal the baseline's token for
token (speculation must be lossless); the spec-decode counters on `/metrics` move consistently
(an endpoint that exports none, such as the Neuron fork's fused speculation, is reported as
"acceptance not checked" with the reason, not as a failure). Every request has a deadline
(--connect-timeout, --first-byte-timeout, --timeout) and is retried only before the first byte of
an answer; with --stack, every AWS and Kubernetes API call has --timeout in all (not per read).
Prints a table and exits non-zero naming every failed check.

`run_smoke(...)` is the library entry point (the demo and the tests use it) and returns
structured results; nothing here prints unless `main` is called.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text
from trnspec.boundary.errors import exits_on_bad_input
from trnspec.boundary.problems import InputError, Problem
from trnspec.boundary.text import rich_text

from trnspec_tools.boundary.endpoint import Endpoint, bind_key
from trnspec_tools.client.client_args import (
    add_client_args,
    add_model_args,
    api_key,
    client_arg_problems,
    deadlines,
)
from trnspec_tools.client.metrics import (
    NO_COUNTERS,
    MetricsFormatError,
    SpecDecodeCounters,
    checked_delta,
)
from trnspec_tools.client.openai_client import EndpointError, Generation, OpenAIClient
from trnspec_tools.client.served_model import NoServedModel, choose_model
from trnspec_tools.client.stack_endpoint import StackError, add_stack_arguments, resolve_endpoint
from trnspec_tools.smoke_wake import WAKE_BUDGET_MINUTES, wake_stack

COMPLETION_PROMPTS = (
    "import json\n\n\ndef filter_orders(orders):\n",
    "from dataclasses import dataclass\n\n\nclass Sensor:\n",
    "import os\n\n\ndef count_files(files):\n",
)
CHAT_MESSAGE = "Write a Python function that sorts users by age."


@dataclass(frozen=True)
class Check:
    """One line of the report. `ok is None` means skipped (with the reason in `detail`)."""

    name: str
    ok: bool | None
    detail: str = ""


@dataclass
class SmokeResult:
    endpoint: str
    model: str | None
    checks: list[Check] = field(default_factory=list)
    greedy: dict[str, Generation] = field(default_factory=dict)
    """The greedy completions by prompt, for callers that compare servers themselves."""

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]

    @property
    def ok(self) -> bool:
        return not self.failures


def _consistency(gen: Generation, max_tokens: int) -> list[str]:
    """What is wrong with a generation's finish reason and usage counts (empty if nothing)."""
    problems = []
    if gen.finish_reason not in ("stop", "length"):
        problems.append(f"finish_reason={gen.finish_reason!r}, expected 'stop' or 'length'")
    if gen.completion_tokens is None or gen.prompt_tokens is None:
        problems.append("usage counts missing")
        return problems
    if gen.total_tokens != gen.prompt_tokens + gen.completion_tokens:
        problems.append(
            f"usage total_tokens={gen.total_tokens} != prompt_tokens {gen.prompt_tokens} + "
            f"completion_tokens {gen.completion_tokens}"
        )
    if gen.finish_reason == "length" and gen.completion_tokens != max_tokens:
        problems.append(
            f"finish_reason='length' but completion_tokens={gen.completion_tokens} "
            f"(max_tokens={max_tokens})"
        )
    if gen.completion_tokens > max_tokens:
        problems.append(f"completion_tokens={gen.completion_tokens} > max_tokens={max_tokens}")
    if gen.token_ids is not None and len(gen.token_ids) != gen.completion_tokens:
        problems.append(
            f"{len(gen.token_ids)} token ids returned but completion_tokens={gen.completion_tokens}"
        )
    return problems


def _same_output(a: Generation, b: Generation) -> str | None:
    """None if the two outputs are identical (token ids when both have them, and text), else
    why not."""
    if a.token_ids is not None and b.token_ids is not None and a.token_ids != b.token_ids:
        first = next(
            (i for i, (x, y) in enumerate(zip(a.token_ids, b.token_ids, strict=False)) if x != y),
            min(len(a.token_ids), len(b.token_ids)),
        )
        return f"token ids differ from position {first} ({len(a.token_ids)} vs {len(b.token_ids)})"
    if a.text != b.text:
        return f"texts differ: {a.text[:40]!r}... vs {b.text[:40]!r}..."
    return None


def _guard(checks: list[Check], name: str, fn: Callable[[], Check]) -> None:
    """Run one check; a failed request becomes a failed check, not a crash of the whole run."""
    try:
        checks.append(fn())
    except (EndpointError, MetricsFormatError, KeyError, TypeError, ValueError) as exc:
        checks.append(Check(name, False, f"{type(exc).__name__}: {exc}"))


def _models_check(client: OpenAIClient, result: SmokeResult, model: str | None) -> Check:
    """/v1/models lists the model asked for (or any, then the first is used)."""
    ids = client.models()
    if model is not None and ids and model not in ids:
        return Check("models", False, f"{model!r} not served; served: {ids}")
    try:
        result.model = choose_model(ids, client.base_url, model)
    except NoServedModel as exc:
        return Check("models", False, str(exc))
    return Check("models", True, ", ".join(ids))


def _counters_before(
    client: OpenAIClient, served: str, checks: list[Check]
) -> tuple[SpecDecodeCounters | None, str | None]:
    """The spec-decode counters before the checks' requests, or why acceptance is skipped (a
    failed scrape is a failed check)."""
    try:
        return SpecDecodeCounters.from_text(client.metrics_text(), served), None
    except EndpointError as exc:
        if "HTTP 404" in str(exc):
            return None, "acceptance not checked: the endpoint has no /metrics"
        checks.append(Check("spec-decode metrics", False, f"/metrics: {exc}"))
    except MetricsFormatError as exc:
        checks.append(Check("spec-decode metrics", False, f"/metrics: {exc}"))
    return None, None


def _endpoint_checks(
    checks: list[Check], kind: str, call: Callable[..., Generation], max_tokens: int
) -> None:
    """One greedy request, non-streamed then streamed: each consistent, and the same output."""
    greedy: dict[str, Any] = {"temperature": 0.0, "max_tokens": max_tokens}
    plain: list[Generation] = []

    def non_streamed() -> Check:
        gen = call(**greedy)
        plain.append(gen)
        problems = _consistency(gen, max_tokens)
        detail = "; ".join(problems) or (
            f"{gen.completion_tokens} tokens, finish_reason={gen.finish_reason}"
        )
        return Check(f"{kind}", not problems, detail)

    def streamed() -> Check:
        gen = call(stream=True, **greedy)
        problems = _consistency(gen, max_tokens)
        if plain and (why := _same_output(gen, plain[0])):
            problems.append(f"streamed != non-streamed under greedy: {why}")
        compared = (
            "same text as non-streamed"
            if plain
            else "not compared with non-streamed (that request failed)"
        )
        detail = "; ".join(problems) or f"{gen.chunks} chunks, {compared}"
        return Check(f"{kind} (stream)", not problems, detail)

    _guard(checks, kind, non_streamed)
    _guard(checks, f"{kind} (stream)", streamed)


def _metrics_check(client: OpenAIClient, served: str, before: SpecDecodeCounters) -> Check:
    """The counters moved consistently over the checks' requests: their acceptance."""
    after = SpecDecodeCounters.from_text(client.metrics_text(), served)
    checked = checked_delta(before, after)
    if checked.reason == NO_COUNTERS:
        return Check(
            "spec-decode metrics",
            None,
            f"acceptance not checked: {NO_COUNTERS} (e.g. the Neuron fork's fused"
            " speculation); measure it with bench.py's chunk estimate",
        )
    if checked.delta is None:
        return Check("spec-decode metrics", False, str(checked.reason))
    delta = checked.delta
    rate = delta.accepted_tokens / delta.draft_tokens
    return Check(
        "spec-decode metrics",
        True,
        f"+{delta.drafts:.0f} drafts, +{delta.draft_tokens:.0f} draft tokens, "
        f"acceptance {rate:.2f}",
    )


def _lossless(
    checks: list[Check],
    result: SmokeResult,
    baseline: str | Mapping[str, Generation] | None,
    client_factory: Callable[[str], OpenAIClient],
    max_tokens: int,
) -> None:
    """The greedy outputs against a baseline endpoint's (a URL) or an earlier run's."""
    name = "lossless vs baseline"
    if baseline is None:
        checks.append(Check(name, None, "no --baseline-endpoint given"))
        return
    if isinstance(baseline, str):
        greedy: dict[str, Any] = {"temperature": 0.0, "max_tokens": max_tokens}
        served = result.model or ""
        reference: Callable[[], Mapping[str, Generation]] = lambda: _baseline_outputs(  # noqa: E731
            client_factory, baseline, list(result.greedy), greedy, served
        )
    else:
        reference = lambda: baseline  # noqa: E731
    _guard(checks, name, lambda: lossless_check(result.greedy, reference()))


def run_smoke(
    endpoint: str,
    *,
    baseline_endpoint: str | None = None,
    baseline_greedy: Mapping[str, Generation] | None = None,
    model: str | None = None,
    max_tokens: int = 48,
    expect_speculation: bool = True,
    prompts: Sequence[str] = COMPLETION_PROMPTS,
    chat_message: str = CHAT_MESSAGE,
    client_factory: Callable[[str], OpenAIClient] = OpenAIClient,
) -> SmokeResult:
    """Run every check against `endpoint` and return the results (never raises on a failed
    check; a check whose request fails is reported as failed with the error).

    The lossless check compares with `baseline_endpoint` if given, else with `baseline_greedy`
    (the `.greedy` of an earlier run against a baseline server that is no longer up, which is
    how the demo compares two servers it runs one after the other)."""
    with client_factory(endpoint) as client:
        result = SmokeResult(endpoint=client.base_url, model=model)
        checks = result.checks
        _guard(checks, "models", lambda: _models_check(client, result, model))
        if result.model is None:
            return result
        served = result.model
        before, metrics_skip = (
            _counters_before(client, served, checks) if expect_speculation else (None, None)
        )
        for i, prompt in enumerate(prompts):

            def call(prompt: str = prompt, **params: Any) -> Generation:
                gen = client.complete(served, prompt, **params)
                if not params.get("stream"):
                    result.greedy[prompt] = gen
                return gen

            _endpoint_checks(checks, f"completion #{i + 1}", call, max_tokens)
        _endpoint_checks(
            checks, "chat", lambda **params: client.chat(served, chat_message, **params), max_tokens
        )
        baseline = baseline_endpoint if baseline_endpoint is not None else baseline_greedy
        _lossless(checks, result, baseline, client_factory, max_tokens)
        if metrics_skip is not None:
            checks.append(Check("spec-decode metrics", None, metrics_skip))
        elif expect_speculation and before is not None:
            counted = before
            _guard(checks, "spec-decode metrics", lambda: _metrics_check(client, served, counted))
        elif not expect_speculation:
            checks.append(Check("spec-decode metrics", None, "speculation not expected"))
    return result


def _baseline_outputs(
    client_factory: Callable[[str], OpenAIClient],
    baseline_endpoint: str,
    prompts: list[str],
    params: dict[str, Any],
    model: str,
) -> dict[str, Generation]:
    with client_factory(baseline_endpoint) as baseline:
        try:
            base_model = choose_model(baseline.models(), baseline.base_url, model)
        except NoServedModel as exc:
            raise EndpointError(str(exc)) from None
        return {prompt: baseline.complete(base_model, prompt, **params) for prompt in prompts}


def lossless_check(outputs: Mapping[str, Generation], reference: Mapping[str, Generation]) -> Check:
    """Every greedy output must equal the baseline's for the same prompt, token for token."""
    name = "lossless vs baseline"
    if not outputs:
        return Check(name, False, "no greedy outputs to compare")
    mismatches = []
    for prompt, gen in outputs.items():
        if prompt not in reference:
            mismatches.append(f"prompt {prompt[:30]!r}: no baseline output")
        elif why := _same_output(gen, reference[prompt]):
            mismatches.append(f"prompt {prompt[:30]!r}: {why}")
    if mismatches:
        return Check(name, False, "; ".join(mismatches))
    return Check(name, True, f"{len(outputs)} greedy outputs identical")


def report_table(result: SmokeResult, title: str | None = None) -> Table:
    # outside text (endpoint, model id, server answers) is escaped: rich would read "[/]" as markup
    table = Table(
        title=title or rich_text(f"smoke: {result.endpoint} ({result.model or 'no model'})", 400)
    )
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    for check in result.checks:
        status = {True: "[green]ok", False: "[red]FAIL", None: "[yellow]skipped"}[check.ok]
        table.add_row(check.name, status, rich_text(check.detail, 2000))
    return table


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """The smoke test flags (`python -m trnspec_tools smoke` and scripts/smoke.py)."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--endpoint", help="base URL, e.g. http://127.0.0.1:8000")
    add_stack_arguments(parser, where)
    parser.add_argument(
        "--wake-minutes",
        type=float,
        default=WAKE_BUDGET_MINUTES,
        help="with --stack on a deploy that scales to zero: how long to wait for a woken "
        f"replica (default {WAKE_BUDGET_MINUTES:g}: a cold start from zero nodes is 7-17 min)",
    )
    parser.add_argument("--baseline-endpoint", default=None)
    add_model_args(parser, api=False)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument(
        "--no-speculation",
        action="store_true",
        help="do not require spec-decode counters (e.g. against a baseline server)",
    )
    add_client_args(parser.add_argument_group("client (deadlines per request, retries, API key)"))


@exits_on_bad_input("smoke.py")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="smoke.py", description=__doc__.split("\n\n")[0])
    add_cli_args(parser)
    args = parser.parse_args(argv)
    console = Console()
    try:
        problems = client_arg_problems(args)
        if args.max_tokens < 1:
            problems.insert(0, Problem("--max-tokens", args.max_tokens, "must be at least 1"))
        if problems:
            raise InputError(problems)
        for flag, url in (
            ("--endpoint", args.endpoint),
            ("--baseline-endpoint", args.baseline_endpoint),
        ):
            if url is not None:
                Endpoint.parse(url, flag)  # a BoundaryError (an InputError) naming the flag
        key, limits, retries = api_key(args), deadlines(args), args.max_retries
        if args.stack:
            if not 0 < args.wake_minutes <= 180:
                raise InputError([Problem("--wake-minutes", args.wake_minutes, "0 < m <= 180")])
            # A deploy that scales to zero has no pod to forward to: wake it first.
            wake_stack(
                args.stack,
                args.region,
                args.wake_minutes,
                log=console.print,
                timeout_s=args.timeout,
            )
        with resolve_endpoint(args) as endpoint:
            result = run_smoke(
                endpoint,
                baseline_endpoint=args.baseline_endpoint,
                model=args.model,
                max_tokens=args.max_tokens,
                expect_speculation=not args.no_speculation,
                client_factory=lambda url: OpenAIClient(
                    url,
                    deadlines=limits,
                    retries=retries,
                    api_key=bind_key(key, endpoint),
                    retry_after_cap_s=args.retry_after_cap,
                ),
            )
    # Bad input (exit 2, not a failed check) and a stack that cannot be found, on the console.
    except (InputError, StackError) as exc:
        console.print(Text.assemble(("error: ", "red"), rich_text(exc, 2000)))
        return 2
    console.print(report_table(result))
    if not result.ok:
        names = ", ".join(c.name for c in result.failures)
        console.print(f"[red]FAILED ({len(result.failures)}): {names}")
        return 1
    skipped = [c.name for c in result.checks if c.ok is None]
    console.print(
        "[green]all checks passed"
        + (f" ({len(skipped)} not checked: {', '.join(skipped)})" if skipped else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
