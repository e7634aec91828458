"""What can be checked of the serving image without a Docker engine: the base is the pinned
image of trnspec.config.images, the entrypoint is the serve command, the user, data directory, ready
file and port are the pod contract's (trnspec.config.pod_contract), the build context (the
repository root, narrowed by its .dockerignore) carries what the Dockerfile copies and nothing
heavy, the package builds and installs from its wheel, and what the Dockerfile copies and installs
runs both of the image's commands: `serve` and the calibration Job's `calibrate run`, every import
of the latter (lazy ones included) satisfied by the image's packages and declared dependencies."""

from __future__ import annotations

import ast
import fnmatch
import functools
import importlib.metadata as metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from trnspec.config import pod_contract
from trnspec.config.images import IMAGES, ImageGeneration
from trnspec.config.serving import list_profiles, load_profile

from trnspec_tools.calibration.command import SUBCOMMANDS as CALIBRATE_STEPS
from trnspec_tools.cli import COMMANDS as TOOL_COMMANDS

IMAGE_DIR = Path(__file__).resolve().parents[2] / "image"
#: The build context (infra/serving/image.py builds image/Dockerfile from the repository root).
CONTEXT = IMAGE_DIR.parent


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


def copies() -> list[tuple[str, str]]:
    """(source in the build context, destination in the image) of every COPY."""
    out = []
    for k, a in instructions():
        if k == "COPY":
            src, dest = a.split()
            out.append((src, dest))
    return out


def pip_installed() -> list[str]:
    """The image paths the RUN's `pip install` installs."""
    (argv,) = [c for c in run_commands() if c[:4] == ["python", "-m", "pip", "install"]]
    return [a for a in argv[4:] if not a.startswith("-")]


def dockerignored() -> Callable[[str], bool]:
    """Whether the context's .dockerignore keeps a path (last matching pattern wins; a pattern
    matching a parent directory matches the path)."""
    patterns = [
        p.strip()
        for p in (CONTEXT / ".dockerignore").read_text().splitlines()
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

    return included


def test_build_context_carries_everything_the_dockerfile_copies() -> None:
    included = dockerignored()
    sources = [src for src, _ in copies()]
    assert sources
    for src in sources:
        assert (CONTEXT / src).exists(), src
        assert included(src), f"{src} is excluded by .dockerignore"
        files = [CONTEXT / src] if (CONTEXT / src).is_file() else (CONTEXT / src).rglob("*")
        for path in (f.relative_to(CONTEXT).as_posix() for f in files if f.is_file()):
            if "__pycache__" not in path and ".egg-info" not in path:
                assert included(path), f"{path} is excluded by .dockerignore"
    assert included("image/Dockerfile")
    assert included("image/trnspec/serve/runner.py")
    assert included("image/trnspec/config/pod_contract.py")
    assert included("image/trnspec/profiles/local-tiny.yaml")
    assert included("trnspec_tools/calibration/run.py")
    assert not included("image/trnspec/__pycache__/cli.cpython-311.pyc")
    assert not included("trnspec_tools/calibration/__pycache__/run.cpython-311.pyc")
    assert not included("image/trnspec.egg-info/PKG-INFO")


@pytest.mark.parametrize(
    "path",
    [
        ".venv/lib/python3.11/site-packages/torch/__init__.py",
        ".cache/huggingface/hub/model.safetensors",
        "node_modules/aws-cdk/package.json",
        "cdk.out/manifest.json",
        "reports/bench.json",
        ".git/HEAD",
        "tests/trnspec/test_dockerfile.py",
        "docs/workload.md",
        "infra/serving/image.py",
        "config/default.yaml",
        "README.md",
    ],
)
def test_build_context_leaves_out_everything_else(path: str) -> None:
    assert not dockerignored()(path)


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


# --- What the image installs: the COPYs replayed, the RUN's pip install, the commands run. ---

#: The image's two commands: the serving pod's (the image's own ENTRYPOINT) and the calibration
#: Job's (which overrides it; infra/serving/manifests/calibration.py), as the pod contract has them.
IMAGE_COMMANDS = {
    "serve": (*pod_contract.ENTRYPOINT, pod_contract.SERVE_COMMAND),
    "calibrate": (*pod_contract.TOOLS_ENTRYPOINT, *pod_contract.CALIBRATE_COMMAND),
}
#: The repository's own top-level packages: importable in the image only if the image installs
#: them (never as somebody's dependency in this venv, where they are installed editable).
REPO_PACKAGES = frozenset(
    p.name for root in (CONTEXT, IMAGE_DIR) for p in root.iterdir() if (p / "__init__.py").is_file()
)


def test_image_default_process_is_still_serve() -> None:
    (entrypoint,) = [a for k, a in instructions() if k == "ENTRYPOINT"]
    (cmd,) = [a for k, a in instructions() if k == "CMD"]
    assert json.loads(entrypoint) == list(IMAGE_COMMANDS["serve"])
    assert json.loads(cmd)[0] == "--profile"


@pytest.mark.parametrize("name", IMAGE_COMMANDS)
def test_image_build_proves_each_command_loads(name: str) -> None:
    assert [*IMAGE_COMMANDS[name], "--help", ">", "/dev/null"] in run_commands()


@pytest.fixture(scope="module")
def image_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's own Python packages, installed as its RUN installs them: every COPY replayed
    from the build context into a fake root, then `pip install` of the RUN's paths, without their
    dependencies, into one --target directory."""
    root = tmp_path_factory.mktemp("image-root")
    for src, dest in copies():
        source, target = CONTEXT / src, root / dest.lstrip("/")
        if source.is_dir():
            shutil.copytree(
                source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
            )
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--target",
            str(site),
            *(str(root / path.lstrip("/")) for path in pip_installed()),
        ],
        check=True,
        timeout=300,
    )
    return site


def _dist(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def site_packages(site: Path) -> set[str]:
    """Top-level modules the image's own install put in `site`."""
    return {p.name for p in site.iterdir() if (p / "__init__.py").is_file()} | {
        p.stem for p in site.glob("*.py")
    }


@functools.cache
def image_importable(site: Path) -> frozenset[str]:
    """Top-level modules importable in the image, as far as it declares them: the standard
    library, its own packages, and the modules of the requirements of what it installs, closed
    over those distributions' own requirements (as this venv has them). The base image carries
    more (vLLM's), but nothing the Dockerfile does not ask for is counted on."""
    wanted = [
        Requirement(text)
        for dist in metadata.distributions(path=[str(site)])
        for text in dist.requires or []
    ]
    seen: set[str] = set()
    while wanted:
        req = wanted.pop()
        if _dist(req.name) in seen:
            continue
        seen.add(_dist(req.name))
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            if sub.marker is None or any(
                sub.marker.evaluate({"extra": e}) for e in (req.extras or {""})
            ):
                wanted.append(sub)
    third_party = {
        module
        for module, owners in metadata.packages_distributions().items()
        if any(_dist(o) in seen for o in owners)
    }
    return frozenset(sys.stdlib_module_names | site_packages(site) | (third_party - REPO_PACKAGES))


def test_image_site_holds_trnspec_and_trnspec_tools(image_site: Path) -> None:
    assert {"trnspec", "trnspec_tools"} <= site_packages(image_site)
    assert not {"infra", "tests"} & site_packages(image_site)


def _module_file(site: Path, name: str) -> Path | None:
    base = site.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path, name: str) -> Iterator[tuple[str, bool]]:
    """(module, required) for every import in the module `name` at `path`, lazy ones included:
    `import a.b` and `from a import ...` require their module; `from a import b` may import the
    submodule a.b (else b is a name in a)."""
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
    """Imported module -> the module importing it, for every import reachable from `entries`
    (each module's parent packages and lazy imports included) that the image cannot satisfy."""
    importable = image_importable(site)
    own = site_packages(site)
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
        if top not in own:
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


