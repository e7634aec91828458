"""Mutation testing of the core pure modules, one module at a time (`make mutate`).

mutmut (pinned in the `dev` extra) writes mutants into `mutants/` under its working directory and
derives module names from paths (only a `src/` prefix is stripped), so every module is run in a
staged copy of the repo under .cache/mutate/<name>: the three packages under `src/` (`image/trnspec`
becomes `src/trnspec`), the tests and the repo files they read beside them. The real tree is never
touched. Each module runs only the test files that cover it (TARGETS), so a score says how well
those tests pin that module down.

    python tests/mutation/mutate.py [WORD] [--max-children N]   # modules whose name contains WORD

Prints killed/survived/score per module and its wall time; exits 1 when a module scores below
THRESHOLD. A mutant counts as killed when a test failed or timed out on it; every other outcome
(survived, no test reached it, suspicious) counts against the score.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from infra.serving.bundle.requirements import DECLARATIONS

REPO = Path(__file__).resolve().parents[2]
STAGE_ROOT = REPO / ".cache" / "mutate"
THRESHOLD = 85.0
#: The A/B measurement that decides deployments (the core, calibration's summary and rows, the
#: decision) and the manifests it deploys through (wake, the bundle's pods) are held higher.
CORE_THRESHOLD = 90.0
MAX_CHILDREN = 2
#: Where each package sits in the stage (mutmut strips `src.` from module names).
PACKAGES = {
    "image/trnspec": "src/trnspec",
    "trnspec_tools": "src/trnspec_tools",
    "infra": "src/infra",
}
#: Repo files the tests read by path, copied next to them (`image/` for its data and profiles).
ALSO_COPY = ("tests", "conftest.py", "pyproject.toml", "image", "config", "docs", "README.md")
#: Repo files that packaged code reads through its own location (infra.serving.bundle's
#: REPO_DIR, three levels above infra/serving/bundle): in the stage that location is `src/`, so
#: they are copied there too.
READ_THROUGH_PACKAGE_PATH = tuple(dict.fromkeys(d.pyproject for d in DECLARATIONS))
#: mutmut's exit codes that mean a test caught the mutant (failed, pytest error, timeout).
KILLED_CODES = frozenset({1, 3, 24, -24, 36, 152, 255})
PYTEST_ARGS = ["-p", "no:cacheprovider", "-m", "not e2e and not slow", "-q"]
#: Appended to the staged conftest.py. mutmut runs each mutant against only the tests that
#: called its function in the stats run; a test whose helper answered from a cache an earlier
#: test filled (workload_cases.build is @cache) called nothing there, and no mutant was ever run
#: against it (wake scored 47 % with its ScaledObject and NetworkPolicy tests left out so).
#: Before each test, the caches of the functions defined in the tests' own modules are emptied.
FRESH_HELPER_CACHES = """

@pytest.fixture(autouse=True)
def _mutate_fresh_helper_caches() -> None:
    import os
    import sys

    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests") + os.sep
    for module in list(sys.modules.values()):
        if not (getattr(module, "__file__", None) or "").startswith(tests):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == module.__name__:
                clear()
"""


@dataclass(frozen=True)
class Target:
    """One module under mutation and the test files that cover it (repo-relative paths)."""

    name: str
    source: str
    tests: tuple[str, ...]
    #: the score below which `make mutate` fails
    minimum: float = THRESHOLD

    def staged_source(self) -> str:
        """The module's path in the stage, where mutmut sees it."""
        for repo_dir, stage_dir in PACKAGES.items():
            if self.source.startswith(repo_dir + "/"):
                return stage_dir + self.source[len(repo_dir) :]
        raise ValueError(f"{self.source} is in none of {sorted(PACKAGES)}")


