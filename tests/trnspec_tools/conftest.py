"""Shared fixtures for the trnspec_tools tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_pool import ServerPool
from shared_server import SPECULATIVE_K

from trnspec_tools.local_engine import local_server
from trnspec_tools.local_engine.local_server import LocalServer
from trnspec_tools.local_engine.tiny_models import TinyModels, ensure_tiny_models


@pytest.fixture(scope="session")
def tiny_models() -> TinyModels:
    """The tiny target/draft pair, from the project cache (built once, a few minutes, if absent:
    the same cache `make demo` uses, so a machine pays for it once)."""
    return ensure_tiny_models()


@pytest.fixture(scope="session")
def local_servers(tiny_models: TinyModels) -> Iterator[ServerPool]:
    """The real local vLLM CPU servers of this session, one per config (server_pool.py): only
    `*_e2e.py` files may use them (the root conftest runs those on one worker)."""
    pool = ServerPool(LocalServer)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def speculative_server(local_servers: ServerPool) -> LocalServer:
    """The local profile's speculative server (tiny pair, k=SPECULATIVE_K)."""
    return local_servers.get([f"speculation.num_speculative_tokens={SPECULATIVE_K}"])


@pytest.fixture(scope="session")
def plain_server(local_servers: ServerPool) -> LocalServer:
    """The same profile with speculation off."""
    return local_servers.get(["speculation.method=none"])


@pytest.fixture
def servers_from_the_pool(local_servers: ServerPool, monkeypatch: pytest.MonkeyPatch) -> ServerPool:
    """Commands under test that start their own LocalServer get the pool's server of the same
    config instead (they import LocalServer when they start one)."""
    monkeypatch.setattr(local_server, "LocalServer", local_servers.borrowing)
    return local_servers
