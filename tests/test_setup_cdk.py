"""`make setup-cdk` alone runs every post-deploy command: `scripts/smoke.py --stack` and
`scripts/bench.py --stack` import nothing the light install leaves out.

What the light install holds is read from the Makefile's setup-cdk recipe (the packages and
extras it installs) and the pyproject files' dependency lists, closed over the installed
distributions' own requirements. The scripts then run (`--stack --help`) in a subprocess where
importing any other third-party module fails, as it would in that venv; and every import of the
modules they reach, lazy ones included (the port-forward's kubernetes client), is checked too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tests.requirement_closure import distribution_name, modules_of, requirement_closure

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = ("smoke", "bench")
#: The repository's own top-level packages (installed editable by the recipe).
LOCAL = frozenset({"trnspec", "trnspec_tools", "infra", "scripts"})
#: The entry modules of the two scripts (scripts/<name>.py only runs these).
ENTRIES = {"smoke": "trnspec_tools.smoke", "bench": "trnspec_tools.bench.bench"}
#: Modules the scripts reach only in another mode than --stack, not followed: each needs more
#: than the light install by design.
OTHER_MODES = {
    "trnspec_tools.local_engine": "bench --local: the vLLM CPU engine (make setup)",
    "trnspec.checks.doctor_probe": "runs inside the Neuron image (vllm_neuron)",
}


def _recipe_installs() -> list[tuple[Path, set[str]]]:
    """(project directory, extras) of every `-e DIR[extras]` in the setup-cdk recipe."""
    text = (REPO / "Makefile").read_text()
    recipe = text[text.index("$(CDK_STAMP): ") :].split("\n\n", 1)[0]
    (line,) = [ln for ln in recipe.splitlines() if "pip install" in ln and " -e " in ln]
    out = []
    for spec in re.findall(r"-e\s+(\"[^\"]+\"|\S+)", line):
        spec = spec.strip('"')
        m = re.fullmatch(r"([^\[]+)(?:\[([^\]]*)\])?", spec)
        assert m, spec
        extras = {e.strip() for e in (m[2] or "").split(",") if e.strip()}
        out.append((REPO / m[1], extras))
    return out


def extra_requirements(project: Mapping[str, Any], extra: str) -> list[Requirement]:
    """An extra's requirements, with the project's own extras it names (`tools` lists
    `trnspec-platform[pods]`) replaced by their lists: read from the pyproject, not from the
    installed metadata, which is as old as the last `make setup`."""
    out: list[Requirement] = []
    for text in project["optional-dependencies"][extra]:
        req = Requirement(text)
        if distribution_name(req.name) == distribution_name(project["name"]):
            for inner in sorted(req.extras):
                out += extra_requirements(project, inner)
        else:
            out.append(req)
    return out


def _light_install() -> set[str]:
    """Normalized names of every distribution the light install puts in the venv."""
    wanted: list[Requirement] = []
    for project, extras in _recipe_installs():
        data = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        wanted += [Requirement(r) for r in data.get("dependencies", [])]
        for extra in extras:
            wanted += extra_requirements(data, extra)
    return requirement_closure(wanted)


def _allowed_modules() -> set[str]:
    return set(LOCAL) | set(sys.stdlib_module_names) | modules_of(_light_install())


def test_the_recipe_installs_the_tools_extra() -> None:
    assert any("tools" in extras for _, extras in _recipe_installs())


def test_an_extra_that_names_the_projects_own_extra_brings_that_list() -> None:
    project = {
        "name": "Trnspec_Platform",
        "optional-dependencies": {
            "pods": ["numpy>=1.26,<3"],
            "tools": ["trnspec-platform[pods]", "rich>=13"],
        },
    }
    assert [str(r) for r in extra_requirements(project, "tools")] == ["numpy<3,>=1.26", "rich>=13"]
    assert "prometheus-client" in _light_install()  # the root pyproject's pods extra, read


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_answers_stack_help_with_only_the_light_install(script: str) -> None:
    allowed = sorted(_allowed_modules())
    guard = f"""
import importlib.abc, runpy, sys
ALLOWED = set({allowed!r})
class Light(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in ALLOWED and not top.startswith("_"):
            raise ModuleNotFoundError(f"not in the light install: {{name}}", name=name)
        return None
sys.meta_path.insert(0, Light())
sys.argv = ["scripts/{script}.py", "--stack", "TrnspecPlatform-serving", "--help"]
runpy.run_path("scripts/{script}.py", run_name="__main__")
"""
    result = subprocess.run(
        [sys.executable, "-c", guard], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--stack" in result.stdout


def _module_file(name: str) -> Path | None:
    for root in (REPO, REPO / "image"):
        base = root / Path(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _imports_reached(entry: str) -> dict[str, str]:
    """Third-party top-level module -> the local module importing it, over every local module
    reachable from `entry` (lazy imports included)."""
    todo: list[str] = [entry]
    seen: set[str] = set()
    third_party: dict[str, str] = {}
    while todo:
        name = todo.pop()
        if name in seen or any(name.startswith(m) for m in OTHER_MODES):
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for imported in names:
                top = imported.partition(".")[0]
                if top in LOCAL:
                    todo.append(imported)
                else:
                    third_party.setdefault(top, name)
    return third_party


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_import_the_script_can_reach_is_in_the_light_install(script: str) -> None:
    allowed = _allowed_modules()
    missing = {
        top: where for top, where in _imports_reached(ENTRIES[script]).items() if top not in allowed
    }
    assert missing == {}
    assert "kubernetes" in _imports_reached(ENTRIES[script])  # the --stack port-forward
