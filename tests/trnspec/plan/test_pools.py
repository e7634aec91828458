"""A deployment config's Trn2 pools, read without the infra package: the fields a plan needs,
the infra defaults, and `--set` in the `cdk -c` form (trnspec.plan.pools)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trnspec.boundary.errors import BoundaryError
from trnspec.plan.pools import DeploymentConfig, Pool, max_nodes
from trnspec.plan.readers.evidence import read_deployment_config

REPO = Path(__file__).resolve().parents[3]


def _pools(path: str, sets: list[str] | None = None) -> tuple[Pool, ...]:
    return read_deployment_config(path, sets or []).pools


def test_the_default_config_has_one_trn2_48xlarge_pool_of_two_nodes() -> None:
    assert _pools(str(REPO / "config/default.yaml")) == (Pool("trn2", "trn2.48xlarge", 2, 2),)


def test_every_shipped_config_reads() -> None:
    for path in sorted((REPO / "config").glob("*.yaml")):
        assert _pools(str(path)), path


def test_set_overrides_a_pool_by_index_or_name(tmp_path: Path) -> None:
    pools = _pools(
        str(REPO / "config/default.yaml"),
        ["trn2_pools.0.max_size=5", "trn2_pools.trn2.instance_type=trn2.3xlarge"],
    )
    assert pools == (Pool("trn2", "trn2.3xlarge", 5, 2),)


def test_pools_of_one_type_add_up() -> None:
    pools = _pools(str(REPO / "config/karpenter.yaml"))
    assert max_nodes(pools) == {"trn2.48xlarge": 3}


def test_defaults_are_the_infra_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("trn2_pools:\n  - name: p\n")
    assert _pools(str(path)) == (Pool("p", "trn2.48xlarge", 2, 2),)


@pytest.mark.parametrize(
    ("text", "sets", "needle"),
    [
        ("trn2_pools:\n  - instance_type: p5.48xlarge\n", [], "trn2_pools.0.instance_type"),
        ("trn2_pools:\n  - max_size: true\n", [], "trn2_pools.0.max_size"),
        ("trn2_pools:\n  - max_size: 65\n", [], "trn2_pools.0.max_size"),
        ("trn2_pools:\n  - lnc: 3\n", [], "trn2_pools.0.lnc"),
        ("cluster_name: x\n", [], "has no trn2_pools"),
        ("trn2_pools:\n  - name: a\n", ["trn2_pools.b.max_size=3"], "--set"),
        ("trn2_pools:\n  - name: a\n", ["trn2_pools.0.max_size"], "--set"),
    ],
)
def test_bad_pools_are_one_line_naming_the_field(
    tmp_path: Path, text: str, sets: list[str], needle: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(BoundaryError) as err:
        _pools(str(path), sets)
    assert str(err.value).startswith(needle) or needle in str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_config_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(BoundaryError) as err:
        _pools(str(tmp_path / "none.yaml"))
    assert str(err.value).startswith(("--config=", "--config:"))


def test_scale_to_zero_follows_set_and_defaults_to_false(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("trn2_pools:\n  - name: p\n")
    assert read_deployment_config(str(path)).scale_to_zero is False
    on = read_deployment_config(str(path), ["serving.scale_to_zero=true"])
    assert on == DeploymentConfig((Pool("p", "trn2.48xlarge", 2, 2),), True)


def test_an_empty_serving_section_does_not_scale_to_zero(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("trn2_pools:\n  - name: p\nserving:\n")  # YAML null, as infra reads it
    assert read_deployment_config(str(path)).scale_to_zero is False


def test_a_serving_section_that_is_not_a_mapping_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("trn2_pools:\n  - name: p\nserving: [1]\n")
    with pytest.raises(BoundaryError) as err:
        read_deployment_config(str(path))
    assert str(err.value).startswith(("serving=", "serving:"))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("value", ["maybe", 2, None, [1]])
def test_a_scale_to_zero_that_is_no_boolean_is_one_line_naming_it(
    tmp_path: Path, value: object
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        json.dumps({"trn2_pools": [{"name": "p"}], "serving": {"scale_to_zero": value}})
    )
    with pytest.raises(BoundaryError) as err:
        read_deployment_config(str(path))
    assert str(err.value).startswith(
        ("serving.scale_to_zero=", "serving.scale_to_zero:")
    ) and "\n" not in str(err.value)
