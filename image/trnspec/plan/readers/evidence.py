"""The evidence plan-deploy reads from outside, each value typed as trnspec.plan takes it: a tune
report's `fit.alpha`, the acceptance served over a window (Prometheus), measured rows (a path or
S3) and a deployment config's pools (a file); every failure is one BoundaryError naming the flag."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.files import read_json
from trnspec.boundary.numbers import finite_in
from trnspec.boundary.user_input import InputReadError, load_yaml, read_text_file
from trnspec.config.serving import ServingConfig
from trnspec.plan.measured import MeasuredEvidence, measured_evidence
from trnspec.plan.plan_request import NO_ACCEPTANCE, Acceptance, given_acceptance
from trnspec.plan.pools import DeploymentConfig, deployment_config
from trnspec.plan.readers.fetch import get_json, http_url, read_rows_text
from trnspec.plan.served_acceptance import ServedAcceptance, served_acceptance


def tune_report_alpha(path: str) -> float:
    """The per-token acceptance `fit.alpha` of a `tune` report (JSON, read by the bounded
    reader): a number in [0, 1], never a boolean."""
    doc = read_json(path, "--tune-report")
    fit = doc.get("fit") if isinstance(doc, dict) else None
    alpha = fit.get("alpha") if isinstance(fit, dict) else None
    if alpha is None:
        raise BoundaryError("--tune-report", path, "not a tune report with fit.alpha")
    return finite_in(alpha, f"--tune-report {path}: fit.alpha", 0.0, 1.0)


def tune_report_acceptance(path: str) -> Acceptance:
    """The acceptance of a tune report, replayed by its path."""
    return Acceptance(tune_report_alpha(path), f"fit.alpha of {path}", (("tune_report", path),))


def read_served(url: str, span: str) -> ServedAcceptance:
    """The acceptance served over `span`, from the Prometheus HTTP API at `url`."""
    base = http_url("--acceptance-from", url)
    return served_acceptance(
        base, span, lambda q: get_json("--acceptance-from", f"{base}/api/v1/query", {"query": q})
    )


def served_acceptance_of(url: str, span: str) -> Acceptance:
    """The served acceptance, replayed as its length (four decimals) at its window k."""
    served = read_served(url, span)
    replay = (("acceptance_length", f"{served.acceptance_length:.4f}"), ("acceptance_k", served.k))
    return Acceptance(served.rate, served.describe(), replay)


def read_measured(location: str) -> MeasuredEvidence:
    """Measured rows at a path or an S3 URI (--measured), refitted."""
    return measured_evidence("--measured", location, read_rows_text("--measured", location))


def read_acceptance(
    cfgs: Sequence[ServingConfig],
    tune_report: str | None,
    served_from: str | None,
    window: str,
    given: tuple[float | None, float | None, int | None],
) -> Acceptance:
    """The acceptance asked for, read where it lives: a tune report, the served counters over
    `window`, else `given` (--acceptance-rate, --acceptance-length, --acceptance-k, the k
    defaulting to the first speculative candidate's); none is needed when no candidate
    speculates and none is given."""
    speculative = [c for c in cfgs if c.speculation.method != "none"]
    rate, length, k = given
    if not speculative and all(g is None for g in (tune_report, served_from, rate, length)):
        return NO_ACCEPTANCE
    if tune_report:
        return tune_report_acceptance(tune_report)
    if served_from:
        return served_acceptance_of(served_from, window)
    default_k = (speculative or cfgs)[0].speculation.num_speculative_tokens
    return given_acceptance(rate, length, k, default_k)


def read_deployment_config(path: str, sets: Sequence[str] = ()) -> DeploymentConfig:
    """The deployment config at `path` (--config) after `sets` (--set); BoundaryError naming
    --config, --set or the field."""
    try:
        doc = load_yaml(read_text_file(Path(path)))
    except (OSError, InputReadError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise BoundaryError("--config", path, f"cannot read it ({why})") from None
    return deployment_config(path, doc, sets)