TARGETS: tuple[Target, ...] = (
    Target(
        "step_time",
        "image/trnspec/perf/step_time.py",
        (
            "tests/trnspec/perf/test_step_time.py",
            "tests/trnspec/perf/test_step_time_properties.py",
        ),
    ),
    Target(
        "packing",
        "image/trnspec/hardware/packing.py",
        (
            "tests/trnspec/hardware/test_packing.py",
            "tests/trnspec/hardware/test_packing_properties.py",
        ),
    ),
    Target(
        "pricing",
        "image/trnspec/hardware/pricing.py",
        (
            "tests/trnspec/hardware/test_pricing.py",
            "tests/trnspec/hardware/test_regional_prices.py",
            "tests/trnspec/hardware/test_pricing_properties.py",
        ),
    ),
    Target(
        "sizing",
        "image/trnspec/hardware/sizing.py",
        (
            "tests/trnspec/hardware/test_sizing.py",
            "tests/trnspec/hardware/test_sizing_properties.py",
        ),
    ),
    Target(
        "k_schedule",
        "image/trnspec/config/k_schedule.py",
        (
            "tests/trnspec/config/test_k_schedule.py",
            "tests/trnspec/config/test_k_schedule_properties.py",
        ),
    ),
    Target(
        "deploy_plan",
        "image/trnspec/plan/deploy_plan.py",
        ("tests/trnspec/plan/test_deploy_plan.py", "tests/trnspec/plan/test_decision.py"),
    ),
    Target(
        "predict",
        "image/trnspec/plan/predict.py",
        ("tests/trnspec/plan/test_predict.py", "tests/trnspec/plan/test_predict_properties.py"),
    ),
    Target(
        "batch_verdicts",
        "image/trnspec/plan/batch_verdicts.py",
        ("tests/trnspec/plan/test_batch_verdicts.py",),
    ),
    Target(
        "request_fit",
        "image/trnspec/plan/request_fit.py",
        ("tests/trnspec/plan/test_request_fit.py",),
    ),
    Target(
        "render",
        "image/trnspec/engine/render.py",
        (
            "tests/trnspec/engine/test_render.py",
            "tests/trnspec/engine/test_render_properties.py",
        ),
    ),
    Target(
        "metrics",
        "trnspec_tools/client/metrics.py",
        (
            "tests/trnspec_tools/client/test_metrics.py",
            "tests/trnspec_tools/client/test_metrics_invariants.py",
            "tests/trnspec_tools/client/test_metrics_properties.py",
        ),
    ),
    Target(
        "bench_stats",
        "trnspec_tools/bench/stats.py",
        (
            "tests/trnspec_tools/bench/test_stats.py",
            "tests/trnspec_tools/bench/test_run_result.py",
            "tests/trnspec_tools/bench/test_stats_properties.py",
        ),
    ),
    Target(
        "bench_rounds",
        "trnspec_tools/bench/rounds.py",
        ("tests/trnspec_tools/bench/test_rounds.py", "tests/trnspec_tools/ab/test_one_answer.py"),
    ),
    Target(
        "ab_order",
        "trnspec_tools/ab/order.py",
        ("tests/trnspec_tools/ab/test_order.py",),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "ab_spread",
        "trnspec_tools/ab/spread.py",
        ("tests/trnspec_tools/ab/test_spread.py",),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "ab_median_round",
        "trnspec_tools/ab/median_round.py",
        ("tests/trnspec_tools/ab/test_median_round.py",),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "ab_comparison",
        "trnspec_tools/ab/comparison.py",
        ("tests/trnspec_tools/ab/test_comparison.py", "tests/trnspec_tools/ab/test_one_answer.py"),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "calibration_summary",
        "trnspec_tools/calibration/summary.py",
        (
            "tests/trnspec_tools/calibration/test_summary.py",
            "tests/trnspec_tools/ab/test_one_answer.py",
        ),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "calibration_rows",
        "trnspec_tools/calibration/rows.py",
        ("tests/trnspec_tools/calibration/test_rows.py",),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "decision",
        "image/trnspec/plan/decision.py",
        ("tests/trnspec/plan/test_decision.py",),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "wake",
        "infra/serving/manifests/wake.py",
        (
            "tests/infra/serving/manifests/test_wake.py",
            # The rendered route and nginx responder, driven over HTTP (the 503 body, the hold).
            "tests/infra/serving/manifests/test_wake_e2e.py",
        ),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "bundle_pods",
        "infra/serving/manifests/bundle.py",
        ("tests/infra/serving/manifests/test_bundle_pods.py",),
        minimum=CORE_THRESHOLD,
    ),
    Target(
        "sse",
        "trnspec_tools/boundary/sse.py",
        (
            "tests/trnspec_tools/boundary/test_boundary_sse.py",
            "tests/trnspec_tools/boundary/test_boundary_sse_properties.py",
        ),
    ),
    Target(
        "cache_key",
        "image/trnspec/staging/cache_key.py",
        (
            "tests/trnspec/staging/test_cache_key.py",
            "tests/trnspec/staging/test_cache_key_properties.py",
        ),
    ),
    Target(
        "manifest",
        "image/trnspec/staging/manifest.py",
        (
            "tests/trnspec/staging/test_manifest.py",
            "tests/trnspec/staging/test_staging.py",
            "tests/trnspec/staging/test_manifest_properties.py",
        ),
    ),
    Target(
        "api_key",
        "image/trnspec/serve/api_key.py",
        (
            "tests/trnspec/serve/test_api_key.py",
            "tests/trnspec/serve/test_api_key_properties.py",
        ),
    ),
    Target(
        "autoscaling",
        "infra/serving/manifests/autoscaling.py",
        (
            "tests/infra/serving/manifests/test_workload_exposure.py",
            "tests/infra/serving/manifests/test_autoscaling_properties.py",
            "tests/infra/serving/manifests/test_autoscaling_schema.py",
        ),
    ),
)


@dataclass(frozen=True)
class Score:
    """The outcome of one module's mutants."""

    name: str
    killed: int
    total: int
    seconds: float

    @property
    def survived(self) -> int:
        return self.total - self.killed

    @property
    def percent(self) -> float:
        """Killed mutants in percent; a module without mutants has nothing left alive (100)."""
        return 100.0 * self.killed / self.total if self.total else 100.0

    def line(self) -> str:
        return (
            f"{self.name:<12} killed {self.killed:>4}  survived {self.survived:>4}"
            f"  score {self.percent:5.1f}%  {self.seconds:6.0f} s"
        )


