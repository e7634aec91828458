"""Commands printed for a user to copy into a shell: every word quoted (POSIX shell rules,
`shlex`), so a value that came from a setting, a flag, a file or a server stays one argument of
the command it is printed in and never becomes shell syntax (`gp3 && id` as a StorageClass name
prints `'gp3 && id'`, which kubectl receives as a name and refuses).

A printed command is built here from its words, never by formatting text into a command line:
tests/test_shell_commands.py walks the product code for f-strings, concatenations and
`.format` calls that put a value into a command's text.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def shell_command(*argv: object) -> str:
    """One command line: each word of `argv` quoted where the shell would read it otherwise."""
    return shlex.join(str(word) for word in argv)


def shell_commands(*commands: Sequence[object]) -> str:
    """Commands run one after the other while each succeeds (`a && b`), each quoted as
    `shell_command` quotes it; the `&&` between them is the only syntax in the line."""
    return " && ".join(shell_command(*argv) for argv in commands)
