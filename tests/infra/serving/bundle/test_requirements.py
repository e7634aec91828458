"""The dependencies the init container checks are exactly those declared for the bundle's two
packages: trnspec's in image/pyproject.toml, trnspec_tools' in the root pyproject's `pods`
extra, which the `tools` extra includes (one list, not a second copy)."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from infra.serving.bundle.archive import REPO_DIR
from infra.serving.bundle.requirements import DECLARATIONS, declared, normalize


def test_every_declared_dependency_is_checked_with_its_range() -> None:
    declared_texts = [
        re.fullmatch(r"([A-Za-z0-9._-]+)(.*)", text.replace(" ", ""))
        for d in DECLARATIONS
        for text in d.texts(REPO_DIR)
    ]
    got = declared()
    assert [(r.distribution, r.specifier) for r in got] == [
        (normalize(m.group(1)), m.group(2)) for m in declared_texts if m is not None
    ]
    assert len(got) == len(declared_texts)
    assert {r.module for r in got} == {
        "pydantic", "yaml", "boto3", "httpx", "rich", "numpy", "prometheus_client"
    }  # fmt: skip
    assert next(r for r in got if r.module == "yaml").argument() == "yaml=pyyaml>=6,<7"


def test_the_tools_extra_includes_the_pods_list_instead_of_repeating_it() -> None:
    root = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["project"]
    extras = root["optional-dependencies"]
    assert f"{root['name']}[pods]" in extras["tools"]
    pods = {normalize(re.split(r"[<>=!~ ]", t, maxsplit=1)[0]) for t in extras["pods"]}
    tools = {normalize(re.split(r"[<>=!~ \[]", t, maxsplit=1)[0]) for t in extras["tools"]}
    assert pods and not pods & tools
    assert not (REPO_DIR / "image" / "tools" / "pyproject.toml").exists()


def test_a_dependency_without_a_known_module_is_refused(tmp_path: Path) -> None:
    for d in DECLARATIONS:
        (tmp_path / d.pyproject).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_DIR / d.pyproject, tmp_path / d.pyproject)
    tools = tmp_path / DECLARATIONS[1].pyproject
    text = tools.read_text()
    assert '"numpy>=1.26,<3",' in text
    tools.write_text(text.replace('"numpy>=1.26,<3",', '"numpy>=1.26,<3", "tqdm>=4",'))
    with pytest.raises(ValueError, match=r"pyproject.toml \[pods\].*tqdm.*IMPORT_NAMES"):
        declared(tmp_path)
