"""Parse rendered argvs with the CLI parser of the vLLM release installed in THIS interpreter.

Run as a script by tests/trnspec/test_vllm_parsers.py with a tool environment's python (one
process per vLLM release, so vLLM is imported once for all argvs). Standard library and vLLM only:
it must import under any vLLM release the tests pin.

stdin: {"cases": [{"id": str, "entry": "serve" | "api_server", "args": [str, ...],
                   "engine": bool}]}
  entry "serve": args follow `vllm serve` (the model is the first positional); the parser is the
  one `vllm serve` builds (the serve subcommand's subparser_init, then its validate hook).
  entry "api_server": args follow `python -m vllm.entrypoints.openai.api_server` (make_arg_parser,
  then validate_parsed_serve_args), as that module's __main__ does.
  Every --speculative-config is checked against that release's SpeculativeConfig: its keys are
  fields, its method one of the release's SpeculativeMethod values, and the window keys
  (TYPED_KEYS) of the annotated type.
  engine: also build the engine config from the parsed arguments
  (EngineArgs.from_cli_args(...).create_engine_config()), which runs vLLM's ModelConfig,
  CacheConfig, ParallelConfig and SpeculativeConfig validation. Needs local model directories.
stdout, last line after the marker RESULT_MARKER (vLLM may print before it):
    {"vllm_version": str, "results": {id: {"ok": bool, "stage": str, "error": str | None,
                                           "namespace": {...}}}}
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import sys
import traceback
from typing import Any

RESULT_MARKER = "TRNSPEC-PARSE-RESULT "
PARSER_MODULES = (
    "vllm.entrypoints.openai.cli_args",
    "vllm.entrypoints.launchers.cli_args",
    "vllm.entrypoints.common.cli_args",
)
FLEXIBLE_PARSER_MODULES = ("vllm.utils.argparse_utils", "vllm.utils")


def _first_attr(modules: tuple[str, ...], name: str) -> Any:
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name is not None and module_name.startswith(err.name):
                continue  # this release has no such module; a missing dependency still raises
            raise
        if hasattr(module, name):
            return getattr(module, name)
    raise RuntimeError(f"{name} not found in any of {modules}: vLLM moved it")


def _serve_parser() -> tuple[argparse.ArgumentParser, Any]:
    """The parser `vllm serve` builds: vllm.entrypoints.cli.main with only the serve command."""
    flexible = _first_attr(FLEXIBLE_PARSER_MODULES, "FlexibleArgumentParser")
    serve_module = importlib.import_module("vllm.entrypoints.cli.serve")
    parser = flexible(prog="vllm")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    commands = {cmd.name: cmd for cmd in serve_module.cmd_init()}
    serve = commands["serve"]
    sub = serve.subparser_init(subparsers)
    sub.set_defaults(dispatch_function=serve.cmd)
    return parser, serve


def _api_server_parser() -> tuple[argparse.ArgumentParser, Any]:
    flexible = _first_attr(FLEXIBLE_PARSER_MODULES, "FlexibleArgumentParser")
    make_arg_parser = _first_attr(PARSER_MODULES, "make_arg_parser")
    validate = _first_attr(PARSER_MODULES, "validate_parsed_serve_args")
    return make_arg_parser(flexible(prog="api_server")), validate


def _jsonable(ns: argparse.Namespace) -> dict[str, Any]:
    out = {}
    for key, value in vars(ns).items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        out[key] = value
    return out


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> tuple[Any, str | None]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(args), None
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return None, (lines[-1] if lines else "argparse exited without a message")


def _literal_values(annotation: Any) -> set[Any]:
    """Every value of a (nested, possibly Optional) typing.Literal."""
    import typing

    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return {a for a in args if not typing.get_args(a)} | {
            v for a in args if typing.get_args(a) for v in _literal_values(a)
        }
    return {v for a in args for v in _literal_values(a)}


def _check_speculative_config(spec: dict[str, Any]) -> str | None:
    """Keys must be SpeculativeConfig fields and the method one of its SpeculativeMethod values:
    what vLLM checks first when it builds the engine config, checked without building it."""
    import dataclasses
    import typing

    from vllm.config import SpeculativeConfig

    names = {f.name for f in dataclasses.fields(SpeculativeConfig)}
    unknown = sorted(set(spec) - names)
    if unknown:
        return f"not SpeculativeConfig fields: {unknown}"
    hints = typing.get_type_hints(SpeculativeConfig)
    methods = _literal_values(hints.get("method"))
    if "method" in spec and methods and spec["method"] not in methods:
        return f"method {spec['method']!r} is not one of {sorted(map(str, methods))}"
    for key in TYPED_KEYS & set(spec):
        if problem := _type_problem(hints[key], spec[key]):
            return f"{key}: {problem}"
    return None


#: --speculative-config keys whose value is also checked against the release's annotation.
TYPED_KEYS = frozenset({"num_speculative_tokens", "num_speculative_tokens_per_batch_size"})


def _type_problem(annotation: Any, value: Any) -> str | None:
    """Why `value`, as the JSON vLLM reads, does not fit the release's annotation (strict
    pydantic, which vLLM validates its config dataclasses with), or None when it fits."""
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(annotation).validate_json(json.dumps(value), strict=True)
    except ValidationError as err:
        return " ".join(str(err).split())[:200]
    return None


def _engine_config(ns: argparse.Namespace) -> None:
    from vllm.engine.arg_utils import EngineArgs

    if getattr(ns, "model_tag", None):  # what `vllm serve`'s cmd() does before building
        ns.model = ns.model_tag
    EngineArgs.from_cli_args(ns).create_engine_config()


def run_case(case: dict[str, Any], parsers: dict[str, Any]) -> dict[str, Any]:
    entry = case["entry"]
    if entry not in parsers:
        parsers[entry] = _serve_parser() if entry == "serve" else _api_server_parser()
    parser, validator = parsers[entry]
    args = ["serve", *case["args"]] if entry == "serve" else list(case["args"])
    ns, error = _parse(parser, args)
    if ns is None:
        return {"ok": False, "stage": "parse", "error": error, "namespace": {}}
    try:
        validator.validate(ns) if entry == "serve" else validator(ns)
    except Exception as exc:
        return {"ok": False, "stage": "validate", "error": repr(exc), "namespace": _jsonable(ns)}
    spec = getattr(ns, "speculative_config", None)
    if isinstance(spec, dict) and (problem := _check_speculative_config(spec)):
        return {
            "ok": False,
            "stage": "speculative-config",
            "error": problem,
            "namespace": _jsonable(ns),
        }
    if case.get("engine"):
        try:
            _engine_config(ns)
        except Exception as exc:
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return {"ok": False, "stage": "engine", "error": detail, "namespace": _jsonable(ns)}
    return {"ok": True, "stage": "done", "error": None, "namespace": _jsonable(ns)}


def main() -> int:
    request = json.load(sys.stdin)
    import vllm

    parsers: dict[str, Any] = {}
    results = {case["id"]: run_case(case, parsers) for case in request["cases"]}
    payload = json.dumps({"vllm_version": vllm.__version__, "results": results})
    sys.stdout.write("\n" + RESULT_MARKER + payload + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
