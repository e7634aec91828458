"""The one error for bad outside input: one line naming the field, the value and the fix."""

from __future__ import annotations

from trnspec.problems import InputError, Problem

#: Exit code of every tool when its input (a flag, a file, a server's answer) is refused.
EXIT_BAD_INPUT = 2


class BoundaryError(InputError):
    """Input refused at the boundary; `str()` is one line: `field=value: fix`."""

    def __init__(self, field: str, value: object, fix: str) -> None:
        self.field, self.value, self.fix = field, value, fix
        super().__init__([Problem(field, value, fix)])
