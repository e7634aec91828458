"""Where outside data enters, and where results leave: one layer, one error type.

Everything a tool reads from outside (flags, JSON/JSONL files, text from a server) passes through
one of these modules before any other code sees it, and every report is written by `write`:

- `errors`: `BoundaryError`, one line (field=value: fix), exit code `EXIT_BAD_INPUT` (2).
- `numbers`: finite numbers only, in the range the quantity allows; argparse `type=` helpers.
- `json_io`: JSON with bounded size and depth, no NaN/Infinity in or out.
- `text`: server- or user-supplied text made safe to print (no lone surrogates, no control
  characters, rich markup escaped, bounded length).
- `write`: the one file-writing function (regular targets only, atomic, no output overwriting
  another, a named fallback when the target fails).

Downstream code trusts the typed values these return and never re-checks raw input.
"""
