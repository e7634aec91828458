"""Infra fixtures: one synth per deployment profile per session (built-in validation off)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from platform_synth import Synth, synth_profile


@pytest.fixture(scope="session")
def platform_synth(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Synth]:
    """`platform_synth("default")`: synthesized once per session and profile."""
    cache: dict[str, Synth] = {}

    def get(profile: str) -> Synth:
        if profile not in cache:
            cache[profile] = synth_profile(profile, tmp_path_factory.mktemp(f"cdk-{profile}"))
        return cache[profile]

    return get
