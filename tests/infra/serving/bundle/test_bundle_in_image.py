"""The bundle, end to end, as a pod runs it: the exact init command of the rendered manifests
fetches it from S3 (moto), checks its sha256, extracts it and checks the declared dependencies;
then the exact container commands run from the extracted packages (`--help`), with only the
standard library and the declared dependencies importable. Replaces image/Dockerfile's RUN checks
(`python -m trnspec serve --help`, `python -m trnspec_tools calibrate run --help`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bundle_run import BUNDLED, declared_importable, run_in_image
from trnspec.config.serving import list_profiles

from infra.serving.bundle.archive import Bundle, build_bundle
from infra.serving.image import base_image_reference
from infra.serving.manifests.bundle import BUNDLE_DIR, INIT_CONTAINER, pod_templates
from infra.serving.manifests.placeholders import (
    BUCKET_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    DeployValues,
    bind,
)
from infra.serving.manifests.spec import check_serving
from infra.serving.preflight import workload_preflight
from trnspec_tools.calibration.command import SUBCOMMANDS as CALIBRATE_STEPS
from trnspec_tools.cli import COMMANDS as TOOL_COMMANDS

REGION = "us-east-2"
ASSETS_BUCKET = f"cdk-hnb659fds-assets-123456789012-{REGION}"
SECTION = {
    "profile": "qwen3-4b-baseline",
    "calibration": {"speculative": {"profile": "qwen3-4b-dflash"}, "concurrency": [1, 2, 4]},
}
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bundle, Path]:
    built = build_bundle()
    path = tmp_path_factory.mktemp("asset") / built.file_name
    path.write_bytes(built.data)
    return built, path


def key(bundle: Bundle) -> str:
    return f"{bundle.sha256}.zip"


def manifests(bundle: Bundle, sha256: str | None = None) -> list[dict[str, Any]]:
    """The default calibration deployment's manifests, as the serving stack binds them."""
    checked = check_serving(SECTION, bucket_name=BUCKET_PLACEHOLDER, image_uri=IMAGE_PLACEHOLDER)
    preflight = workload_preflight(checked)
    values = DeployValues(
        bucket_name="trnspec-models",
        image_uri=base_image_reference(preflight.config.image),
        region=REGION,
        vpc_cidr="10.0.0.0/16",
        api_key_secret_arn=None,
        hf_token_secret_arn="arn:aws:secretsmanager:us-east-2:123456789012:secret:hf",
        bundle_uri=f"s3://{ASSETS_BUCKET}/{key(bundle)}",
        bundle_sha256=sha256 or bundle.sha256,
    )
    return bind(preflight.manifests, values).all()


