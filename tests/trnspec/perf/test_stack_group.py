"""The calibrated stack a profile runs as is read from the command the deployment runs."""

from __future__ import annotations

import pytest
from trnspec.config.serving import load_profile
from trnspec.engine.render import render
from trnspec.perf.stack_group import SYNC_FLAG, stack_group


@pytest.mark.parametrize(
    ("profile", "group"),
    [
        ("qwen3-32b-draft", "nxdi-fork"),
        ("llama31-8b-eagle3", "plugin"),
        ("qwen3-4b-dflash-3xl", "plugin-sync"),
        ("llama31-8b-dflash", "plugin-sync"),
        ("local-tiny", None),
    ],
)
def test_each_shipped_profile_runs_as_the_stack_its_command_says(profile, group):
    assert stack_group(load_profile(profile)) == group


def test_plugin_sync_is_exactly_the_plugin_commands_without_async_scheduling():
    for name in ("llama31-8b-eagle3", "qwen3-4b-dflash-3xl"):
        cfg = load_profile(name)
        synchronous = SYNC_FLAG in render(cfg).argv
        assert (stack_group(cfg) == "plugin-sync") == synchronous