def selected(word: str | None, targets: Iterable[Target] = TARGETS) -> list[Target]:
    """The targets whose name contains `word` (all of them when it is empty or None)."""
    return [t for t in targets if not word or word in t.name]


def score_of(name: str, exit_codes: Mapping[str, int | None], seconds: float) -> Score:
    """Count mutmut's per-mutant exit codes: killed ones against all."""
    killed = sum(1 for code in exit_codes.values() if code in KILLED_CODES)
    return Score(name, killed, len(exit_codes), seconds)


def mutmut_config(target: Target) -> str:
    """The [tool.mutmut] table for this target's stage (TOML)."""

    def toml_list(items: Iterable[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["src"]',
            f"only_mutate = {toml_list([target.staged_source()])}",
            f"also_copy = {toml_list(ALSO_COPY)}",
            f"pytest_add_cli_args = {toml_list(PYTEST_ARGS)}",
            f"pytest_add_cli_args_test_selection = {toml_list(target.tests)}",
            "use_git_change_detection = false",
            # Each mutant forks from a process that has only collected the tests: forked from
            # mutmut's own (which ran them), it would inherit caches filled by unmutated code.
            'process_isolation = "forkserver"',
            "",
        ]
    )


def _without_packages(ignore: Callable[[str, list[str]], set[str]]) -> Callable[..., set[str]]:
    """`ignore`, and the packages themselves where a copied directory holds them (`image/trnspec`):
    pytest's `pythonpath = ["image", "."]` puts that copy ahead of the mutated one under `src/`,
    and the tests would import unmutated code."""
    packages = {REPO / repo_dir for repo_dir in PACKAGES}

    def both(directory: str, names: list[str]) -> set[str]:
        inside = {n for n in names if Path(directory) / n in packages}
        return set(ignore(directory, names)) | inside

    return both


def stage(target: Target, root: Path | None = None) -> Path:
    """A fresh copy of what this target's run needs, under .cache/mutate/<name> (or `root`)."""
    root = root if root is not None else STAGE_ROOT / target.name
    shutil.rmtree(root, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "__snapshots__.bak")
    for repo_dir, stage_dir in PACKAGES.items():
        shutil.copytree(REPO / repo_dir, root / stage_dir, ignore=ignore)
    for name in ALSO_COPY:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, root / name, ignore=_without_packages(ignore))
        elif path.exists():
            shutil.copy2(path, root / name)
    for name in READ_THROUGH_PACKAGE_PATH:
        (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / "src" / name)
    with (root / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(mutmut_config(target))
    with (root / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(FRESH_HELPER_CACHES)
    return root


def run(target: Target, max_children: int = MAX_CHILDREN) -> Score:
    root = stage(target)
    mutants = root / "mutants"
    (mutants / "src").mkdir(parents=True)  # on PYTHONPATH (for subprocesses) before mutmut fills it
    env = {**os.environ, "PYTHONPATH": f"{mutants / 'src'}{os.pathsep}{mutants}"}
    started = time.monotonic()
    with (root / "mutmut.log").open("w", encoding="utf-8") as log:
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("mutmut")),
                "run",
                f"--max-children={max_children}",
            ],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"mutmut failed on {target.name} (exit {done.returncode}): see {root}/mutmut.log")
    meta = json.loads((mutants / (target.staged_source() + ".meta")).read_text(encoding="utf-8"))
    return score_of(target.name, meta["exit_code_by_key"], seconds)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Mutation scores of the core modules.")
    parser.add_argument("word", nargs="?", default=None, help="modules whose name contains it")
    parser.add_argument(
        "--max-children",
        type=int,
        default=MAX_CHILDREN,
        help=f"mutants tested at once (default {MAX_CHILDREN}; 1 on a shared machine)",
    )
    args = parser.parse_args(argv)
    if args.max_children < 1:
        parser.error(f"--max-children must be at least 1, got {args.max_children}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    targets = selected(args.word)
    if not targets:
        print(f"no module matches {args.word!r}: {', '.join(t.name for t in TARGETS)}")
        return 2
    scores = []
    for target in targets:
        print(f"== {target.name}: {target.source}", flush=True)
        scores.append(run(target, args.max_children))
        print(scores[-1].line(), flush=True)
    print("\n".join(["", "mutation scores:", *(s.line() for s in scores)]))
    low = below_minimum(targets, scores)
    if low:
        print(f"below their minimum: {', '.join(low)}")
    return 1 if low else 0


def below_minimum(targets: list[Target], scores: list[Score]) -> list[str]:
    """Each module scoring under its target's minimum, with both figures."""
    minimum = {t.name: t.minimum for t in targets}
    return [
        f"{s.name} {s.percent:.1f}% < {minimum[s.name]:.0f}%"
        for s in scores
        if s.percent < minimum[s.name]
    ]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
