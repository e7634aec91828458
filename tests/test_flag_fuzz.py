"""Every flag of every command, fed hostile values: each run exits 0 or 2, never with a
traceback, and never prints nan or inf as a result.

The commands are enumerated, not listed: `trnspec`'s command table (trnspec.cli.main.SUBCOMMANDS,
walked through its argparse subparsers, `stage` actions included) and `python -m
trnspec_tools`'s table (trnspec_tools.cli.COMMANDS, each
module's parser captured as its `main` builds it). A new command or flag is fuzzed without
editing this file; a command whose required flags have no known-good value in `BASE` fails
`test_every_command_parses_its_base_arguments`, so it cannot be skipped silently.

In process, so it stays fast: every case is parsed (the `type=` readers run); the pure `trnspec`
commands (`RUNS`) then run in a temporary directory with no credentials and nothing reachable;
the tools in `STOP_AT` run their own validation up to the function that would measure (stubbed
to stop there). The others (S3 transfers, the tools that start vLLM or call AWS) stop after the
parse.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from trnspec.cli import main as trnspec_cli

from trnspec_tools import cli as tools_cli

HOSTILE = (
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "1000000000",
    "true",
    "",
    "x" * (1 << 20),
    "\x1b[31m",
)
#: A figure printed as nan or inf (not "info", "infer", "nano").
NOT_A_NUMBER = re.compile(r"(?<![A-Za-z])(nan|inf|infinity)(?![A-Za-z])", re.IGNORECASE)

#: Known-good values for each command's required arguments (by command path).
BASE: dict[str, list[str]] = {
    "trnspec check": ["--profile", "local-tiny"],
    "trnspec plan": ["--profile", "local-tiny"],
    "trnspec doctor": ["--profile", "local-tiny"],
    "trnspec render": ["--profile", "local-tiny"],
    "trnspec serve": ["--profile", "local-tiny", "--dry-run"],
    "trnspec predict": [
        *("--profile", "qwen3-32b-draft", "--acceptance-rate", "0.6"),
        *("--batch", "1,4", "--k", "0,3"),
    ],
    "trnspec plan-deploy": [
        *("--profile", "qwen3-4b-dflash", "--acceptance-rate", "0.6"),
        *("--tpot-ms", "30", "--peak-streams", "4", "--max-num-seqs", "1,4"),
    ],
    "trnspec stage download": ["s3://bkt/m", "dest"],
    "trnspec stage upload": ["src", "s3://bkt/m"],
    "trnspec stage hub": ["--work-dir", "w", "owner/name", "s3://bkt/m"],
    "trnspec stage verify": ["dir"],
    "trnspec stage cache-key": ["--profile", "local-tiny"],
    "tools bench": ["--endpoint", "http://127.0.0.1:9", "--out", "b.json"],
    "tools tune": ["--endpoint", "http://127.0.0.1:9", "--out", "t.json"],
    "tools smoke": ["--endpoint", "http://127.0.0.1:9"],
    "tools calibrate run": ["--plain", "http://127.0.0.1:9", "--speculative", "http://127.0.0.1:8"],
    "tools calibrate fetch": ["--stack", "trnspec-serving"],
    "tools manifests": [
        "--plan",
        str(Path(__file__).parents[1] / "config/plans/default.yaml"),
        "--check",
    ],
}
#: Commands run after the parse (pure: a config, the model, a file in the temporary directory).
RUNS = {
    "trnspec profiles",
    "trnspec check",
    "trnspec plan",
    "trnspec doctor",
    "trnspec render",
    "trnspec serve",
    "trnspec predict",
    "trnspec plan-deploy",
    "trnspec stage cache-key",
    "trnspec fit",
}


#: Tools run through their validation: the functions that would start measuring, stubbed.
STOP_AT: dict[str, tuple[str, ...]] = {
    "tools bench": ("trnspec_tools.bench.bench.run",),
    "tools tune": ("trnspec_tools.tune.tune._measure", "trnspec_tools.tune.tune._schedule_main"),
    "tools smoke": ("trnspec_tools.smoke.run_smoke",),
    # Pure apart from its files: runs whole (--check prints; an export stops at the writer).
    "tools manifests": ("trnspec_tools.manifests.write_outputs",),
}


#: Cases that still break the rule in code other helpers own this round, each with its reason:
#: tolerated so the rest stays enforced, and listed so the owner sees them (a stale entry fails).
KNOWN: dict[str, str] = {
    "tools bench out='xxxxxxxxxxxxxxxxxxxx'": (
        "owner tools: --out is type=Path, so a 1 MiB name reaches the writer and exits 1"
        " (ENAMETOOLONG) instead of 2; to declare it with trnspec.boundary.args.path_arg"
    ),
}


class Reached(Exception):
    """Raised by a stub in STOP_AT: the command validated its input and went on to measure."""


def _stop(*args: object, **kwargs: object) -> None:
    raise Reached


def _stopped(
    main: Callable[[list[str]], int], targets: Sequence[str]
) -> Callable[[list[str]], int]:
    """main with each target replaced by a stub that raises Reached (which counts as exit 0)."""

    def run(argv: list[str]) -> int:
        with contextlib.ExitStack() as stack:
            for target in targets:
                stack.enter_context(mock.patch(target, _stop))
            try:
                return main(argv)
            except Reached:
                return 0

    return run


@dataclass(frozen=True)
class Command:
    """One leaf command: its path, its parser, the argv prefix that reaches it, and how to run
    a whole argv (None: parse only)."""

    path: str
    parser: argparse.ArgumentParser
    prefix: tuple[str, ...]
    run: Callable[[list[str]], int] | None


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _leaves(
    parser: argparse.ArgumentParser, path: str, prefix: tuple[str, ...]
) -> Iterator[tuple[str, argparse.ArgumentParser, tuple[str, ...]]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser, prefix
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, f"{path} {name}", (*prefix, name))


def _tool_parser(module_name: str) -> argparse.ArgumentParser:
    """The parser a tool's `main` builds, captured at its parse_args (nothing after it runs)."""
    module = importlib.import_module(module_name)
    if hasattr(module, "build_parser"):
        return module.build_parser()
    real = argparse.ArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Captured(self)

    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    try:
        module.main([])
    except _Captured as captured:
        return captured.parser
    finally:
        argparse.ArgumentParser.parse_args = real  # type: ignore[method-assign]
    raise AssertionError(f"{module_name}.main never parsed its arguments")


