"""What the bundle needs from the image it runs in: the runtime dependencies that
image/pyproject.toml declares for trnspec and the root pyproject.toml's `pods` extra for
trnspec_tools, each with the module it is imported as. The init container checks each imports,
in its declared range, before any pod runs trnspec (infra/serving/bundle/install.py)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from infra.serving.bundle.archive import REPO_DIR


@dataclass(frozen=True)
class Declaration:
    """Where one bundled package declares its runtime dependencies: a pyproject's
    `dependencies`, or with `extra` that optional-dependencies list."""

    pyproject: str
    extra: str | None = None

    def where(self) -> str:
        return f"{self.pyproject} [{self.extra}]" if self.extra else self.pyproject

    def texts(self, repo_dir: Path) -> list[str]:
        project = tomllib.loads((repo_dir / self.pyproject).read_text())["project"]
        if self.extra is None:
            return list(project.get("dependencies", []))
        return list(project["optional-dependencies"][self.extra])


#: trnspec's dependencies, then trnspec_tools' (the root project's `pods` extra).
DECLARATIONS = (Declaration("image/pyproject.toml"), Declaration("pyproject.toml", "pods"))
#: Distribution name (normalized) -> the module it is imported as.
IMPORT_NAMES = {
    "pydantic": "pydantic",
    "pyyaml": "yaml",
    "boto3": "boto3",
    "httpx": "httpx",
    "rich": "rich",
    "numpy": "numpy",
    "prometheus-client": "prometheus_client",
}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


@dataclass(frozen=True)
class RuntimeRequirement:
    """One declared dependency: `pydantic>=2.7,<3` imported as `pydantic`."""

    distribution: str
    specifier: str
    module: str

    def argument(self) -> str:
        """Its form on the init container's command line: `module=distribution specifier`."""
        return f"{self.module}={self.distribution}{self.specifier}"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(repo_dir: Path = REPO_DIR) -> tuple[RuntimeRequirement, ...]:
    """Every dependency of DECLARATIONS, in declaration order; ValueError for one without a known
    module (add it to IMPORT_NAMES) or with a marker or extras (the check cannot evaluate them)."""
    out: list[RuntimeRequirement] = []
    for declaration in DECLARATIONS:
        where = declaration.where()
        for text in declaration.texts(repo_dir):
            match = _NAME.match(text)
            if match is None or ";" in text or "[" in text:
                raise ValueError(
                    f"{where}: {text!r}: write it as name>=x,<y (no extras or markers)"
                )
            name, specifier = normalize(match.group(1)), match.group(2).replace(" ", "")
            if name not in IMPORT_NAMES:
                raise ValueError(
                    f"{where}: {text!r}: no module known for {name!r}; add it to "
                    "infra/serving/bundle/requirements.py IMPORT_NAMES"
                )
            out.append(RuntimeRequirement(name, specifier, IMPORT_NAMES[name]))
    return tuple(out)
