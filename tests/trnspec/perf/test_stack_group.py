"""The calibrated stack a profile runs as is read from the command the deployment runs, by the
engine's rule: on the plugin, `--speculative-config` turns async scheduling off."""

from __future__ import annotations

import pytest
from trnspec.config.images import CommandForm, image_spec
from trnspec.config.serving import list_profiles, load_profile
from trnspec.engine.render import render
from trnspec.perf.published import load_published
from trnspec.perf.stack_group import (
    DIRECT_GROUPS,
    SPECULATIVE_FLAG,
    SYNC_FLAG,
    plugin_group,
    stack_group,
)


@pytest.mark.parametrize(
    ("profile", "group"),
    [
        ("qwen3-32b-draft", "nxdi-fork"),
        ("llama31-8b-eagle3", "plugin-sync"),
        ("qwen3-4b-dflash-3xl", "plugin-sync"),
        ("llama31-8b-dflash", "plugin-sync"),
        ("qwen3-4b-baseline", "plugin"),
        ("local-tiny", None),
    ],
)
def test_each_shipped_profile_runs_as_the_stack_its_command_says(profile, group):
    assert stack_group(load_profile(profile)) == group


def test_every_plugin_profile_with_speculation_is_synchronous():
    """No speculative plugin command sits in the asynchronous group, whatever its other flags."""
    plugin = [
        load_profile(n)
        for n in list_profiles()
        if image_spec(load_profile(n).image).command_form is CommandForm.PLUGIN
    ]
    assert plugin
    for cfg in plugin:
        argv = render(cfg).argv
        synchronous = SYNC_FLAG in argv or SPECULATIVE_FLAG in argv
        assert (stack_group(cfg) == "plugin-sync") == synchronous, cfg.name


@pytest.mark.parametrize(
    ("argv", "group"),
    [
        (["vllm", "serve", "m"], "plugin"),
        (["vllm", "serve", "m", SYNC_FLAG], "plugin-sync"),
        (["vllm", "serve", "m", SPECULATIVE_FLAG, '{"method": "eagle3"}'], "plugin-sync"),
        (["vllm", "serve", "m", f'{SPECULATIVE_FLAG}={{"method": "dflash"}}'], "plugin-sync"),
        (["vllm", "serve", "m", "--speculative-config-file", "x"], "plugin"),
    ],
)
def test_the_plugin_rule_reads_the_argv(argv, group):
    assert plugin_group(argv) == group


def test_no_published_speculative_plugin_row_sits_in_the_async_group():
    rows, _ = load_published()
    for m in rows:
        if m.stack_group.startswith("plugin") and m.method != "none":
            assert m.stack_group == "plugin-sync", m.id


def test_no_profile_is_priced_from_rows_measured_without_a_server():
    groups = {stack_group(load_profile(n)) for n in list_profiles()}
    assert groups and not groups & DIRECT_GROUPS
