"""The README lists every package, one line each, with what its __init__ says it is for."""

from __future__ import annotations

import readme_layout


def test_every_package_says_what_it_is_for() -> None:
    silent = [str(p) for p in readme_layout.packages() if not readme_layout.summary(p)]
    assert not silent, f"packages whose __init__.py has no docstring: {silent}"


def test_the_readme_package_table_is_the_generated_one() -> None:
    block = readme_layout.current()
    assert block is not None, "README.md lost its generated package table's markers"
    assert block == readme_layout.table(), (
        "README.md's package table is stale: run `python tests/readme_layout.py`"
    )


def test_the_table_has_one_row_per_package() -> None:
    rows = [line for line in readme_layout.table().splitlines() if line.startswith("| `")]
    assert len(rows) == len(readme_layout.packages()) == len(set(rows))
