"""Every deployment setting that holds an AWS identifier is checked by AWS's rule
(trnspec.boundary.aws_names) where `-c` or a profile gives it: a value AWS would refuse is one
problem naming the setting, never a synth that passes.

The settings are found by walking the models (a field whose name says it holds an account, a
region, an availability zone, a CIDR or an ARN), so a new one cannot be added unchecked: it
changes the found set, which is pinned.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from infra.settings import SettingsError, load_settings
from infra.settings.models import DeploymentSettings

ACCOUNT = "111122223333"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/trnspec-admin"
#: By kind: values AWS refuses, and one it accepts.
VALUES: dict[str, tuple[tuple[str, ...], str]] = {
    "account": (("\u0661" * 12, "11112222333", "1111222233334"), ACCOUNT),
    "region": (("us-east-\u0661", "../x", "US-EAST-2", "us-east-2/.."), "us-east-2"),
    "availability_zone": (("us-east-\u0662a", "us-east-2", "us-east-2A"), "us-east-2a"),
    "cidr": (("0.0.0.0/0", "10.0.0.1/32", "10.0.0.0/29", "\u0661\u0660.0.0.0/16"), "10.0.0.0/16"),
    "arn": (
        (
            ROLE.replace("arn:aws:", "arn:aws-made-up:"),
            ROLE.replace(ACCOUNT, "\u0661" * 12),
            ROLE.replace("trnspec-admin", "tr\u00e9nspec"),
            ROLE.replace(":role/", ":role//"),
        ),
        ROLE,
    ),
}
#: Every setting that holds an AWS identifier (a list index as 0), with its kind.
SETTINGS = {
    "account": "account",
    "region": "region",
    "admin_principal_arns": "arn",
    "vpc.cidr": "cidr",
    "vpc.availability_zones": "availability_zone",
    "trn2_pools.0.availability_zone": "availability_zone",
    "cluster.existing.vpc_cidr": "cidr",
    "cluster.existing.kubectl_role_arn": "arn",
}
#: What each setting needs beside it to be read at all.
CONTEXT = {
    "cluster.existing": {
        "cluster.existing.name": "prod-trn2",
        "cluster.existing.vpc_cidr": "10.20.0.0/16",
    },
    "trn2_pools.0.availability_zone": {
        "region": "us-east-2",
        "vpc.availability_zones": ["us-east-2a", "us-east-2b"],
    },
    "vpc.availability_zones": {"region": "us-east-2"},
}
#: Settings that hold a list of identifiers: the value given first, then these.
LISTS = {"vpc.availability_zones": ["us-east-2b"], "admin_principal_arns": []}


def _kind(name: str) -> str | None:
    for word in ("account", "region", "availability_zone", "cidr", "arn"):
        if name.startswith(word) or name.endswith((f"_{word}", f"_{word}s")):
            return word
    return None


def _models(annotation: object, indexed: bool = False) -> Iterator[tuple[type[BaseModel], bool]]:
    """The models inside a field's type, each with whether it sits in a tuple (indexed by 0)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, indexed
        return
    origin = typing.get_origin(annotation)
    for arg in typing.get_args(annotation):
        yield from _models(arg, indexed or origin is tuple)


def found(model: type[BaseModel] = DeploymentSettings, prefix: str = "") -> dict[str, str]:
    out = {}
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        if (kind := _kind(name)) is not None:
            out[path] = kind
        for inner, indexed in _models(field.annotation):
            out |= found(inner, f"{path}.0." if indexed else f"{path}.")
    return out


def _given(path: str, value: str) -> dict[str, object]:
    """The overrides that set `path` to `value`, with what it needs beside it."""
    given: dict[str, object] = {}
    for where, extra in CONTEXT.items():
        if path.startswith(where):
            given |= extra
    return given | {path: [value, *LISTS[path]] if path in LISTS else value}


def test_the_aws_identifier_settings_are_the_ones_known() -> None:
    assert found() == SETTINGS


@pytest.mark.parametrize(("path", "kind"), sorted(SETTINGS.items()))
def test_every_aws_identifier_setting_refuses_what_aws_would_and_takes_what_it_accepts(
    path: str, kind: str
) -> None:
    refused, accepted = VALUES[kind]
    for value in refused:
        with pytest.raises(SettingsError) as err:
            load_settings("default", _given(path, value))
        (problem,) = [p for p in err.value.problems if p.field in (path, f"{path}.0")]
        assert "input should be" not in problem.fix, problem  # the rule, not the type
    load_settings("default", _given(path, accepted))


def test_a_role_session_is_refused_with_the_role_to_pass_instead() -> None:
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/me"
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"admin_principal_arns": session})
    assert f"pass the role, ['arn:aws:iam::{ACCOUNT}:role/Admin']" in str(err.value)
