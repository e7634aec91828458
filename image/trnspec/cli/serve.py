"""`python -m trnspec serve`: the pod's entrypoint around vLLM.

The `serve` subcommand: its flags, the options they resolve to (flags first, then the pod's
environment, then the pod contract's defaults), and the call into the runner.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping

from trnspec.boundary.args import float_arg, path_arg, text_arg
from trnspec.boundary.numbers import float_text
from trnspec.checks.all_checks import validate
from trnspec.checks.doctor_probe import examine
from trnspec.cli.config_args import config_from_args
from trnspec.config.pod_contract import (
    COMPILED_ROOT,
    COMPILED_SUBDIR,
    DEFAULT_DRAIN_SECONDS,
    ENV_COMPILE_CACHE,
    ENV_DATA_DIR,
    ENV_DRAIN_SECONDS,
    ENV_READY_FILE,
    MODELS_ROOT,
    MODELS_SUBDIR,
    READY_FILE,
)
from trnspec.config.serving import ConfigError, Problem, ServingConfig
from trnspec.serve.api_key import load_api_key
from trnspec.serve.runner import ServeOptions, SuperviseVllm, execute
from trnspec.serve.steps import serve_steps

#: Longest readiness poll interval and drain a flag (or the environment) may ask for: an hour,
#: a day (the pod's grace period is far below either).
MAX_POLL_SECONDS = 3600.0
MAX_DRAIN_SECONDS = 86400.0
#: The container cannot run the config (`trnspec doctor` failed): nothing was staged.
EXIT_DOCTOR_FAILED = 1
#: The line `trnspec --help` lists for the subcommand.
HELP = "validate, stage from S3, run vLLM with signal forwarding and a readiness file"
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


def resolve_options(args: argparse.Namespace, environ: Mapping[str, str]) -> ServeOptions:
    """Flags first, then the pod's environment, then the defaults (pure: environ is passed in)."""
    data_dir = environ.get(ENV_DATA_DIR)
    return ServeOptions(
        models_root=args.models_root
        or (f"{data_dir}/{MODELS_SUBDIR}" if data_dir else MODELS_ROOT),
        compiled_root=args.compiled_root
        or (f"{data_dir}/{COMPILED_SUBDIR}" if data_dir else COMPILED_ROOT),
        compile_cache=args.compile_cache or environ.get(ENV_COMPILE_CACHE) or None,
        ready_file=args.ready_file or environ.get(ENV_READY_FILE) or READY_FILE,
        poll_interval=args.poll_interval,
        progress=not args.no_progress,
        compile_only=args.compile_only,
        drain_timeout=args.drain_timeout
        if args.drain_timeout is not None
        else _seconds(environ, ENV_DRAIN_SECONDS, DEFAULT_DRAIN_SECONDS),
    )


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None:
        return default
    return float_text(raw, name, 0, MAX_DRAIN_SECONDS)


def main(args: argparse.Namespace) -> int:
    """Run the parsed `serve`."""
    cfg = validate(config_from_args(args))
    options = resolve_options(args, os.environ)
    try:
        steps = serve_steps(
            cfg,
            models_root=options.models_root,
            compiled_root=options.compiled_root,
            compile_cache=options.compile_cache,
        )
    except ValueError as err:  # a malformed compile-cache URI
        raise ConfigError([Problem("--compile-cache", options.compile_cache, str(err))]) from None
    if args.dry_run:
        print(steps.to_json())
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per readiness probe is noise
    api_key = load_api_key(os.environ)  # before staging: a missing key fails in seconds
    if (exit_code := _doctor(cfg)) is not None:  # before staging and the compile
        return exit_code
    return execute(cfg, steps, options, SuperviseVllm(cfg, options, api_key), api_key=api_key)


def _doctor(cfg: ServingConfig) -> int | None:
    """`trnspec doctor` as the pod's first step: None to go on, else the exit code."""
    report = examine(cfg)
    logging.getLogger(__name__).info("%s", report.line())
    if report.ok:
        return None
    print(report.line(), file=sys.stderr)
    return EXIT_DOCTOR_FAILED


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `serve` (after the config flags)."""
    p.add_argument(
        "--models-root",
        type=path_arg(),
        help=f"where S3 models are staged (default ${ENV_DATA_DIR}/{MODELS_SUBDIR}, "
        f"else {MODELS_ROOT})",
    )
    p.add_argument(
        "--compiled-root",
        type=path_arg(),
        help=f"compiled-artifact root, one subdirectory per cache key "
        f"(default ${ENV_DATA_DIR}/{COMPILED_SUBDIR}, else {COMPILED_ROOT})",
    )
    p.add_argument(
        "--compile-cache",
        metavar="S3_URI",
        type=text_arg(),
        help=f"S3 prefix of the shared compile cache (default ${ENV_COMPILE_CACHE}; else none)",
    )
    p.add_argument(
        "--ready-file",
        type=path_arg(),
        help=f"exists only while the model answers (default ${ENV_READY_FILE}, else {READY_FILE})",
    )
    p.add_argument(
        "--poll-interval",
        type=float_arg(0, MAX_POLL_SECONDS, lo_open=True),
        default=5.0,
        help="seconds between readiness probes",
    )
    p.add_argument(
        "--drain-timeout",
        type=float_arg(0, MAX_DRAIN_SECONDS),
        help=f"seconds to let in-flight requests finish after SIGTERM before vLLM is stopped "
        f"(default ${ENV_DRAIN_SECONDS}, else {DEFAULT_DRAIN_SECONDS:.0f}; keep it below the "
        f"pod's grace period)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--compile-only",
        action="store_true",
        help="stage, compile, publish to the compile cache, stop (exit 0 if already cached)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan (staging, cache, command) as JSON"
    )
