"""CLI: profiles | plan | check | render; bad input exits 2 listing every problem, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from trnspec.cli.main import SUBCOMMANDS, build_parser, main
from trnspec.config.serving import list_profiles, load_profile
from trnspec.engine.render import render


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_profiles_prints_one_a_line_name_first(capsys):
    code, out, _ = run(capsys, "profiles")
    lines = out.splitlines()
    assert code == 0
    assert [line.split()[0] for line in lines] == list_profiles()
    assert all(len(line.split(None, 1)) == 2 for line in lines)  # a description follows


@pytest.mark.parametrize("profile", list_profiles())
def test_check_accepts_every_profile(capsys, profile):
    code, out, _ = run(capsys, "check", "--profile", profile)
    assert (code, out.strip()) == (0, f"ok: {profile}")


def test_check_exits_2_listing_every_problem(capsys):
    code, out, err = run(
        capsys,
        "check",
        "--profile",
        "qwen3-32b-draft",
        "--set",
        "tensor_parallel_size=48",
        "--set",
        "speculation.num_speculative_tokens=9",
    )
    assert code == 2 and out == ""
    assert [line for line in err.splitlines() if not line.startswith("WARNING: ")] == [
        "tensor_parallel_size=48: does not divide the 64 logical cores of trn2.48xlarge at LNC=2;"
        " use 32 or 64",
        "speculation.num_speculative_tokens=9: image neuron-fork supports k in 1..7; use 7 or less",
    ]


FORK_PROFILES = [p for p in list_profiles() if load_profile(p).image.value == "neuron-fork"]


def test_profiles_labels_the_fork_profiles_legacy(capsys):
    _, out, _ = run(capsys, "profiles")
    labels = {line.split("\t")[0]: line.split("\t")[1] for line in out.splitlines()}
    assert FORK_PROFILES
    for name, label in labels.items():
        assert label.startswith("legacy") == (name in FORK_PROFILES), name
    assert "Neuron 2.28" in labels["qwen3-32b-draft"]


@pytest.mark.parametrize("command", ["check", "plan"])
def test_check_and_plan_warn_but_do_not_refuse_a_legacy_profile(capsys, command):
    code, out, err = run(capsys, command, "--profile", "qwen3-32b-draft")
    assert code == 0
    assert err.startswith("WARNING: image=neuron-fork: legacy:")
    assert "Neuron SDK 2.28" in err
    # ... and say that a deployment is refused, and why
    assert "refused for deployment: image neuron-fork carries Neuron runtime 2.28" in err
    assert "requires runtime 2.33 or later" in err
    if command == "plan":
        assert "LEGACY" in out


@pytest.mark.parametrize(
    ("profile", "shown"),
    [("qwen3-32b-draft", "none exported"), ("qwen3-4b-dflash", "vllm:spec_decode_num_drafts")],
)
def test_plan_names_the_spec_decode_counters_the_image_exports(capsys, profile, shown):
    _, out, _ = run(capsys, "plan", "--profile", profile)
    assert shown in " ".join(out.split())


def test_check_does_not_warn_about_a_supported_profile(capsys):
    code, _, err = run(capsys, "check", "--profile", "qwen3-4b-dflash")
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["render", "--profile", "nope"], "--profile"),
        (["render"], "--profile"),
        (["plan", "--profile", "local-tiny", "--set", "dtype=int4"], "dtype"),
        (["check", "--config", "/nonexistent/c.yaml"], "--config"),
        (
            ["render", "--profile", "qwen3-32b-draft", "--set", "speculation.method=eagle3"],
            "speculation.method",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_field(capsys, argv, field):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith((f"{field}=", f"{field}:"))  # ':' when it was not given
    assert "Traceback" not in err


def test_render_json_is_the_rendered_command(capsys):
    code, out, _ = run(capsys, "render", "--profile", "qwen3-32b-draft", "--format", "json")
    assert code == 0
    expected = render(load_profile("qwen3-32b-draft"))
    assert json.loads(out) == {"image": expected.image, "argv": expected.argv, "env": expected.env}


def test_render_shell_applies_set_overrides(capsys):
    code, out, _ = run(
        capsys,
        "render",
        "--profile",
        "local-tiny",
        "--set",
        "target.source=/abs/target",
        "--set",
        "speculation.draft.source=/abs/draft",
        "--format",
        "shell",
    )
    assert code == 0
    assert out.startswith(
        "VLLM_CPU_KVCACHE_SPACE=1 python -m vllm.entrypoints.openai.api_server --model /abs/target"
    )


def test_render_reads_a_config_file(capsys, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(load_profile("local-tiny").model_dump(mode="json")))
    code, out, _ = run(capsys, "render", "--config", str(path))
    assert code == 0 and json.loads(out)["argv"][0] == "python"


def test_plan_for_the_qwen3_profile_reports_16_chips_and_fits(capsys):
    code, out, _ = run(capsys, "plan", "--profile", "qwen3-32b-draft")
    assert code == 0
    assert "TP=64 logical cores -> 16 chip(s)" in out
    assert "1,536.00 GiB" in out
    assert "fits" in out and "DOES NOT FIT" not in out
    assert "Qwen3-32B" in out and "Qwen3-1.7B" in out and "32.76 B" in out


def test_plan_exits_2_when_the_model_does_not_fit(capsys):
    code, out, err = run(
        capsys, "plan", "--profile", "llama31-70b-draft", "--set", "tensor_parallel_size=4"
    )
    assert code == 2
    assert "DOES NOT FIT" in out
    problems = [line for line in err.splitlines() if not line.startswith("WARNING: ")]
    assert problems[0].startswith("tensor_parallel_size=4: needs")


def test_subcommands_include_the_config_ones():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"profiles", "plan", "check", "render"} <= set(sub.choices)


def test_the_command_table_is_what_the_parser_offers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == [c.name for c in SUBCOMMANDS]
    assert {"stage", "serve", "predict", "plan-deploy"} <= set(sub.choices)


def test_the_cli_imports_no_subcommand_at_run_time():
    """Registration is explicit: every subcommand module is imported at the top of
    trnspec.cli.main, none through importlib, and no subcommand module imports main back."""
    import ast
    import inspect

    import trnspec.cli.main as cli

    tree = ast.parse(inspect.getsource(cli))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "importlib"]
    nested = [
        n
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
        for n in ast.walk(f)
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    assert not nested
    for command in SUBCOMMANDS:
        module = inspect.getmodule(command.main)
        assert module is not None
        source = inspect.getsource(module)
        body = source.split('if __name__ == "__main__":')[0]
        assert "trnspec.cli.main" not in body.replace("trnspec.cli.main.", ""), module.__name__


def test_python_dash_m_trnspec_runs_and_exits_2_without_traceback():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trnspec",
            "check",
            "--profile",
            "qwen3-32b-draft",
            "--set",
            "hardware.lnc=3",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("hardware.lnc=3: ")
    assert "Traceback" not in proc.stderr


# --- expected failures: one line naming what and how to fix it, documented exit codes ---------


def _model_dir(tmp_path, config_json: str):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(config_json)
    return model


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.joinpath("a.yaml").write_bytes(b"name: caf\xe9\n") and p / "a.yaml", "UTF-8"),
        (lambda p: p, "it is a directory; give a regular file"),
        (lambda p: p / "absent.yaml", "cannot read it"),
        (lambda p: p.joinpath("b.yaml").write_text("a: [") and p / "b.yaml", "not valid YAML"),
        (lambda p: os.mkfifo(p / "fifo") or p / "fifo", "it is a FIFO; give a regular file"),
        (lambda p: Path("/dev/zero"), "it is a device; give a regular file"),
    ],
    ids=["latin-1", "a-directory", "missing", "broken-yaml", "a-fifo-never-hangs", "dev-zero"],
)
def test_an_unreadable_config_file_exits_2_with_one_line(capsys, tmp_path, make, says):
    code, _, err = run(capsys, "check", "--config", str(make(tmp_path)))
    assert code == 2 and says in err
    assert err.startswith("--config=") and len(err.strip().splitlines()) == 1


def test_a_model_config_json_with_infinity_is_a_field_named_problem(capsys, tmp_path):
    model = _model_dir(
        tmp_path,
        '{"num_attention_heads": Infinity, "hidden_size": 64, "num_hidden_layers": 1,'
        ' "intermediate_size": 64, "vocab_size": 100}',
    )
    source = f"target.source={model}"
    code, _, err = run(capsys, "check", "--profile", "local-tiny", "--set", source)
    assert code == 2 and err.startswith("target.source=") and "config.json" in err
    assert "Traceback" not in err


def test_an_os_error_in_a_command_is_one_line_and_exit_1(capsys, monkeypatch):
    import trnspec.cli.main as cli

    def unreadable(_name: str) -> object:
        raise PermissionError(13, "Permission denied", "/opt/trnspec/profiles/x.yaml")

    monkeypatch.setattr(cli, "load_profile", unreadable)
    code, _, err = run(capsys, "profiles")
    assert code == 1
    assert err.strip() == "trnspec: /opt/trnspec/profiles/x.yaml: Permission denied"
