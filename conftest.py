"""Fixtures every test tree shares (at the repo root: a conftest in tests/ would put tests/ on
sys.path, where tests/infra, tests/trnspec_tools, tests/trnspec would shadow the real packages)."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from typing import Any

import pytest

#: Credentials moto accepts and AWS rejects: a test that escaped moto could not reach an account.
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-2",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture
def fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region, no profile or instance metadata: boto3 talks only to moto."""
    for var, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


#: Fixtures that build or run something heavy: the tiny models (cached, but a fresh clone builds
#: them for minutes) and the checkov scans of every template and every embedded manifest (an
#: external scanner, tens of seconds). Every test that depends on one is `slow`, so
#: `make test-fast` leaves it out without a list of test names to keep in step.
SLOW_FIXTURES = frozenset({"tiny_models", "checkov_report", "scanned"})


#: The fixtures that lend the session's local vLLM servers (tests/trnspec_tools/server_pool.py).
SERVER_FIXTURES = frozenset({"local_servers", "speculative_server", "plain_server"})
#: What every test file that uses them is named: the slow lane runs those files on one worker, so
#: that worker's pool starts each server config once (`e2e_scope`).
E2E_SUFFIX = "_e2e.py"
E2E_SCOPE = "end-to-end files (one worker: the shared local servers)"


def e2e_scope(nodeid: str) -> str:
    """The slow lane's work unit of a test: its file, except that every `*_e2e.py` file is one
    unit, run on one worker (the servers they share start once there, not on every worker)."""
    path = nodeid.split("::", 1)[0]
    return E2E_SCOPE if path.endswith(E2E_SUFFIX) else path


def server_users_outside_e2e_files(tests: Iterable[tuple[str, Collection[str]]]) -> list[str]:
    """The node ids, of (node id, fixture names) pairs, that use the shared local servers from a
    file not named *_e2e.py: on another worker they would start servers of their own."""
    return [
        nodeid
        for nodeid, fixtures in tests
        if SERVER_FIXTURES.intersection(fixtures) and e2e_scope(nodeid) != E2E_SCOPE
    ]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fixtures = {item.nodeid: getattr(item, "fixturenames", ()) for item in items}
    for item in items:
        if SLOW_FIXTURES.intersection(fixtures[item.nodeid]):
            item.add_marker(pytest.mark.slow)
    misplaced = server_users_outside_e2e_files(fixtures.items())
    if misplaced:
        raise pytest.UsageError(
            f"{misplaced[0]} uses the shared local servers but its file is not named *{E2E_SUFFIX}:"
            " rename it (only those files run on the worker that holds the servers)"
        )
    items.sort(key=lambda item: slow_lane_rank(item.nodeid, fixtures[item.nodeid]))


def slow_lane_rank(nodeid: str, fixtures: Collection[str]) -> int:
    """The order the slow lane hands out its units (its collection order, kept by the scheduler):
    the end-to-end unit first, its longest (the tiny models' build, then servers and rounds); then
    the files that need nothing built; last the other users of the tiny models, so that no worker
    waits on the build's file lock while the other builds (on a fresh clone the file that tests
    the build, handed out first by size, held the second worker for the whole 198 s build)."""
    if e2e_scope(nodeid) == E2E_SCOPE:
        return 0
    return 2 if "tiny_models" in fixtures else 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` (the slow lane) with the end-to-end files as one unit (`e2e_scope`)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class EndToEndTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return e2e_scope(nodeid)

    # in the collection's order (slow_lane_rank), not xdist's default of the most tests first
    config.option.loadscopereorder = False
    return EndToEndTogether(config, log)


def omp_bind_for_worker(worker: str | None, cpus: list[int]) -> str | None:
    """The core a pytest-xdist worker's local vLLM servers bind their compute threads to (vLLM's
    VLLM_CPU_OMP_THREADS_BIND): worker gwN takes the Nth allowed CPU, round robin, so two
    workers' servers compute on different cores. None outside xdist: vLLM's own "auto" binding,
    which puts every server on the same core."""
    if not worker or not worker.startswith("gw") or not worker[2:].isdigit() or not cpus:
        return None
    return str(sorted(cpus)[int(worker[2:]) % len(cpus)])


@pytest.fixture
def s3_bkt(fake_aws_env: None) -> Iterator[Any]:
    """A moto S3 client with one empty bucket, `bkt`, in us-east-2."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("s3", region_name="us-east-2")
        client.create_bucket(
            Bucket="bkt", CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
        )
        yield client


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis without deadlines or speed health checks for every property test: a test must
    not depend on how fast the machine is (a loaded 2-core CI host runs examples slowly). On a
    pytest-xdist worker, the core its local vLLM servers compute on (unless the caller chose)."""
    bind = omp_bind_for_worker(os.environ.get("PYTEST_XDIST_WORKER"), list(os.sched_getaffinity(0)))
    if bind is not None:
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", bind)

    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "trnspec",
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
    )
    settings.load_profile("trnspec")