def commands() -> list[Command]:
    out = [
        Command(path, parser, prefix, trnspec_cli.main if path in RUNS else None)
        for path, parser, prefix in _leaves(trnspec_cli.build_parser(), "trnspec", ())
    ]
    for name, (module_name, _) in tools_cli.COMMANDS.items():
        for path, parser, prefix in _leaves(_tool_parser(module_name), f"tools {name}", ()):
            run = _stopped(tools_cli.command(name), STOP_AT[path]) if path in STOP_AT else None
            out.append(Command(path, parser, prefix, run))
    return out


COMMANDS = commands()


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and not isinstance(
        action, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction
    )


def _split(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], list[str]]:
    """argv as (options, positionals), the positionals being the last len(positionals) items."""
    n = sum(1 for a in parser._actions if not a.option_strings and _takes_value(a))
    return (argv[: len(argv) - n], argv[len(argv) - n :]) if n else (argv, [])


def _positional(values: list[str]) -> list[str]:
    """Positionals after "--", so a value such as "-inf" is not read as a flag."""
    return ["--", *values] if values else []


def cases(command: Command) -> Iterator[tuple[str, list[str], argparse.Action]]:
    """(description, argv, action) for every flag and positional and every hostile value."""
    options, positionals = _split(command.parser, BASE.get(command.path, []))
    slots = [a for a in command.parser._actions if not a.option_strings and _takes_value(a)]
    for action in command.parser._actions:
        if not _takes_value(action):
            continue
        for value in HOSTILE:
            if action.option_strings:
                flag = action.option_strings[-1]
                argv = [*options, f"{flag}={value}", *_positional(positionals)]
            else:
                replaced = list(positionals)
                replaced[slots.index(action)] = value
                argv = [*options, *_positional(replaced)]
            yield f"{action.dest}={value[:20]!r}", [*command.prefix, *argv], action


@dataclass(frozen=True)
class Outcome:
    code: int | None
    out: str
    err: str
    crash: str | None


