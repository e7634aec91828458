"""Isolated, cached tool environments holding one vLLM release each, for the parser tests.

Each environment is a venv under `.cache/vllm-parsers/<vllm version>-<input hash>/` (git-ignored,
never the project's .venv) with:
  - torch CPU from this machine's wheel (`pip install torch==2.13.0` resolves to the local file
    through the machine's pip configuration; no vLLM release here needs a GPU build to parse),
  - the vLLM wheel itself, `--no-deps`, from PyPI,
  - only the packages that building `vllm serve`'s parser imports, resolved as of the release's
    upload date (`pip install --uploaded-prior-to`, pip >= 26, PyPI only: the machine's pip
    configuration is switched off for this step, so its local indexes cannot slip newer
    transformers or pydantic in),
  - the test-only platform plugin (./platform_plugin), without which vLLM cannot build its
    arguments on a machine with no accelerator;
all with `--no-compile` (the parser's first import compiles what it imports), and a package
named in `without_dependencies` without its own (xgrammar's triton is not imported).
Built on first use, under a file lock so parallel test runs do not collide; a `.complete` stamp
records the build's duration and size. A change of inputs (package list, plugin files) changes
the hash and so builds a fresh environment.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
CACHE_ROOT = REPO_ROOT / ".cache" / "vllm-parsers"
PLUGIN_DIR = HERE / "platform_plugin"
PARSE_SCRIPT = HERE / "parse_argvs.py"
PYPI = "https://pypi.org/simple"
#: First pip release with --uploaded-prior-to is 26.0 (the venv's bundled pip is older).
PIP_REQUIREMENT = "pip>=26"
#: This machine's CPU torch wheel (pip's configured find-links). vLLM 0.9.1 pins torch 2.7.0 and
#: 0.24.0 pins 2.11.0, but building the parser only imports torch's Python API, which 2.13 keeps;
#: the pinned CUDA builds from PyPI would add about 2 GB for nothing the parser touches.
TORCH_REQUIREMENT = "torch==2.13.0"
#: How `_build` installs (part of every fingerprint, so a change of recipe builds afresh):
#: `--no-compile` leaves bytecode to the first import, which compiles only the modules the
#: parser imports instead of every file of torch, vLLM and transformers.
BUILD_RECIPE = "no-compile"


@dataclass(frozen=True)
class ParserRelease:
    """One vLLM release and what importing its `vllm serve` parser needs."""

    vllm: str
    #: The day after the wheel's upload (PyPI upload-time): dependencies resolve as of then.
    uploaded_prior_to: str
    #: Import-path dependencies of vllm.entrypoints.cli.serve (found by importing it with only
    #: the wheel installed and adding each missing module until the parser builds).
    packages: tuple[str, ...]
    #: Those of `packages` installed without their own dependencies, because what they pull
    #: in is large and never imported by the parser (xgrammar's triton: about 0.7-0.9 GB).
    without_dependencies: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        inputs = [self.vllm, self.uploaded_prior_to, self.packages, self.without_dependencies]
        digest.update(json.dumps([*inputs, BUILD_RECIPE]).encode())
        digest.update(TORCH_REQUIREMENT.encode())
        for path in _plugin_sources():
            digest.update(path.relative_to(PLUGIN_DIR).as_posix().encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()[:12]


@dataclass(frozen=True)
class ToolEnv:
    """A built environment: its interpreter and what the build cost."""

    python: Path
    vllm: str
    build_seconds: float
    disk_bytes: int


def _plugin_sources() -> list[Path]:
    """The plugin's own files (not what a build leaves next to them)."""
    return sorted([PLUGIN_DIR / "pyproject.toml", *PLUGIN_DIR.glob("trnspec_parse_platform/*.py")])


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _run(cmd: list[str], *, isolated_pip: bool = False, log: Path) -> None:
    env = dict(os.environ)
    if isolated_pip:
        env["PIP_CONFIG_FILE"] = os.devnull  # pip then reads no configuration file at all
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
    if result.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:]
        raise RuntimeError(
            f"building the vLLM parser environment failed ({' '.join(cmd[:6])} ...); "
            f"log {log}:\n" + "\n".join(tail)
        )


