"""The one error for bad outside input: one line naming the field, the value and the fix."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence

from trnspec.boundary.problems import InputError, Problem
from trnspec.boundary.reader_gone import quiet_exit, stdout_reader_gone

#: Exit code of every tool when its input (a flag, a file, a server's answer) is refused.
EXIT_BAD_INPUT = 2


class BoundaryError(InputError):
    """Input refused at the boundary; `str()` is one line: `field=value: fix`."""

    def __init__(self, field: str, value: object, fix: str) -> None:
        self.field, self.value, self.fix = field, value, fix
        super().__init__([Problem(field, value, fix)])


Main = Callable[..., int]


def exits_on_bad_input(prog: str) -> Callable[[Main], Main]:
    """Decorate a tool's `main`: an InputError that reaches it (input refused anywhere below:
    a BoundaryError, a ConfigError, a settings error) ends the tool with its problems on stderr,
    one a line, and EXIT_BAD_INPUT, never a traceback. Standard output whose reader went away
    ends it quietly (reader_gone)."""

    def wrap(main: Main) -> Main:
        @functools.wraps(main)
        def guarded(argv: Sequence[str] | None = None, *args: object, **kwargs: object) -> int:
            try:
                return main(argv, *args, **kwargs)
            except InputError as exc:
                print(f"{prog}: error: {exc}", file=sys.stderr)
                return EXIT_BAD_INPUT
            except BrokenPipeError as exc:
                if stdout_reader_gone(exc):
                    return quiet_exit()
                raise

        return guarded

    return wrap
