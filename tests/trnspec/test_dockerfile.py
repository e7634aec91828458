"""What can be checked of the serving image without a Docker engine: the base is the pinned
image of trnspec.config.images, the entrypoint is the serve command, the user, data directory, ready
file and port are the pod contract's (trnspec.config.pod_contract), the build context carries what
the Dockerfile copies, and the package builds and installs from its wheel."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from trnspec.config import pod_contract
from trnspec.config.images import IMAGES, ImageGeneration
from trnspec.config.serving import list_profiles, load_profile

IMAGE_DIR = Path(__file__).resolve().parents[2] / "image"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in (IMAGE_DIR / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, args = pending.partition(" ")
        out.append((keyword.upper(), args.strip()))
        pending = ""
    return out


def first(keyword: str) -> str:
    return next(args for k, args in instructions() if k == keyword)


def last(keyword: str) -> str:
    return [args for k, args in instructions() if k == keyword][-1]


def build_args() -> dict[str, str]:
    return dict(a.partition("=")[::2] for k, a in instructions() if k == "ARG")


def env() -> dict[str, str]:
    """The image's ENV assignments (KEY=value form)."""
    return {
        key: value
        for k, a in instructions()
        if k == "ENV"
        for key, _, value in (item.partition("=") for item in shlex.split(a))
    }


def run_commands() -> list[list[str]]:
    """Each `&&`-joined command of every RUN, as argv (parentheses and `||` groups dropped)."""
    out: list[list[str]] = []
    for k, a in instructions():
        if k == "RUN":
            out += [shlex.split(c.strip(" ()")) for c in a.split("&&")]
    return out


def pinned(generation: ImageGeneration) -> str:
    spec = IMAGES[generation]
    return f"{spec.uri}@{spec.digest}" if spec.digest else spec.uri


def test_base_image_is_the_pinned_image_of_the_default_profiles_generation() -> None:
    kinds = [k for k, _ in instructions()]
    assert kinds.index("ARG") < kinds.index("FROM")
    name, _, default = first("ARG").partition("=")
    assert name == "BASE_IMAGE"
    assert first("FROM") == "${BASE_IMAGE}"
    cmd = json.loads(last("CMD"))
    name = cmd[cmd.index("--profile") + 1]
    # The deployment default names a plan file (config/plans/), whose serving.profile it runs.
    repo = IMAGE_DIR.parent
    deployment_default = yaml.safe_load((repo / "config" / "default.yaml").read_text())
    plan = yaml.safe_load((repo / deployment_default["serving"]["plan"]).read_text())
    assert name == plan["serving"]["profile"]
    assert default == pinned(load_profile(name).image)


@pytest.mark.parametrize(
    "generation", [g for g, spec in IMAGES.items() if spec.runs_on_trn2], ids=str
)
def test_every_trn2_base_is_pinned_by_tag(generation: ImageGeneration) -> None:
    ref = pinned(generation)
    repository, _, tag = ref.split("@")[0].rpartition(":")
    assert "/" in repository and tag and tag != "latest"
    assert f"sdk{IMAGES[generation].neuron_sdk}" in tag


def test_entrypoint_is_the_serve_command_in_exec_form() -> None:
    assert json.loads(last("ENTRYPOINT")) == ["python", "-m", "trnspec", "serve"]
    assert json.loads(last("ENTRYPOINT")) == [
        *pod_contract.ENTRYPOINT,
        pod_contract.SERVE_COMMAND,
    ]


def test_runtime_user_is_not_root() -> None:
    user = last("USER")
    uid = build_args().get(user.strip("${}"))
    assert (uid or user) not in {"0", "root", ""}


def test_runtime_user_is_the_contracts_uid() -> None:
    assert last("USER") == "${TRNSPEC_UID}"
    assert build_args()["TRNSPEC_UID"] == str(pod_contract.IMAGE_UID)


def test_image_environment_is_the_contracts() -> None:
    image_env = env()
    assert image_env[pod_contract.ENV_DATA_DIR] == pod_contract.DATA_DIR
    assert image_env[pod_contract.ENV_READY_FILE] == pod_contract.READY_FILE


def test_image_creates_the_contracts_data_dirs_for_its_user() -> None:
    commands = run_commands()
    made = {path for argv in commands if argv[:2] == ["mkdir", "-p"] for path in argv[2:]}
    assert {pod_contract.MODELS_ROOT, pod_contract.COMPILED_ROOT} <= made
    assert ["chown", "-R", "${TRNSPEC_UID}", pod_contract.DATA_DIR] in commands
    assert last("WORKDIR") == pod_contract.DATA_DIR


def test_image_exposes_the_contracts_server_port() -> None:
    assert last("EXPOSE").split() == [str(pod_contract.SERVER_PORT)]


def test_build_context_carries_everything_the_dockerfile_copies() -> None:
    patterns = [
        p.strip()
        for p in (IMAGE_DIR / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]

    def included(path: str) -> bool:
        keep = True
        for p in patterns:
            negated, pat = p.startswith("!"), p.lstrip("!").rstrip("/")
            hit = fnmatch.fnmatch(path, pat) or path.startswith(pat + "/")
            if pat.startswith("**/"):
                hit = hit or any(fnmatch.fnmatch(part, pat[3:]) for part in path.split("/"))
            if hit:
                keep = negated
        return keep

    sources = [a.split()[0] for k, a in instructions() if k == "COPY"]
    assert sources
    for src in sources:
        assert (IMAGE_DIR / src).exists(), src
        assert included(src), f"{src} is excluded by .dockerignore"
    assert included("trnspec/serve/runner.py") and included("trnspec/config/pod_contract.py")
    assert included("trnspec/profiles/local-tiny.yaml")
    assert not included("trnspec/__pycache__/cli.cpython-311.pyc")
    assert not included("trnspec/serve/__pycache__/runner.cpython-311.pyc")
    assert not included("trnspec.egg-info/PKG-INFO")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the package's wheel from a copy of image/ (the build writes into its source dir)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    shutil.copytree(
        IMAGE_DIR, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(root / "dist"),
            str(src),
        ],
        check=True,
        timeout=300,
    )
    (found,) = (root / "dist").glob("trnspec-*.whl")
    return found


def test_wheel_contains_the_package_and_every_profile(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    package = IMAGE_DIR / "trnspec"
    sources = {f"trnspec/{p.relative_to(package).as_posix()}" for p in package.rglob("*.py")}
    assert {"trnspec/__main__.py", "trnspec/cli/main.py", "trnspec/serve/runner.py"} <= sources
    assert sources <= names, sorted(sources - names)
    for profile in list_profiles():
        assert f"trnspec/profiles/{profile}.yaml" in names


def test_installed_wheel_runs_the_cli_without_the_source_tree(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import trnspec; print(trnspec.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(target))
    listed = subprocess.run(
        [sys.executable, "-m", "trnspec", "profiles"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == list_profiles()
    help_text = subprocess.run(
        [sys.executable, "-m", "trnspec", "serve", "--help"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--ready-file" in help_text.stdout
