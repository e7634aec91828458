"""One construct API: every construct in infra/ takes (scope, id, props) with a frozen Props
dataclass whose fields are narrow (never the whole DeploymentSettings or ServingSettings); the
stacks compose them."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing

import pytest
from aws_cdk import Stack
from constructs import Construct

import infra
from infra.settings import DeploymentSettings
from infra.settings.serving import ServingSettings


def _constructs() -> list[type[Construct]]:
    found = {}
    for info in pkgutil.walk_packages(infra.__path__, "infra."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, Construct)
                and not issubclass(cls, Stack)
                and cls.__module__ == info.name
            ):
                found[cls.__qualname__] = cls
    return sorted(found.values(), key=lambda c: c.__qualname__)


CONSTRUCTS = _constructs()


def test_the_walk_finds_the_constructs() -> None:
    names = {c.__name__ for c in CONSTRUCTS}
    assert {"Cluster", "Network", "Neuron", "Karpenter", "ServingWorkload"} <= names


@pytest.mark.parametrize("cls", CONSTRUCTS, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_each_construct_takes_one_frozen_props_dataclass_of_narrow_fields(cls: type) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())
    assert [p.kind for p in params[1:]] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 3, params
    hints = typing.get_type_hints(cls.__init__)
    props = hints[params[3].name]
    assert dataclasses.is_dataclass(props) and props.__dataclass_params__.frozen, props
    field_types = typing.get_type_hints(props).values()
    assert DeploymentSettings not in field_types and ServingSettings not in field_types
