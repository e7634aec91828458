"""What a set of requirements brings into an environment: the distributions they pull in,
closed over each installed distribution's own requirements (with the extras asked for), and the
top-level modules those distributions provide. Read from this environment's installed metadata.

Used by the setup test (tests/test_setup_cdk.py: what the light install may import) and the
bundle's run in the image (tests/infra/serving/bundle/bundle_run.py: what the image is counted
on for); imported as `tests.requirement_closure` (the repository root is on pytest's pythonpath).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import metadata

from packaging.requirements import Requirement


def distribution_name(name: str) -> str:
    """A distribution's normalized name (PEP 503): `Typing_Extensions` -> `typing-extensions`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_closure(requirements: Iterable[Requirement]) -> set[str]:
    """Normalized names of `requirements` and of everything their installed distributions
    require in turn, markers evaluated with each requirement's extras. A requirement that is
    not installed here is counted but not followed."""
    wanted = list(requirements)
    seen: set[str] = set()
    while wanted:
        req = wanted.pop()
        if distribution_name(req.name) in seen:
            continue
        seen.add(distribution_name(req.name))
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
    return seen


def modules_of(distributions: set[str]) -> set[str]:
    """Top-level modules that any of `distributions` (normalized names) installs here."""
    return {
        module
        for module, owners in metadata.packages_distributions().items()
        if any(distribution_name(o) in distributions for o in owners)
    }