def attempt(command: Command, argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    crash = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if command.run is not None:
                code = command.run(argv)
            else:
                command.parser.parse_args(argv[len(command.prefix) :])
                code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException:  # a traceback is the failure being looked for
            crash = traceback.format_exc(limit=-3)
    return Outcome(code, out.getvalue(), err.getvalue(), crash)


def _is_path(action: argparse.Action) -> bool:
    kind = action.type
    return kind is Path or "path_arg" in getattr(kind, "__qualname__", "")


def problems_of(command: Command, known: Sequence[str] = (), only: str | None = None) -> list[str]:
    """Every case that breaks the rule, except those whose description is in `known` (with
    `only`: just that case)."""
    found = []
    for case, argv, action in cases(command):
        where = f"{command.path} {case}"
        if where in known or (only is not None and where != only):
            continue
        result = attempt(command, argv)
        if result.crash is not None:
            found.append(f"{where}: traceback\n{result.crash}")
        elif result.code not in (0, 2):
            found.append(f"{where}: exit {result.code}: {result.err[-300:]}")
        elif "Traceback" in result.err:
            found.append(f"{where}: a traceback on stderr: {result.err[-300:]}")
        elif result.code == 0 and not _is_path(action) and NOT_A_NUMBER.search(result.out):
            line = next(x for x in result.out.splitlines() if NOT_A_NUMBER.search(x))
            found.append(f"{where}: printed a non-finite figure: {line[:200]}")
    return found


@pytest.fixture(autouse=True)
def _nothing_reachable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A temporary working directory (relative outputs land there), no AWS credentials, no
    instance metadata, no Hub."""
    monkeypatch.chdir(tmp_path)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_the_enumeration_reaches_every_command_of_both_tables() -> None:
    paths = {c.path for c in COMMANDS}
    assert {f"trnspec {c.name}" for c in trnspec_cli.SUBCOMMANDS} - {"trnspec stage"} <= paths
    for name in tools_cli.COMMANDS:  # a tool, or every step of one with subcommands
        assert any(p == f"tools {name}" or p.startswith(f"tools {name} ") for p in paths), name
    assert {"trnspec stage download", "trnspec stage hub", "trnspec fit"} <= paths


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.path)
def test_every_command_parses_its_base_arguments(command: Command) -> None:
    options, positionals = _split(command.parser, BASE.get(command.path, []))
    result = attempt(
        Command(command.path, command.parser, command.prefix, None),
        [*command.prefix, *options, *_positional(positionals)],
    )
    assert result.crash is None and result.code == 0, result.err[-500:]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.path)
def test_every_flag_takes_hostile_values_with_exit_0_or_2_and_no_traceback(
    command: Command,
) -> None:
    found = problems_of(command, tuple(KNOWN))
    assert not found, f"{len(found)} case(s):\n" + "\n".join(found[:15])


@pytest.mark.parametrize("where", sorted(KNOWN))
def test_every_known_case_still_breaks_the_rule(where: str) -> None:
    """A KNOWN entry whose case now passes must be removed (the list cannot go stale)."""
    path = next(c.path for c in COMMANDS if where.startswith(f"{c.path} "))
    command = next(c for c in COMMANDS if c.path == path)
    found = problems_of(command, only=where)
    assert found, f"remove KNOWN[{where!r}]: it passes now"


def test_the_fuzzer_catches_a_plain_float_flag_and_a_crashing_reader() -> None:
    """Planted: a flag declared with plain `float` (nan accepted, printed as a result) and a
    `type=` that raises what argparse does not catch."""

    def crashing(text: str) -> int:
        return int(float(text))  # OverflowError on inf: argparse only catches ValueError

    parser = argparse.ArgumentParser(prog="planted")
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--count", type=crashing, default=1)

    def run(argv: Sequence[str]) -> int:
        args = parser.parse_args(argv)
        print(f"rate {args.rate} count {args.count}")
        return 0

    found = problems_of(Command("planted", parser, (), run))
    assert any("rate='nan'" in f and "non-finite" in f for f in found)
    assert any("count='inf'" in f and "traceback" in f for f in found)


#: Prices no instance has, each of which once entered a command and came out as a figure (inf,
#: $0.000, nan) or a traceback: refused where they enter, on every price flag.
UNPRICEABLE = ("1e308", "5e-324", "nan", "inf", "-1")
#: Every price flag, by command and flag: the enumeration must keep finding each one.
PRICE_FLAGS = {
    "trnspec predict --price-per-hour",
    "trnspec plan-deploy --price-per-hour",
    "tools bench --price-per-hour",
    "tools calibrate run --price-per-hour-plain",
    "tools calibrate run --price-per-hour-speculative",
}


def price_flags() -> list[tuple[Command, str]]:
    """(command, flag) for every flag of every command whose name says it takes a price."""
    return [
        (command, action.option_strings[-1])
        for command in COMMANDS
        for action in command.parser._actions
        if _takes_value(action) and any("price" in s for s in action.option_strings)
    ]


def test_the_price_flags_are_the_ones_known() -> None:
    assert {f"{c.path} {flag}" for c, flag in price_flags()} == PRICE_FLAGS


@pytest.mark.parametrize(
    ("command", "flag"), price_flags(), ids=[f"{c.path} {f}" for c, f in price_flags()]
)
def test_every_price_flag_refuses_what_no_instance_costs_and_takes_the_bounds(
    command: Command, flag: str
) -> None:
    """Each price flag reads through boundary.args.price_arg: a plain float or an open upper
    bound takes 1e308 (every cost infinite) or 5e-324 (every cost $0.000)."""
    from trnspec.boundary.args import MAX_PRICE_PER_HOUR, MIN_PRICE_PER_HOUR

    options, positionals = _split(command.parser, BASE.get(command.path, []))

    def parsed(value: str) -> Outcome:
        argv = [*command.prefix, *options, f"{flag}={value}", *_positional(positionals)]
        return attempt(Command(command.path, command.parser, command.prefix, None), argv)

    for value in UNPRICEABLE:
        result = parsed(value)
        assert (result.crash, result.code) == (None, 2), f"{flag}={value}: {result}"
        assert flag in result.err and "10000" in result.err.replace(",", ""), result.err
    for value in (MIN_PRICE_PER_HOUR, MAX_PRICE_PER_HOUR):
        result = parsed(repr(value))
        assert (result.crash, result.code) == (None, 0), f"{flag}={value}: {result.err[-300:]}"


#: AWS identifiers AWS would refuse (a made-up partition, Unicode digits, a path in a bucket, a
#: VPC range of every address), by the kind a flag's name or metavar says it takes, and one
#: value AWS accepts. Each once entered a command as free text and passed synth.
_ACCOUNT = "111122223333"
_SECRET = f"arn:aws:secretsmanager:us-east-2:{_ACCOUNT}:secret:hf-AbCdEf"
_KEY = f"arn:aws:kms:us-east-2:{_ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
AWS_VALUES: dict[str, tuple[tuple[str, ...], str]] = {
    "bucket": (
        ("../models", "Models", "xn--models", "models--x-s3", "192.168.5.4", "ab", "b\u00fccket"),
        "my-models",
    ),
    "region": (("../x", "us-east-\u0661", "US-EAST-1", "us-east-1\n", "us east 1"), "us-east-2"),
    "cidr": (("0.0.0.0/0", "10.0.0.1/32", "10.0.0.0/29", "\u0661\u0660.0.0.0/16"), "10.0.0.0/16"),
    "secret-arn": (
        (
            _SECRET.replace("arn:aws:", "arn:aws-made-up:"),
            _SECRET.replace(_ACCOUNT, "\u0661" * 12),
            _SECRET.replace("us-east-2", ""),
        ),
        _SECRET,
    ),
    "kms-key-arn": (
        (
            _KEY.replace("arn:aws:", "arn:awsx:"),
            _KEY.replace(_ACCOUNT, "\u0661" * 12),
            _KEY.split(":key/")[0] + ":alias/models",
        ),
        _KEY,
    ),
    "eks-cluster": (("-prod", "pr\u00f8d", "c" * 101), "prod-trn2"),
    "s3-uri": (("s3://../x", "s3://Models/x", "s3://xn--models/x"), "s3://my-models/x"),
}
#: Every flag that takes an AWS identifier, by command and flag: the enumeration must keep
#: finding each one, and a new one must be given its kind.
AWS_FLAGS = {
    "tools bench --region",
    "tools tune --region",
    "tools smoke --region",
    "tools capacity --region",
    "tools calibrate run --bucket",
    "tools calibrate fetch --region",
    "tools manifests --vpc-cidr",
    "tools manifests --bucket",
    "tools manifests --region",
    "tools manifests --upload-bundle",
    "tools manifests --hf-token-secret-arn",
    "tools manifests --api-key-secret-arn",
    "tools manifests --kms-key-arn",
    "tools manifests --iam-cluster",
    "trnspec plan-deploy --measured",
}
#: Commands that check an identifier after the parse, run up to the work (stubbed there).
AWS_RUNNERS: dict[str, tuple[str, str]] = {
    "tools calibrate run": ("calibrate", "trnspec_tools.calibration.run.calibrate"),
    "tools capacity": ("capacity", "trnspec_tools.capacity.run_preflight"),
}
#: AWS flags still read as free text in code another session owns this round, with the reason
#: (a stale entry fails test_every_known_aws_flag_still_takes_a_value_aws_refuses).
KNOWN_AWS: dict[str, str] = {}


def aws_kind(action: argparse.Action) -> str | None:
    """The AWS identifier a flag takes, by its name or metavar (None: not one)."""
    if "s3://BUCKET" in str(action.metavar or ""):
        return "s3-uri"
    names = " ".join(action.option_strings)
    for word, kind in (
        ("secret-arn", "secret-arn"),
        ("key-arn", "kms-key-arn"),
        ("-arn", "arn"),
        ("bucket", "bucket"),
        ("region", "region"),
        ("cidr", "cidr"),
        ("account", "account"),
        ("iam-cluster", "eks-cluster"),
    ):
        if word in names:
            return kind
    return None


def aws_flags() -> list[tuple[Command, str, str]]:
    """(command, flag, kind) for every flag of every command that takes an AWS identifier."""
    return [
        (command, action.option_strings[-1], kind)
        for command in COMMANDS
        for action in command.parser._actions
        if _takes_value(action) and action.option_strings
        if (kind := aws_kind(action)) is not None
    ]


def _aws_attempt(command: Command, flag: str, value: str, *, run: bool) -> Outcome:
    """The command with `flag=value` over its BASE arguments: parsed, and with `run` also run
    up to its work where the fuzzer can (RUNS, STOP_AT, AWS_RUNNERS)."""
    options, positionals = _split(command.parser, BASE.get(command.path, []))
    argv = [*command.prefix, *options, f"{flag}={value}", *_positional(positionals)]
    runner = command.run
    if command.path in AWS_RUNNERS:
        name, target = AWS_RUNNERS[command.path]
        runner = _stopped(tools_cli.command(name), (target,))
    return attempt(
        Command(command.path, command.parser, command.prefix, runner if run else None), argv
    )


def test_the_aws_flags_are_the_ones_known() -> None:
    found = {f"{c.path} {flag}": kind for c, flag, kind in aws_flags()}
    assert set(found) == AWS_FLAGS
    assert set(found.values()) <= set(AWS_VALUES), "give the new kind its values in AWS_VALUES"


@pytest.mark.parametrize(
    ("command", "flag", "kind"),
    [f for f in aws_flags() if f"{f[0].path} {f[1]}" not in KNOWN_AWS],
    ids=[f"{c.path} {f}" for c, f, _ in aws_flags() if f"{c.path} {f}" not in KNOWN_AWS],
)
def test_every_aws_flag_refuses_what_aws_would_refuse_and_takes_what_it_accepts(
    command: Command, flag: str, kind: str
) -> None:
    """Each reads through trnspec.boundary.aws_names (at the parse, or in the command's own
    check before any work): exit 2, one error naming the flag, no traceback."""
    refused, accepted = AWS_VALUES[kind]
    for value in refused:
        result = _aws_attempt(command, flag, value, run=True)
        assert (result.crash, result.code) == (None, 2), f"{flag}={value!r}: {result}"
        assert flag.lstrip("-") in result.err, f"{flag}={value!r}: {result.err[-300:]}"
    result = _aws_attempt(command, flag, accepted, run=False)
    assert (result.crash, result.code) == (None, 0), f"{flag}={accepted}: {result.err[-300:]}"


@pytest.mark.parametrize("where", sorted(KNOWN_AWS))
def test_every_known_aws_flag_still_takes_a_value_aws_refuses(where: str) -> None:
    command, flag, kind = next(f for f in aws_flags() if f"{f[0].path} {f[1]}" == where)
    outcomes = [_aws_attempt(command, flag, v, run=True) for v in AWS_VALUES[kind][0]]
    assert any(o.code != 2 for o in outcomes), f"remove KNOWN_AWS[{where!r}]: it refuses now"
