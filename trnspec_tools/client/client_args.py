"""The client flags every tool that talks to an endpoint shares (bench, tune, smoke): per-request
deadlines, retries, and where the API key comes from. One set of names and defaults.

The API key is read from an environment variable (`--api-key-env NAME`, default TRNSPEC_API_KEY
when set), never from a flag: argv ends up in shell history and process listings.
"""

from __future__ import annotations

import argparse
import os

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import float_arg, int_arg
from trnspec.boundary.problems import Problem

from trnspec_tools.boundary.endpoint import header_value
from trnspec_tools.boundary.model_id import model_id_arg
from trnspec_tools.client.http_stream import Deadlines
from trnspec_tools.client.retry_rule import DEFAULT_RETRY_AFTER_CAP_S

DEFAULT_API_KEY_ENV = "TRNSPEC_API_KEY"
DEFAULTS = Deadlines()
#: A deadline flag: finite seconds > 0, at most a week (asyncio cannot schedule `inf`).
SECONDS = float_arg(0, 7 * 86400.0, lo_open=True)


def add_client_args(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    timeout_default: float = DEFAULTS.total_s,
    max_retries_default: int = 2,
) -> None:
    parser.add_argument(
        "--timeout",
        type=SECONDS,
        default=timeout_default,
        help=f"deadline for each whole request, s (default {timeout_default:g})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=SECONDS,
        default=DEFAULTS.connect_s,
        help=f"deadline to open a connection, s (default {DEFAULTS.connect_s:g})",
    )
    parser.add_argument(
        "--first-byte-timeout",
        type=SECONDS,
        default=DEFAULTS.first_byte_s,
        help=f"deadline to the first byte of a reply, s (default {DEFAULTS.first_byte_s:g})",
    )
    parser.add_argument(
        "--max-retries",
        type=int_arg(0, 100),
        default=max_retries_default,
        help="retries of a request that got no answer yet (connect failure, 429/5xx status)",
    )
    parser.add_argument(
        "--retry-after-cap",
        type=float_arg(0, 7 * 86400.0),
        default=DEFAULT_RETRY_AFTER_CAP_S,
        help="longest Retry-After (429/503) honoured before a retry, s",
    )
    add_api_key_arg(parser)


def add_model_args(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, api: bool = True
) -> None:
    """--model (the served name; default: the first of /v1/models) and, with `api`,
    --api (which OpenAI route the requests use)."""
    parser.add_argument(
        "--model", type=model_id_arg, help="served model name (default: first of /v1/models)"
    )
    if api:
        parser.add_argument("--api", choices=("completions", "chat"), default="completions")


def add_api_key_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--api-key-env NAME` alone, for tools whose other client settings are not ours."""
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help=f"environment variable holding the endpoint's API key, sent as a Bearer token"
        f" (default: {DEFAULT_API_KEY_ENV} if set)",
    )


def api_key_arg_problem(args: argparse.Namespace) -> Problem | None:
    """The problem of an --api-key-env naming an unset or empty variable, or a key (from it or
    from TRNSPEC_API_KEY) that cannot be sent as a header value (CR, LF, NUL, not latin-1),
    else None. The key itself is never shown."""
    if args.api_key_env is not None and not os.environ.get(args.api_key_env, "").strip():
        return Problem(
            "--api-key-env",
            args.api_key_env,
            "that environment variable is not set or empty; export the key in it, or leave the"
            " flag out",
        )
    name = args.api_key_env or DEFAULT_API_KEY_ENV
    key = os.environ.get(name, "").strip()
    if key:
        try:
            header_value("Authorization", key)
        except BoundaryError:
            return Problem(
                "--api-key-env",
                name,
                "the key holds a line break, NUL or a non-latin-1 character (it would break or"
                " inject an HTTP header); export the key alone",
            )
    return None


def client_arg_problems(args: argparse.Namespace) -> list[Problem]:
    """One problem per bad client flag, naming the flag, the value and the fix."""
    problems = [
        Problem(flag, value, "must be > 0 seconds")
        for flag, value in (
            ("--timeout", args.timeout),
            ("--connect-timeout", args.connect_timeout),
            ("--first-byte-timeout", args.first_byte_timeout),
        )
        if not value > 0
    ]
    if args.max_retries < 0:
        problems.append(Problem("--max-retries", args.max_retries, "must be >= 0"))
    if not args.retry_after_cap >= 0:
        problems.append(Problem("--retry-after-cap", args.retry_after_cap, "must be >= 0 seconds"))
    if (problem := api_key_arg_problem(args)) is not None:
        problems.append(problem)
    return problems


def default_api_key() -> str | None:
    """$TRNSPEC_API_KEY, or None when unset or empty."""
    return os.environ.get(DEFAULT_API_KEY_ENV, "").strip() or None


def api_key(args: argparse.Namespace) -> str | None:
    """The key from --api-key-env, else TRNSPEC_API_KEY if set, else None."""
    value = os.environ.get(args.api_key_env or DEFAULT_API_KEY_ENV, "").strip()
    return value or None


def deadlines(args: argparse.Namespace) -> Deadlines:
    return Deadlines.capped(args.connect_timeout, args.first_byte_timeout, args.timeout)
