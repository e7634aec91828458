"""The local vLLM CPU servers a test session's end-to-end files share: one server per distinct
serving config, started when first asked for and stopped when the session ends.

Starting one costs about a minute on 2 cores (three processes each import vLLM and torch), and
the end-to-end files used to start ten between them, most with the same two configs (plain, and
the local profile's k=4). The root conftest runs every `*_e2e.py` file on one pytest-xdist
worker, so the pool on that worker starts each config once.

A command under test that starts its own servers (`bench --local`, `tune`, `calibrate local`)
gets the pool's through `borrowing`: `LocalServer(overrides, profile=...)` returns a handle to the
running server of the same config, whose `with` block and `stop()` leave it running. The config
is compared whole (profile, model paths and every override, the port aside), so a command gets
exactly the server it asked for, or a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from trnspec.config.serving import ServingConfig

from trnspec_tools.local_engine.local_server import TINY_PROFILE, server_config

#: The port every config is compared at (a server's own port is not part of what it serves).
KEY_PORT = 8000

#: Starts nothing: builds a server (LocalServer, or a test's stand-in) from overrides and a profile.
ServerFactory = Callable[..., Any]
#: What a server started with these overrides would serve; equal keys, same server.
ConfigOf = Callable[[str, Sequence[str]], object]


def config_of(profile: str, overrides: Sequence[str]) -> ServingConfig:
    """The config a server started with `overrides` would serve, at KEY_PORT."""
    return server_config(profile, overrides, KEY_PORT)


class Borrowed:
    """A running pooled server lent to code written for its own LocalServer: entering gives the
    server, leaving or stopping leaves it running for the next test."""

    def __init__(self, server: Any) -> None:
        self._server = server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    def __enter__(self) -> Any:
        return self._server

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None


class ServerPool:
    """One running server per distinct config; see the module docstring."""

    def __init__(self, factory: ServerFactory, key: ConfigOf = config_of) -> None:
        self._factory = factory
        self._key = key
        self._servers: list[tuple[object, Any]] = []

    def get(self, overrides: Sequence[str] = (), profile: str = TINY_PROFILE) -> Any:
        """The running server of this config, started now if the pool has none yet."""
        wanted = self._key(profile, overrides)
        for config, server in self._servers:
            if config == wanted:
                return server
        server = self._factory(list(overrides), profile=profile)
        server.start()
        self._servers.append((wanted, server))
        return server

    def borrowing(self, overrides: Sequence[str] = (), **kwargs: Any) -> Borrowed:
        """Stands in for `LocalServer(overrides, profile=...)` in a command under test. Any
        other argument (a port, a log path, timeouts) would ask for a server of its own: refused,
        so a test never silently gets a server it did not describe."""
        profile = kwargs.pop("profile", TINY_PROFILE)
        if kwargs:
            raise TypeError(f"a pooled server takes overrides and a profile only, not {kwargs}")
        return Borrowed(self.get(overrides, profile=profile))

    @property
    def started(self) -> int:
        return len(self._servers)

    def close(self) -> None:
        """Stop every server, the last started first; the pool is empty after."""
        while self._servers:
            _, server = self._servers.pop()
            server.stop()
