"""The end-to-end files' shared local servers (server_pool.py): one server per config, lent to
commands that would start their own, stopped when the session ends."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from server_pool import ServerPool


class FakeServer:
    def __init__(self, overrides: list[str], profile: str) -> None:
        self.overrides, self.profile = overrides, profile
        self.running = False
        self.starts = 0

    def start(self) -> None:
        self.running, self.starts = True, self.starts + 1

    def stop(self) -> None:
        self.running = False


def key(profile: str, overrides: Sequence[str]) -> tuple[str, frozenset[str]]:
    """A stand-in for the served config: the profile and the set of overrides."""
    return profile, frozenset(overrides)


@pytest.fixture
def pool() -> ServerPool:
    return ServerPool(FakeServer, key=key)


def test_the_same_config_is_the_same_running_server(pool: ServerPool) -> None:
    first = pool.get(["a=1", "b=2"])
    assert pool.get(["b=2", "a=1"]) is first and first.starts == 1 and first.running
    assert pool.started == 1


def test_a_different_config_or_profile_starts_a_server_of_its_own(pool: ServerPool) -> None:
    plain = pool.get(["speculation.method=none"])
    other = pool.get(["speculation.num_speculative_tokens=2"])
    elsewhere = pool.get(["speculation.method=none"], profile="another")
    assert len({id(plain), id(other), id(elsewhere)}) == 3 and pool.started == 3
    assert elsewhere.profile == "another" and other.overrides == [
        "speculation.num_speculative_tokens=2"
    ]


def test_a_command_borrowing_a_server_leaves_it_running_for_the_next(pool: ServerPool) -> None:
    lent = pool.borrowing(overrides=["a=1"])
    with lent as server:
        assert server is pool.get(["a=1"])
    lent.stop()
    with pool.borrowing(["a=1"], profile="local-tiny") as again:
        assert again is server
    assert server.running and server.starts == 1


def test_a_borrower_asking_for_a_port_or_a_log_of_its_own_is_refused(pool: ServerPool) -> None:
    with pytest.raises(TypeError, match="port"):
        pool.borrowing(["a=1"], port=8123)
    assert pool.started == 0


def test_closing_stops_every_server_and_empties_the_pool(pool: ServerPool) -> None:
    servers = [pool.get([f"k={k}"]) for k in (1, 2)]
    pool.close()
    assert not any(s.running for s in servers) and pool.started == 0
    assert pool.get(["k=1"]) is not servers[0]  # a new one after close