def calibration_job_entries() -> list[str]:
    """The modules `python -m trnspec_tools calibrate run` imports by name: the package's
    __main__, then the module each dispatch table names (trnspec_tools.cli imports the command's
    module, the calibrate command its step's)."""
    python, flag, package, command, step = IMAGE_COMMANDS["calibrate"]
    assert (python, flag) == ("python", "-m")
    return [f"{package}.__main__", TOOL_COMMANDS[command][0], CALIBRATE_STEPS[step][0]]


def test_every_import_the_calibration_job_can_reach_is_in_the_image(image_site: Path) -> None:
    entries = calibration_job_entries()
    assert "trnspec_tools.calibration.run" in entries
    assert unsatisfied_imports(image_site, entries) == {}


def test_the_reach_walk_sees_what_the_image_lacks(image_site: Path) -> None:
    """The walk above can fail: the calibration's other steps need what the image leaves out."""
    missing = unsatisfied_imports(image_site, [CALIBRATE_STEPS["fetch"][0]])
    assert "infra.outputs" in missing  # the CDK app's outputs: the operator's machine only
    missing = unsatisfied_imports(image_site, [CALIBRATE_STEPS["local"][0]])
    assert "moto" in missing  # local's stand-in S3


GUARD = """
import importlib.abc, runpy, sys
IMPORTABLE = set({importable!r})
class ImageOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in IMPORTABLE and not top.startswith("_"):
            raise ModuleNotFoundError(f"not in the image: {{name}}", name=name)
        return None
sys.meta_path.insert(0, ImageOnly())
sys.argv = [{module!r}, *{args!r}]
runpy.run_module({module!r}, run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("name", IMAGE_COMMANDS)
def test_each_image_command_runs_from_the_image_packages_alone(
    name: str, image_site: Path, tmp_path: Path
) -> None:
    """`<command> --help`, as the image's RUN checks it, from the installed packages with only
    the image's declared imports importable (this venv's editable installs shadowed)."""
    _, _, module, *args = IMAGE_COMMANDS[name]
    guard = GUARD.format(
        importable=sorted(image_importable(image_site)), module=module, args=[*args, "--help"]
    )
    env = {**os.environ, "PYTHONPATH": str(image_site)}
    result = subprocess.run(
        [sys.executable, "-c", guard],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("usage: ")
    where = subprocess.run(
        [sys.executable, "-c", f"import {module}; print({module}.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(image_site))
