"""The steps serve takes (pure): what is staged where, the compile cache step and the command."""

from __future__ import annotations

from serve_fakes import s3_qwen
from trnspec.config.serving import load_profile
from trnspec.serve.steps import serve_steps


def test_serve_stages_s3_models_where_the_command_reads_them() -> None:
    steps = serve_steps(
        s3_qwen(), models_root="/m", compiled_root="/c", compile_cache="s3://cache/n"
    )
    assert [(s.field, s.source, s.local_dir) for s in steps.stage] == [
        ("target", "s3://models/Qwen3-32B", "/m/models/Qwen3-32B"),
        ("speculation.draft", "s3://models/Qwen3-1.7B", "/m/models/Qwen3-1.7B"),
    ]
    argv = steps.command.argv
    assert argv[:3] == ["vllm", "serve", "/m/models/Qwen3-32B"]
    assert '"model":"/m/models/Qwen3-1.7B"' in argv[argv.index("--speculative-config") + 1]
    assert steps.cache is not None
    assert steps.cache.local_dir == f"/c/{steps.cache.key}"
    assert steps.command.env["NEURON_COMPILED_ARTIFACTS"] == steps.cache.local_dir
    assert steps.cache.remote == f"s3://cache/n/{steps.cache.key}"


def test_serve_stages_nothing_for_hub_or_local_sources() -> None:
    steps = serve_steps(load_profile("qwen3-32b-draft"))
    assert steps.stage == () and steps.cache is not None and steps.cache.remote is None


def test_serve_on_cpu_has_no_compile_cache_and_runs_this_interpreter() -> None:
    steps = serve_steps(load_profile("local-tiny"), python="/venv/bin/python")
    assert steps.cache is None
    server = "vllm.entrypoints.openai.api_server"
    assert steps.command.argv[:3] == ["/venv/bin/python", "-m", server]
