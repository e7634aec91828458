"""The doctor's probe reads this container (files, environment, a child interpreter), and the
pod's entrypoint runs the doctor before anything is staged."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from trnspec.checks.doctor_probe import examine, installed_version, probe_environment, read_registry
from trnspec.cli.main import main as cli_main
from trnspec.cli.serve import EXIT_DOCTOR_FAILED
from trnspec.config.pod_contract import ENV_API_KEY_SECRET
from trnspec.config.serving import load_profile


def test_probe_reads_devices_lnc_file_environment_and_versions(tmp_path: Path) -> None:
    (tmp_path / "neuron0").touch()
    (tmp_path / "neuron1").touch()
    lnc = tmp_path / "logical_nc_config"
    lnc.write_text("NEURON_LOGICAL_NC_CONFIG=2\n", encoding="utf-8")
    probe = probe_environment(
        ("pydantic", "no-such-distribution-here"),
        environ={"NEURON_LOGICAL_NC_CONFIG": "1"},
        lnc_file=str(lnc),
        device_glob=str(tmp_path / "neuron*"),
        with_registry=False,
    )
    assert probe.neuron_devices == (str(tmp_path / "neuron0"), str(tmp_path / "neuron1"))
    assert (probe.lnc_env, probe.lnc_file_text) == ("1", "NEURON_LOGICAL_NC_CONFIG=2\n")
    assert probe.distributions["pydantic"] == installed_version("pydantic") is not None
    assert probe.distributions["no-such-distribution-here"] is None
    assert probe.architectures is None


def test_probe_without_the_node_file_reports_it_absent(tmp_path: Path) -> None:
    probe = probe_environment(
        (),
        environ={},
        lnc_file=str(tmp_path / "absent"),
        device_glob=str(tmp_path / "none*"),
        with_registry=False,
    )
    assert (probe.lnc_file_text, probe.neuron_devices) == (None, ())


def test_the_registry_of_a_container_without_vllm_neuron_is_an_error_not_a_crash() -> None:
    architectures, error = read_registry(sys.executable)
    assert architectures is None
    assert error is not None and "vllm_neuron" in error


def test_examine_passes_the_local_engine() -> None:
    assert examine(load_profile("local-tiny")).ok


@pytest.mark.skipif(Path("/dev/neuron0").exists(), reason="this machine has a Neuron device")
def test_serve_stops_at_the_doctor_before_staging_on_a_machine_without_neuron(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_API_KEY_SECRET, raising=False)
    code = cli_main(["serve", "--profile", "qwen3-4b-baseline", "--no-progress"])
    assert code == EXIT_DOCTOR_FAILED
    err = capsys.readouterr().err
    assert err.count("doctor: FAILED: ") == 1
    assert "no Neuron device (/dev/neuron*)" in err
    assert "staging" not in err


def _fake_python(tmp_path: Path, answer: str) -> str:
    """An interpreter stand-in whose registry child prints `answer` after the marker."""
    script = tmp_path / "python"
    (tmp_path / "answer").write_text(answer, encoding="utf-8")
    script.write_text(
        f"#!/bin/sh\nprintf 'TRNSPEC-REGISTRY '\ncat '{tmp_path / 'answer'}'\n", encoding="utf-8"
    )
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize(
    "answer",
    ["not json", "42", '{"DFlashDraftModel": 1}', "[1, 2]", "[" * 100_000, '"DFlash"', "null"],
)
def test_an_unexpected_registry_answer_is_a_reported_error_not_a_crash(
    tmp_path: Path, answer: str
) -> None:
    architectures, error = read_registry(_fake_python(tmp_path, answer))
    assert architectures is None
    assert error is not None and error.startswith("unexpected answer from vllm-neuron's registry")
    assert len(error) < 300


def test_registry_names_and_versions_with_terminal_escapes_are_printed_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    architectures, error = read_registry(_fake_python(tmp_path, '["Eagle3\\u001b[2J"]'))
    assert error is None and architectures == frozenset({"Eagle3\\x1b[2J"})
    monkeypatch.setattr(metadata, "version", lambda name: "0.29.0\x1b]0;pwned\x07")
    assert installed_version("vllm") == "0.29.0\\x1b]0;pwned\\x07"
