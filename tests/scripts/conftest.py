"""Shared fixtures for the scripts' tests."""

from __future__ import annotations

import pytest

from scripts.tiny_models import TinyModels, ensure_tiny_models


@pytest.fixture(scope="session")
def tiny_models() -> TinyModels:
    """The tiny target/draft pair, from the project cache (built once, a few minutes, if absent:
    the same cache `make demo` uses, so a machine pays for it once)."""
    return ensure_tiny_models()
