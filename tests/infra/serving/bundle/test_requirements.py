"""The dependencies the init container checks are exactly those the two pyprojects declare."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from infra.serving.bundle.archive import REPO_DIR
from infra.serving.bundle.requirements import PYPROJECTS, declared, normalize


def test_every_declared_dependency_is_checked_with_its_range() -> None:
    declared_texts = [
        re.fullmatch(r"([A-Za-z0-9._-]+)(.*)", text.replace(" ", ""))
        for p in PYPROJECTS
        for text in tomllib.loads((REPO_DIR / p).read_text())["project"]["dependencies"]
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


def test_a_dependency_without_a_known_module_is_refused(tmp_path: Path) -> None:
    for p in PYPROJECTS:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_DIR / p, tmp_path / p)
    tools = tmp_path / PYPROJECTS[1]
    tools.write_text(tools.read_text().replace('"numpy>=1.26,<3",', '"numpy>=1.26,<3", "tqdm>=4",'))
    with pytest.raises(ValueError, match=r"tqdm.*IMPORT_NAMES"):
        declared(tmp_path)
