"""The runner: stage the models, check them again, sync the compile cache, then run vLLM
under a supervisor; in compile-only mode (the precompile Job), publish the compile and stop."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from trnspec.config.pod_contract import (
    COMPILED_ROOT,
    DEFAULT_DRAIN_SECONDS,
    ENV_COMPILE_CACHE,
    MODELS_ROOT,
    READY_FILE,
    STAGE_RETRY_DELAYS,
    WEIGHTS_WAIT_DELAYS,
)
from trnspec.config.serving import ConfigError, Problem, ServingConfig, apply_overrides
from trnspec.engine.render import RenderedCommand
from trnspec.serve.api_key import auth_headers, child_env, files_holding_key
from trnspec.serve.probes import ReadyFile, http_busy, http_probe, probe_url
from trnspec.serve.steps import CacheStep, ServeSteps
from trnspec.serve.supervisor import Supervisor
from trnspec.staging.transfer import (
    NotPublishedError,
    S3Location,
    StagingError,
    TransferSettings,
    download,
    fetch_manifest,
    parse_s3_uri,
    pull_compiled,
    push_compiled,
    rich_progress,
    s3_client,
)

log = logging.getLogger("trnspec.serve")
T = TypeVar("T")

EXIT_STAGING_FAILED = 1
# The default waits (ServeOptions.weights_wait_delays, stage_retry_delays) are the pod
# contract's, which sizes the serving pod's startup probe from the same numbers.

#: Runs the rendered command; the callback (if any) is called once, when the model first answers.
SuperviseFn = Callable[[RenderedCommand, Callable[[], None] | None], int]


@dataclass(frozen=True)
class ServeOptions:
    models_root: str = MODELS_ROOT
    compiled_root: str = COMPILED_ROOT
    compile_cache: str | None = None
    ready_file: str = READY_FILE
    poll_interval: float = 5.0
    progress: bool = True
    compile_only: bool = False
    drain_timeout: float = DEFAULT_DRAIN_SECONDS
    transfer: TransferSettings = field(default_factory=TransferSettings)
    #: Waits before retrying staging that failed for a cause time can fix (credentials not
    #: ready yet, endpoint unreachable): bounded, about 5 minutes in all, then exit 1.
    stage_retry_delays: tuple[float, ...] = STAGE_RETRY_DELAYS
    #: Waits for weights not published yet (the weights Job copies them from the Hugging Face
    #: Hub while the first pods start): 30 s doubling to 5 min, about 2 hours in all, then
    #: exit 1 (a replica is restarted by its Deployment, the precompile Job by its backoffLimit).
    weights_wait_delays: tuple[float, ...] = field(default_factory=lambda: WEIGHTS_WAIT_DELAYS)


@dataclass(frozen=True)
class SuperviseVllm:
    """A pod's SuperviseFn: the rendered command under a Supervisor that probes the served model
    (with the API key's header) and drains on SIGTERM. The key reaches vLLM's environment only
    (trnspec.serve.api_key), never argv, logs or this object's repr."""

    cfg: ServingConfig
    options: ServeOptions
    api_key: str | None = field(default=None, repr=False)

    def __call__(self, command: RenderedCommand, on_first_ready: Callable[[], None] | None) -> int:
        url = probe_url(self.cfg)
        supervisor = Supervisor(
            command.argv,
            child_env({**os.environ, **command.env}, self.api_key),
            http_probe(url, self.cfg.target.name, headers=auth_headers(self.api_key)),
            ReadyFile(Path(self.options.ready_file)),
            poll_interval=self.options.poll_interval,
            on_first_ready=on_first_ready,
            busy=http_busy(url),
            drain_timeout=self.options.drain_timeout,
        )
        log.info("starting: %s", " ".join(command.argv))
        return supervisor.run()


@dataclass(frozen=True, repr=False)
class CachePublisher:
    """Publishes a fresh compile under its key; called once the model answers.

    Returns True when the key is published (by us or by another pod meanwhile). `replace`: the
    published entry was found broken and is overwritten. `api_key`: files holding it (vLLM 0.24's
    `cache_key_factors.json`, see trnspec.serve.api_key.files_holding_key) are deleted from the
    local compile directory first, so the key never reaches the bucket.
    """

    s3: Any
    cache: CacheStep
    root: S3Location
    options: ServeOptions
    replace: bool
    api_key: str | None = None

    def __repr__(self) -> str:  # never the key, nor the client
        return f"CachePublisher(key={self.cache.key!r}, root={self.root}, replace={self.replace})"

    def _drop_key_copies(self) -> None:
        if self.api_key is None:
            return
        local = Path(self.cache.local_dir)
        for rel in files_holding_key(local, self.api_key):
            (local / rel).unlink()
            log.warning(
                "left out of the compile cache: %s holds the API key (written by vLLM); "
                "see docs/workload.md, 'Who may call the model'",
                rel,
            )

    def __call__(self) -> bool:
        key = self.cache.key
        try:
            self._drop_key_copies()
        except OSError as err:
            log.warning("compile cache not published: cannot scan it for the API key: %s", err)
            return False
        try:
            result = push_compiled(
                self.s3,
                Path(self.cache.local_dir),
                self.root,
                key,
                self.options.transfer,
                None,
                replace=self.replace,
            )
        except StagingError as err:
            log.warning("could not publish the compile cache (serving continues): %s", err)
            return False
        if result is None:
            log.info("compile cache %s was published by another pod meanwhile", key)
        else:
            log.info("published compile cache: %s", result.summary())
        return True

    def in_background(self) -> None:
        """The serving pod's first-ready action: a failure is logged; the pod keeps serving."""
        self()


class PublishThenStop:
    """The compile-only first-ready action: publish the compile, then stop vLLM.

    `published` stays None when vLLM never answered (the action never ran).
    """

    def __init__(self, publish: Callable[[], bool], stop: Callable[[], None]) -> None:
        self.publish = publish
        self.stop = stop
        self.published: bool | None = None

    def __call__(self) -> None:
        self.published = self.publish()
        self.stop()


def execute(
    cfg: ServingConfig,
    steps: ServeSteps,
    options: ServeOptions,
    supervise: SuperviseFn,
    s3: Any | None = None,
    stop: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    api_key: str | None = None,
) -> int:
    """Stage, re-check on the staged files, pull the compile cache, then run the server.

    With options.compile_only: exit 0 at once when the cache already holds this key; otherwise
    start vLLM, publish its compile when it first answers, then stop it (`stop`, by default a
    SIGTERM to this process, which the supervisor forwards) and exit 0 only if it was published.
    """
    cache_root = _cache_root(steps)
    if options.compile_only:
        _require_compile_cache(cfg, steps, cache_root)
    if (steps.stage or cache_root is not None) and s3 is None:
        try:
            s3 = _s3_client()
        except StagingError as err:
            print(f"staging failed: {err}", file=sys.stderr)
            return EXIT_STAGING_FAILED
    if options.compile_only and steps.cache is not None and cache_root is not None:
        done = _already_compiled(s3, steps.cache, cache_root, options, sleep)
        if done is not None:
            return done
    try:
        _retrying(options, sleep, "staging", partial(_stage_models, s3, steps, options))
    except StagingError as err:
        print(f"staging failed: {err}", file=sys.stderr)
        return EXIT_STAGING_FAILED
    _check_staged(cfg, steps)
    publisher: CachePublisher | None = None
    if steps.cache is not None:
        if not _make_compiled_dir(steps.cache.local_dir):
            return EXIT_STAGING_FAILED
        if cache_root is not None:
            publisher = _cache_sync(s3, steps.cache, cache_root, options, api_key)
    if options.compile_only:
        return _compile_and_publish(steps, publisher, supervise, stop or _stop_self)
    return supervise(steps.command, None if publisher is None else publisher.in_background)


def _cache_root(steps: ServeSteps) -> S3Location | None:
    if steps.cache is None or not steps.cache.cache_root:
        return None
    return parse_s3_uri(steps.cache.cache_root, require_key=False)


def _require_compile_cache(cfg: ServingConfig, steps: ServeSteps, root: S3Location | None) -> None:
    if steps.cache is not None and root is not None:
        return
    raise ConfigError(
        [
            Problem(
                "--compile-only",
                True,
                f"needs a Neuron image and a compile cache (--compile-cache or "
                f"{ENV_COMPILE_CACHE}); image={cfg.image.value} has "
                f"{'one' if steps.cache else 'no compile step'}",
            )
        ]
    )


def _s3_client() -> Any:
    return s3_client()


def _retrying(
    options: ServeOptions, sleep: Callable[[float], None], what: str, work: Callable[[], T]
) -> T:
    """Run work; while it fails for a cause time can fix (credentials not ready yet, endpoint
    unreachable), wait and retry within options.stage_retry_delays; while the weights are not
    published yet, within options.weights_wait_delays. Raises the last error."""
    delays = list(options.stage_retry_delays)
    waits = list(options.weights_wait_delays)
    while True:
        try:
            return work()
        except NotPublishedError as err:
            if not waits:
                raise
            delay = waits.pop(0)
            log.warning(
                "%s: weights not published yet at %s (the weights Job copies them; "
                "docs/platform.md, 'First deploy'); waiting %.0fs, %d more waits",
                what,
                err.source,
                delay,
                len(waits),
            )
            sleep(delay)
        except StagingError as err:
            if not err.retryable or not delays:
                raise
            delay = delays.pop(0)
            log.warning("%s failed, retrying in %.0fs (%d left): %s", what, delay, len(delays), err)
            sleep(delay)


def _already_compiled(
    s3: Any,
    cache: CacheStep,
    root: S3Location,
    options: ServeOptions,
    sleep: Callable[[float], None],
) -> int | None:
    """compile-only: the exit code when there is nothing to do (0: the key is published; 1: the
    cache cannot be read), None when the compile must run."""
    read = partial(fetch_manifest, s3, root.child(cache.key))
    try:
        cached = _retrying(options, sleep, "reading the compile cache", read)
    except StagingError as err:
        print(f"compile cache unreadable: {err}", file=sys.stderr)
        return EXIT_STAGING_FAILED
    if cached is None:
        return None
    print(f"already compiled: {cache.remote}")
    return 0


def _stage_models(s3: Any, steps: ServeSteps, options: ServeOptions) -> None:
    """Download every model of the steps (verified files are kept across retries)."""
    for step in steps.stage:
        with rich_progress(options.progress) as bar:
            result = download(
                s3,
                parse_s3_uri(step.source),
                Path(step.local_dir),
                options.transfer,
                bar,
                prune=True,  # the staging directory is this copy's own
            )
        log.info("staged %s", result.summary())


def _check_staged(cfg: ServingConfig, steps: ServeSteps) -> None:
    """The staged config.json files are readable now: check sizes and vocabularies for real."""
    from trnspec.checks.all_checks import check

    if not steps.staged_overrides:
        return
    problems = check(apply_overrides(cfg, list(steps.staged_overrides)))
    if problems:
        raise ConfigError(problems)


def _make_compiled_dir(local_dir: str) -> bool:
    try:
        Path(local_dir).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(
            f"cannot create the compiled-artifact directory {local_dir}: "
            f"{err.strerror or err}; give --compiled-root a writable path",
            file=sys.stderr,
        )
        return False
    return True


def _cache_sync(
    s3: Any, cache: CacheStep, root: S3Location, options: ServeOptions, api_key: str | None
) -> CachePublisher | None:
    """Pull the compile; on a miss return the publisher to run once the model answers."""
    broken = False
    try:
        with rich_progress(options.progress) as bar:
            hit = pull_compiled(
                s3, root, cache.key, Path(cache.local_dir), options.transfer, bar, prune=True
            )
    except StagingError as err:
        # A broken cache costs a compile, not the pod: compile from scratch and republish.
        log.warning("compile cache unusable, compiling from scratch: %s", err)
        # Replace the published entry only when it is broken, not when S3 was unreachable.
        hit, broken = None, not err.retryable
        shutil.rmtree(cache.local_dir, ignore_errors=True)
        Path(cache.local_dir).mkdir(parents=True, exist_ok=True)
    if hit is not None:
        log.info("compile cache hit: %s", hit.summary())
        return None
    log.info("compile cache miss for %s: vLLM compiles; published once it answers", cache.key)
    return CachePublisher(s3, cache, root, options, replace=broken, api_key=api_key)


def _compile_and_publish(
    steps: ServeSteps,
    publisher: CachePublisher | None,
    supervise: SuperviseFn,
    stop: Callable[[], None],
) -> int:
    if publisher is None:  # another pod published while we staged: nothing left to compile
        return 0
    action = PublishThenStop(publisher, stop)
    returncode = supervise(steps.command, action)
    if action.published is None:
        print("compile-only: vLLM exited before it answered; nothing published", file=sys.stderr)
        return returncode or EXIT_STAGING_FAILED
    return 0 if action.published else EXIT_STAGING_FAILED


def _stop_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