def _pinned(env_dir: Path, packages: tuple[str, ...]) -> list[str]:
    """`packages` with the version ranges the installed vLLM wheel declares for them (its
    Requires-Dist), so the date cutoff and vLLM's own pins both apply."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    metadata = next(env_dir.glob("lib/python*/site-packages/vllm-*.dist-info/METADATA"))
    declared: dict[str, str] = {}
    for line in metadata.read_text(encoding="utf-8").splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        req = Requirement(line.removeprefix("Requires-Dist: "))
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            declared[canonicalize_name(req.name)] = f"{req.name}{req.specifier}"
    return [declared.get(canonicalize_name(name.split("[")[0]), name) for name in packages]


def _build(release: ParserRelease, env_dir: Path, log: Path) -> None:
    if env_dir.exists():
        shutil.rmtree(env_dir)  # a half-built environment from an interrupted run
    base_python = getattr(sys, "_base_executable", sys.executable)
    _run([base_python, "-m", "venv", str(env_dir)], log=log)
    py = str(env_dir / "bin" / "python")
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    _run([*pip, "--upgrade", PIP_REQUIREMENT], log=log)
    _run([*pip, TORCH_REQUIREMENT], log=log)
    _run(
        [*pip, "--index-url", PYPI, "--no-deps", f"vllm=={release.vllm}"],
        isolated_pip=True,
        log=log,
    )
    dated = [*pip, "--index-url", PYPI, "--uploaded-prior-to", release.uploaded_prior_to]
    alone = set(release.without_dependencies)
    pinned = _pinned(env_dir, release.packages)
    with_deps = [p for name, p in zip(release.packages, pinned, strict=True) if name not in alone]
    _run([*dated, *with_deps], isolated_pip=True, log=log)
    if alone:
        without = [p for name, p in zip(release.packages, pinned, strict=True) if name in alone]
        _run([*dated, "--no-deps", *without], isolated_pip=True, log=log)
    # Build from a copy, so the build leaves nothing in the source tree.
    plugin_copy = env_dir / "plugin-src"
    for path in _plugin_sources():
        target = plugin_copy / path.relative_to(PLUGIN_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    _run([*pip, "--index-url", PYPI, "--no-deps", str(plugin_copy)], isolated_pip=True, log=log)


def ensure_env(release: ParserRelease, cache_root: Path = CACHE_ROOT) -> ToolEnv:
    """The environment for `release`, built first if it is not cached yet."""
    cache_root.mkdir(parents=True, exist_ok=True)
    env_dir = cache_root / f"{release.vllm}-{release.fingerprint()}"
    stamp = env_dir / ".complete"
    with (cache_root / f"{release.vllm}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a parallel run waits here, then finds the stamp
        if not stamp.is_file():
            log = cache_root / f"{env_dir.name}.log"
            log.write_text("", encoding="utf-8")
            started = time.monotonic()
            _build(release, env_dir, log)
            record = {
                "vllm": release.vllm,
                "build_seconds": round(time.monotonic() - started, 1),
                "disk_bytes": _dir_bytes(env_dir),
            }
            stamp.write_text(json.dumps(record), encoding="utf-8")
    record = json.loads(stamp.read_text(encoding="utf-8"))
    return ToolEnv(
        python=env_dir / "bin" / "python",
        vllm=release.vllm,
        build_seconds=float(record["build_seconds"]),
        disk_bytes=int(record["disk_bytes"]),
    )


def parse_argvs(python: Path | str, cases: list[dict]) -> dict:
    """Run parse_argvs.py under `python` (one process, vLLM imported once) for all `cases`."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the tool env must not see the project's packages
    # Installed with --no-compile: the first run writes the bytecode of what it imports, and
    # the next ones read it (a machine that sets this would recompile on every run).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    env["VLLM_CONFIGURE_LOGGING"] = "0"
    result = subprocess.run(
        [str(python), str(PARSE_SCRIPT)],
        input=json.dumps({"cases": cases}),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(CACHE_ROOT if CACHE_ROOT.is_dir() else REPO_ROOT),
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{PARSE_SCRIPT.name} failed under {python} (exit {result.returncode}):\n"
            + result.stderr[-4000:]
        )
    marker = "TRNSPEC-PARSE-RESULT "  # parse_argvs.RESULT_MARKER
    lines = [line for line in result.stdout.splitlines() if line.startswith(marker)]
    if not lines:
        raise RuntimeError(f"no result from {PARSE_SCRIPT.name}:\n{result.stdout[-2000:]}")
    return json.loads(lines[-1].removeprefix(marker))
