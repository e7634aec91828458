"""One problem model for every layer that checks user input.

The engine config (trnspec.config.serving), the deployment settings (infra.settings), the serving
section (infra.settings.serving) and the workload derivation (infra.serving.manifests.spec) all
report bad input as `Problem`s (field, value as typed, fix) carried by one `InputError`, and turn
pydantic's errors into problems with one formatter. Output is bounded: a value is shown truncated,
and at most `MAX_LISTED` problems are listed, followed by a count of the rest, so a hostile file
(700k unknown keys, a nested-alias YAML) gives a short message, not megabytes.

Import-free apart from pydantic, so infra can import it at synth time without pulling in the
engine's staging or HTTP code.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel, ValidationError

#: Problems listed in one message; the rest are counted ("... and 12 more problems").
MAX_LISTED = 20
#: Characters of a value shown in a message (a longer value keeps its start and its end around
#: "...": a path keeps its file name, a URL its host).
MAX_VALUE_CHARS = 80
#: Of those, the characters kept from the end of a longer value.
TAIL_CHARS = 28

_repr = reprlib.Repr()
_repr.maxstring = MAX_VALUE_CHARS
_repr.maxother = MAX_VALUE_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 4
_repr.maxlevel = 3


def show(value: object) -> str:
    """A value as the user wrote it, bounded in length and depth (a shared-alias YAML structure
    never expands). Text is shown bare unless that would hide something: empty text, edge
    spaces or control characters are shown quoted, with escapes."""
    if isinstance(value, Enum):
        value = value.value
    written = getattr(value, "text", None)  # a YAML number shows as written (user_input)
    if isinstance(value, int | float) and isinstance(written, str):
        return written[:MAX_VALUE_CHARS]
    if isinstance(value, str) and value and value.isprintable() and value == value.strip():
        text = value
    else:
        text = _repr.repr(value)
    if len(text) <= MAX_VALUE_CHARS:
        return text
    return text[: MAX_VALUE_CHARS - 3 - TAIL_CHARS] + "..." + text[-TAIL_CHARS:]


class _Absent:
    """The value of a problem that has none to show: a flag that was not given, or a rule
    between flags (`--endpoint/--local: give exactly one`)."""

    def __repr__(self) -> str:
        return "ABSENT"


#: A Problem's value when there is none: the line is `field: fix`.
ABSENT = _Absent()


@dataclass(frozen=True)
class Problem:
    """One bad field: where, what value (ABSENT, or None: a flag not given or a field left
    empty, none to show), and a concrete fix the user can apply."""

    field: str
    value: object
    fix: str

    def __str__(self) -> str:
        if self.value is ABSENT or self.value is None:  # not given: nothing to show
            return f"{self.field}: {self.fix}"
        return f"{self.field}={show(self.value)}: {self.fix}"


def render(problems: Sequence[Problem], limit: int = MAX_LISTED) -> list[str]:
    """One line per problem, at most `limit` of them, then a count of the rest."""
    lines = [str(p) for p in problems[:limit]]
    rest = len(problems) - limit
    if rest > 0:
        lines.append(f"... and {rest} more problem{'s' if rest > 1 else ''} (fix these first)")
    return lines


class InputError(ValueError):
    """Bad user input; carries every problem so the user fixes them all in one go.

    `heading` (optional) is a first line naming the input; the problems follow, one a line
    (indented under a heading), capped at MAX_LISTED.
    """

    heading: str = ""

    def __init__(self, problems: Iterable[Problem], heading: str | None = None) -> None:
        self.problems: list[Problem] = list(problems)
        if heading is not None:
            self.heading = heading
        lines = render(self.problems)
        if self.heading:
            lines = [self.heading, *(f"  {line}" for line in lines)]
        super().__init__("\n".join(lines))


def _model_args(tp: Any) -> list[Any]:
    args = getattr(tp, "__args__", None)
    if not args:
        return [tp]
    out: list[Any] = []
    for a in args:
        out.extend(_model_args(a))
    return out


def allowed_fields(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """Field names of the (nested) model that owns the last part of `loc`, for 'unknown field'
    messages; empty when the owner is not a model (a dict, say)."""
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = model.model_fields.get(str(part))
        if info is None:
            return []
        args = _model_args(info.annotation)
        nested = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if not nested:
            return []
        model = nested[0]
    return sorted(model.model_fields)


def problems_from_validation(
    err: ValidationError,
    model: type[BaseModel],
    *,
    prefix: str = "",
    root: str = "(root)",
    fixes: Callable[[dict[str, Any]], str | None] | None = None,
) -> list[Problem]:
    """pydantic's errors as Problems: dotted field (with `prefix`), the input, and a fix.

    A list that is too short because its items failed is not reported twice; `fixes` may give a
    better fix for an error (return None to keep the default).
    """
    problems: list[Problem] = []
    errors = err.errors()
    failed = [tuple(e["loc"]) for e in errors]
    for e in errors:
        loc = tuple(e["loc"])
        kind = e["type"]
        if kind == "too_short" and any(f[: len(loc)] == loc and f != loc for f in failed):
            continue
        field = prefix + (".".join(str(p) for p in loc) or root)
        custom = fixes(e) if fixes is not None else None
        if custom is not None:
            fix = custom
        elif kind == "missing":
            fix = "required; add it"
        elif kind == "extra_forbidden":
            allowed = allowed_fields(model, loc)
            fix = f"unknown field; allowed: {', '.join(allowed)}" if allowed else "unknown field"
        else:
            msg = str(e["msg"]).removeprefix("Value error, ")
            fix = msg[:1].lower() + msg[1:]
        problems.append(Problem(field, None if kind == "missing" else e.get("input"), fix))
    return problems