def pods(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for m in objects:
        for pod in pod_templates(m):
            yield m["metadata"]["name"], pod


def init_command(objects: list[dict[str, Any]], dest: Path) -> list[str]:
    """The init container's command (every pod has the same), extracting into `dest` instead of
    the pod's emptyDir."""
    (command,) = {
        tuple(c["command"])
        for _, pod in pods(objects)
        for c in pod.get("initContainers", [])
        if c["name"] == INIT_CONTAINER
    }
    argv = list(command)
    argv[argv.index("--dest") + 1] = str(dest)
    return argv


def container_commands(objects: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each distinct command a bundle container runs, with its subcommand: `trnspec serve`,
    `trnspec stage`, `trnspec_tools calibrate run`."""
    out: dict[str, list[str]] = {}
    for _, pod in pods(objects):
        for c in pod["containers"]:
            if {"name": "PYTHONPATH", "value": BUNDLE_DIR} not in c.get("env", []):
                continue
            words = 2 if c["command"][-1] == "trnspec_tools" else 1
            argv = [*c["command"], *c["args"][:words]]
            out[" ".join(argv[2:])] = argv
    return out


def s3_object(bundle: tuple[Bundle, Path]) -> dict[str, str]:
    built, path = bundle
    return {"bucket": ASSETS_BUCKET, "key": key(built), "file": str(path), "region": REGION}


def install(
    bundle: tuple[Bundle, Path], tmp_path: Path, *, sha256: str | None = None, absent=()
) -> tuple[Any, Path]:
    dest = tmp_path / "opt-trnspec"
    argv = init_command(manifests(bundle[0], sha256), dest)
    result = run_in_image(
        argv,
        cwd=tmp_path,
        s3=s3_object(bundle),
        env={**AWS_ENV, "HOME": str(tmp_path)},
        absent=absent,
    )
    return result, dest


def test_the_rendered_pods_run_serve_stage_and_calibrate_from_the_bundle(bundle) -> None:
    assert set(container_commands(manifests(bundle[0]))) == {
        "trnspec serve",
        "trnspec stage",
        "trnspec_tools calibrate run",
    }


def test_init_fetches_checks_and_extracts_then_every_command_runs(bundle, tmp_path: Path) -> None:
    result, dest = install(bundle, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sha256" in result.stdout and str(dest) in result.stdout
    assert sorted(p.name for p in dest.iterdir()) == ["trnspec", "trnspec_tools"]
    for name, argv in container_commands(manifests(bundle[0])).items():
        ran = run_in_image([*argv, "--help"], cwd=tmp_path, pythonpath=dest)
        assert ran.returncode == 0, f"{name}: {ran.stderr[-3000:]}"
        assert ran.stdout.startswith("usage: "), name
    where = run_in_image(
        ["python", "-c", "import trnspec, trnspec_tools; print(trnspec.__file__)"],
        cwd=tmp_path,
        pythonpath=dest,
    )
    assert where.stdout.startswith(str(dest)), where.stderr
    listed = run_in_image(["python", "-m", "trnspec", "profiles"], cwd=tmp_path, pythonpath=dest)
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == list_profiles()


def test_init_runs_again_over_what_an_earlier_run_left(bundle, tmp_path: Path) -> None:
    """A restarted pod keeps its emptyDir: the second run replaces the first's files."""
    first, dest = install(bundle, tmp_path)
    (dest / "trnspec" / "stale.py").write_text("raise SystemExit(9)\n")
    again, _ = install(bundle, tmp_path)
    assert (first.returncode, again.returncode) == (0, 0), again.stderr
    assert not (dest / "trnspec" / "stale.py").exists()


def test_a_wrong_sha256_stops_the_pod_with_one_line(bundle, tmp_path: Path) -> None:
    result, dest = install(bundle, tmp_path, sha256="0" * 64)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("trnspec bundle:") and "sha256" in line and "redeploy" in line
    assert not dest.exists()


def test_a_dependency_the_image_lacks_stops_the_pod_with_one_line(bundle, tmp_path) -> None:
    result, dest = install(bundle, tmp_path, absent=["rich"])
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "rich (rich>=13,<16) does not import in this image" in line and "fix:" in line
    assert not dest.exists()


# --- Every import `calibrate run` can reach (lazy ones included) is in the bundle or declared.


def _module_file(site: Path, name: str) -> Path | None:
    base = site.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path, name: str) -> Iterator[tuple[str, bool]]:
    """(module, required) for every import in module `name`: `import a.b` and `from a import
    ...` require their module; `from a import b` may import the submodule a.b."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, True
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module, True
            for alias in node.names:
                yield f"{module}.{alias.name}", False


def unsatisfied_imports(site: Path, entries: list[str]) -> dict[str, str]:
    """Imported module -> its importer, for every import reachable from `entries` that neither
    the bundle (`site`) nor the declared dependencies satisfy."""
    importable = declared_importable() | BUNDLED
    todo = [(entry, "<entry>", True) for entry in entries]
    seen: set[str] = set()
    missing: dict[str, str] = {}
    while todo:
        name, importer, required = todo.pop()
        if name in seen:
            continue
        top = name.partition(".")[0]
        if top not in importable:
            if required:
                missing.setdefault(name, importer)
            continue
        if top not in BUNDLED:
            continue  # the standard library or a declared dependency
        path = _module_file(site, name)
        if path is None:
            if required:
                missing.setdefault(name, importer)
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [(".".join(parts[:i]), name, True) for i in range(1, len(parts))]
        todo += [(module, name, req) for module, req in _imports(path, name)]
    return missing


@pytest.fixture(scope="module")
def extracted(bundle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import io
    import zipfile

    dest = tmp_path_factory.mktemp("site")
    zipfile.ZipFile(io.BytesIO(bundle[0].data)).extractall(dest)
    return dest


def test_every_import_the_calibration_job_can_reach_is_in_the_bundle(extracted: Path) -> None:
    entries = [
        "trnspec_tools.__main__",
        TOOL_COMMANDS["calibrate"][0],
        CALIBRATE_STEPS["run"][0],
    ]
    assert "trnspec_tools.calibration.run" in entries
    assert unsatisfied_imports(extracted, entries) == {}


def test_the_reach_walk_sees_what_the_bundle_lacks(extracted: Path) -> None:
    """The walk can fail: the calibration's other steps need what the pods leave out."""
    assert "infra.outputs" in unsatisfied_imports(extracted, [CALIBRATE_STEPS["fetch"][0]])
    assert "moto" in unsatisfied_imports(extracted, [CALIBRATE_STEPS["local"][0]])
