"""The steps serve takes (pure): what is staged where, the compile cache step and the command."""

from __future__ import annotations

from serve_fakes import s3_qwen
from trnspec.config.serving import load_profile
from trnspec.serve.steps import serve_steps


def test_plan_stages_s3_models_where_the_command_reads_them() -> None:
    plan = serve_steps(
        s3_qwen(), models_root="/m", compiled_root="/c", compile_cache="s3://cache/n"
    )
    assert [(s.field, s.source, s.local_dir) for s in plan.stage] == [
        ("target", "s3://models/Qwen3-32B", "/m/models/Qwen3-32B"),
        ("speculation.draft", "s3://models/Qwen3-1.7B", "/m/models/Qwen3-1.7B"),
    ]
    argv = plan.command.argv
    assert argv[:3] == ["vllm", "serve", "/m/models/Qwen3-32B"]
    assert '"model":"/m/models/Qwen3-1.7B"' in argv[argv.index("--speculative-config") + 1]
    assert plan.cache is not None
    assert plan.cache.local_dir == f"/c/{plan.cache.key}"
    assert plan.command.env["NEURON_COMPILED_ARTIFACTS"] == plan.cache.local_dir
    assert plan.cache.remote == f"s3://cache/n/{plan.cache.key}"


def test_plan_for_hub_or_local_sources_stages_nothing() -> None:
    plan = serve_steps(load_profile("qwen3-32b-draft"))
    assert plan.stage == () and plan.cache is not None and plan.cache.remote is None


def test_cpu_plan_has_no_compile_cache_and_runs_this_interpreter() -> None:
    plan = serve_steps(load_profile("local-tiny"), python="/venv/bin/python")
    assert plan.cache is None
    assert plan.command.argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
