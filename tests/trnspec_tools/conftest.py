"""Shared fixtures for the trnspec_tools tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from shared_server import SPECULATIVE_K

from trnspec_tools.local_engine.local_server import LocalServer
from trnspec_tools.local_engine.tiny_models import TinyModels, ensure_tiny_models


@pytest.fixture(scope="session")
def tiny_models() -> TinyModels:
    """The tiny target/draft pair, from the project cache (built once, a few minutes, if absent:
    the same cache `make demo` uses, so a machine pays for it once)."""
    return ensure_tiny_models()


@pytest.fixture(scope="session")
def speculative_server(tiny_models: TinyModels) -> Iterator[LocalServer]:
    """One real local vLLM CPU server (tiny pair, speculative, k=SPECULATIVE_K) shared by the
    end-to-end tests of the session: starting one costs about a minute."""
    with LocalServer([f"speculation.num_speculative_tokens={SPECULATIVE_K}"]) as server:
        yield server
