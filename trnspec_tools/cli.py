"""`python -m trnspec_tools bench|tune|smoke|demo|capacity|models|calibrate|manifests`: one command
over the tools.

Each subcommand is the module's own command line (its parser and `main`), as `vllm bench serve`
hands its argv to the benchmark's parser: `python -m trnspec_tools bench --help` and
`python scripts/bench.py --help` print the same thing."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

#: subcommand -> (module whose `main(argv)` runs it, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("trnspec_tools.bench.bench", "benchmark an endpoint (or the local server), A/B"),
    "tune": ("trnspec_tools.tune.tune", "sweep k (and concurrency) and recommend one"),
    "smoke": ("trnspec_tools.smoke", "check a live endpoint answers and speculates"),
    "demo": ("trnspec_tools.demo", "the local demo: tiny models, vLLM on CPU, speedup report"),
    "capacity": ("trnspec_tools.capacity", "check a capacity block matches the profile"),
    "models": (
        "trnspec_tools.local_engine.make_tiny_models",
        "build (or find cached) the tiny target/draft pair",
    ),
    "calibrate": ("trnspec_tools.calibration.command", "measure speculation against plain"),
    "manifests": (
        "trnspec_tools.manifests",
        "a plan's Kubernetes manifests, or what an existing cluster must have (--check)",
    ),
}


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: python -m trnspec_tools {" + ",".join(COMMANDS) + "} [args ...]",
        "",
        "commands (each takes --help):",
    ]
    lines += [f"  {name:<{width}}  {doc}" for name, (_, doc) in COMMANDS.items()]
    return "\n".join(lines)


def command(name: str) -> Callable[[Sequence[str] | None], int]:
    """The `main` of a subcommand (imported only when it runs: the demo pulls in torch)."""
    module = importlib.import_module(COMMANDS[name][0])
    return module.main


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(
            f"trnspec_tools: error: unknown command {name!r}: use one of {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    return command(name)(rest)
