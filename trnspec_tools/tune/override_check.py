"""Whether an override line tune recommends is accepted by the config layer for a profile.

The line is only useful if `python -m trnspec render --set` accepts it and the profile's checks
(e.g. the image's k limit) pass; `tune` and `tune --schedule` print the verdict next to the line.
"""

from __future__ import annotations

from collections.abc import Sequence


def check_override(line: str | Sequence[str], profile: str) -> str | None:
    """Problems the config layer finds with the override on the profile, or None if it is clean.

    The line is only useful if `trnspec render --set` accepts it and the profile's checks (e.g. the
    image's k limit) pass; if the config package is not importable here, the check is skipped.
    """
    try:
        from trnspec.checks.all_checks import check
        from trnspec.config.serving import apply_overrides, load_profile
    except ImportError:
        return None
    try:
        items = [line] if isinstance(line, str) else list(line)
        problems = check(apply_overrides(load_profile(profile), items))
    except ValueError as exc:
        return str(exc)
    return "; ".join(f"{p.field}={p.value}: {p.fix}" for p in problems) or None
