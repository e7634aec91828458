"""Where a command will write, checked before it does any work: a measurement of hours must not
end in a traceback at its last step, and an output must never overwrite one of its inputs.

`check_out_dir(field, path, inputs)` makes the directory if it is absent, then writes and
removes a probe file in it, so a path that is a file, a read-only or full disk, or a directory
the user cannot write is named in one line before the first request is sent.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from trnspec.boundary.aws_names import bucket_problem
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.write import same_path


def bucket_name(field: str, name: str) -> str:
    """`name` if S3 accepts it as a bucket name (trnspec.boundary.aws_names, the one rule),
    else BoundaryError naming the field, the value and the rule."""
    if (problem := bucket_problem(name)) is not None:
        raise BoundaryError(field, name, problem)
    return name


def check_out_dir(
    field: str, path: Path, outputs: Sequence[str], inputs: Sequence[tuple[str, Path]]
) -> Path:
    """`path`, made and proven writable, whose `outputs` (file names in it) are none of
    `inputs` ((flag, path)); BoundaryError naming the field, the value and the fix otherwise."""
    for name in outputs:
        for flag, given in inputs:
            if same_path(path / name, given):
                raise BoundaryError(
                    field,
                    str(path),
                    f"its {name} would overwrite {flag} {given}; write the results elsewhere",
                )
    if path.exists() and not path.is_dir():
        raise BoundaryError(field, str(path), "is not a directory; give a directory to write to")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".trnspec-probe-")
        try:
            os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
            Path(probe).unlink(missing_ok=True)
    except OSError as exc:
        raise BoundaryError(
            field,
            str(path),
            f"cannot write there ({exc.strerror or exc}); give a writable directory",
        ) from None
    return path
