"""Every shell command the product prints for a user to copy is quoted: a walk of the product
code (image/trnspec, trnspec_tools, infra) that fails on a command line made by putting a value
into text.

A command is found by its program (`kubectl`, `aws`, `helm`, `cdk`, `eksctl`, `curl`,
`python -m`) in a string's literal text; it runs to the closing backtick when a backtick opens
it, else to the end of the clause ("; ", ", ", ". ", " (", ")") or of the string. A value put
into that span must come quoted, from trnspec.boundary.shell (`shell_command`,
`shell_commands`) or `shlex.quote` / `shlex.join`, or be the project's own constant (an
UPPER_CASE name, arithmetic on constants). Found in the syntax tree:
- `f-string`: an f-string's `{value}` in a command span;
- `concatenation`: `"kubectl get ns " + name` (a `+` chain that starts with a command's text);
- `format`: `"kubectl get ns {}".format(name)` and `"kubectl get ns %s" % name`;
- `join`: `" ".join(["kubectl", ...])` (words joined without quoting).

Why: a value from a setting, a flag, a file or a server carrying shell syntax (`gp3 && id`)
would run as more than the command printed when the user pastes it (issue 50).

`ALLOWED` lists the exceptions, each with its reason; an entry that no longer matches anything
fails too, so the list cannot go stale.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path

from code_walk import Violation, not_allowed, product_files, stale_entries

HELPER = "image/trnspec/boundary/shell.py"

#: A program at a word boundary, followed by a lowercase word or a flag (its arguments).
_COMMAND = re.compile(
    r"(?<![\w./-])(kubectl|aws|helm|cdk|eksctl|curl|(?:\.venv/bin/)?python3? -m)(?= [a-z-])"
)
#: Where a command written in prose ends when no backtick delimits it.
_CLAUSE_ENDS = ("; ", ", ", ". ", " (", ")")
#: Calls whose result is quoted for the shell.
_QUOTING = {"shell_command", "shell_commands"}
_SHLEX_QUOTING = {"quote", "join"}
#: Stands for a value in the flattened text of a string (never in source text).
_SLOT = "\0"


def _is_quoting_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Name):
        return f.id in _QUOTING
    if isinstance(f, ast.Attribute):
        if f.attr in _QUOTING:
            return True
        return f.attr in _SHLEX_QUOTING and isinstance(f.value, ast.Name) and f.value.id == "shlex"
    return False


def quoted_or_constant(node: ast.expr) -> bool:
    """A value that may stand in a command: quoted for the shell, or the project's own
    constant (an UPPER_CASE name or attribute, a literal, arithmetic of those)."""
    if _is_quoting_call(node):
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id.isupper()
    if isinstance(node, ast.Attribute):
        return node.attr.isupper()
    if isinstance(node, ast.BinOp):
        return quoted_or_constant(node.left) and quoted_or_constant(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        # a method of a literal on constants: `",".join(COMMANDS)`
        return (
            isinstance(node.func.value, ast.Constant)
            and all(quoted_or_constant(a) for a in node.args)
            and not node.keywords
        )
    if isinstance(node, ast.UnaryOp):
        return quoted_or_constant(node.operand)
    return False


def _spans(text: str) -> Iterator[tuple[str, int, int]]:
    """(program, start, end) of each command in `text`."""
    for match in _COMMAND.finditer(text):
        start = match.start()
        if start > 0 and text[start - 1] == "`":
            end = text.find("`", match.end())
        else:
            ends = [i for i in (text.find(e, match.end()) for e in _CLAUSE_ENDS) if i >= 0]
            end = min(ends, default=-1)
        yield match.group(1), start, len(text) if end < 0 else end


def _unquoted_in_commands(parts: Sequence[str | ast.expr]) -> list[str]:
    """Programs of the command spans that hold a value neither quoted nor constant; `parts` is
    a string's literal text and the values put into it, in order."""
    text, slots = "", []
    for part in parts:
        if isinstance(part, str):
            text += part
        else:
            slots.append((len(text), part))
            text += _SLOT
    return [
        program
        for program, start, end in _spans(text)
        if any(start <= at < end and not quoted_or_constant(v) for at, v in slots)
    ]


def _concatenation(node: ast.BinOp) -> list[str | ast.expr] | None:
    """The operands of a `+` chain, literal text as str; None unless it starts with text."""
    operands = _operands(node)
    first = operands[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    return [
        o.value if isinstance(o, ast.Constant) and isinstance(o.value, str) else o for o in operands
    ]


def _format_fields(text: str, args: Sequence[ast.expr]) -> list[str | ast.expr]:
    """A `.format` or `%` template's text with each field standing for its value: the field's
    own argument when positional and in range, else the call's first argument that is neither
    quoted nor constant (a keyword field names one of them)."""
    unsafe = [a for a in args if not quoted_or_constant(a)]
    stand_in: ast.expr = unsafe[0] if unsafe else ast.Constant("")
    parts: list[str | ast.expr] = []
    for piece in re.split(r"(\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdifr])", text):
        if piece.startswith("{") or (piece.startswith("%") and len(piece) > 1):
            parts.append(stand_in)
        else:
            parts.append(piece)
    return parts


def _rules(node: ast.AST) -> Iterator[str]:
    """The rule each command-building node breaks (none for a quoted one)."""
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant | ast.FormattedValue)]
        if _unquoted_in_commands(parts):
            yield "f-string"
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts_or_none = _concatenation(node)
        if parts_or_none is not None and _unquoted_in_commands(parts_or_none):
            yield "concatenation"
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            args = list(node.right.elts) if isinstance(node.right, ast.Tuple) else [node.right]
            if _unquoted_in_commands(_format_fields(node.left.value, args)):
                yield "format"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if not (isinstance(owner, ast.Constant) and isinstance(owner.value, str)):
            return
        if node.func.attr == "format":
            args = [*node.args, *(k.value for k in node.keywords)]
            if _unquoted_in_commands(_format_fields(owner.value, args)):
                yield "format"
        elif node.func.attr == "join" and node.args:
            words = node.args[0]
            if (
                isinstance(words, ast.List | ast.Tuple)
                and words.elts
                and isinstance(words.elts[0], ast.Constant)
                and isinstance(words.elts[0].value, str)
                and _COMMAND.match(f"{words.elts[0].value} x")
            ):
                yield "join"


def _operands(node: ast.BinOp) -> list[ast.expr]:
    """The operands of a `+` chain, left to right (the inner `+` nodes left out)."""
    out: list[ast.expr] = []
    for side in (node.left, node.right):
        if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Add):
            out += _operands(side)
        else:
            out.append(side)
    return out


def _nodes(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every node with the qualified name of the function it is in ("<module>" at the top);
    a `+` chain once, as a whole (then each of its operands)."""

    def visit(node: ast.AST, where: str) -> Iterator[tuple[str, ast.AST]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = node.name if where == "<module>" else f"{where}.{node.name}"
            for child in ast.iter_child_nodes(node):
                yield from visit(child, inner)
            return
        yield where, node
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            children: list[ast.AST] = list(_operands(node))
        else:
            children = list(ast.iter_child_nodes(node))
        for child in children:
            yield from visit(child, where)

    for top in ast.iter_child_nodes(tree):
        yield from visit(top, "<module>")


def scan(path: Path, rel: str) -> list[Violation]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    return [
        Violation(rel, where, rule, getattr(node, "lineno", 0), ast.unparse(node)[:120])
        for where, node in _nodes(tree)
        for rule in _rules(node)
    ]


@cache
def violations() -> list[Violation]:
    files = product_files(lambda rel: rel == HELPER)
    return sorted(v for path, rel in files for v in scan(path, rel))


#: (path, function, rule) -> why it may stay.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("infra/outputs.py", "update_kubeconfig_command", "f-string"): (
        "a CloudFormation output formatted at synth from CDK tokens (the cluster's name, which"
        " the settings hold to ^[a-zA-Z][a-zA-Z0-9-]{0,62}$, and the stack's region): quoting"
        " a token would print its quotes around every resolved value"
    ),
    ("infra/platform/cluster/offerings.py", "_not_offered", "f-string"): (
        "prose: 'cdk deploy targets {region}' says where a deploy goes; not a command to copy"
    ),
}


def _key(v: Violation) -> tuple[str, str, str]:
    return (v.path, v.function, v.rule)


def test_every_printed_command_quotes_the_values_in_it() -> None:
    new = not_allowed(violations(), ALLOWED, _key)
    assert not new, (
        "build printed commands with trnspec.boundary.shell.shell_command (or shlex), or add a"
        " commented ALLOWED entry:\n" + "\n".join(new)
    )


def test_every_allowed_entry_still_matches_something() -> None:
    stale = stale_entries(violations(), ALLOWED, _key)
    assert not stale, f"remove these ALLOWED entries, the code no longer has them: {stale}"


PLANTED = """
import shlex
from trnspec.boundary.shell import shell_command

NAMESPACE = "kube-system"


def fstring(ns):
    return f"kubectl get namespace {ns}"


def ticked(source):
    return f"publish with `python -m trnspec stage upload DIR {source}` first"


def prose(ns):
    return f"see kubectl -n {ns} get pods,events (a new node can take longer)"


def concatenated(name):
    return "kubectl get storageclass " + name + " -o yaml"


def formatted(name, region):
    return "aws eks describe-cluster --name {}".format(name) + "helm list -n %s" % region


def joined(name):
    return " ".join(["kubectl", "get", "crd", name])


def quoted(ns, name, region):
    return [
        f"kubectl get namespace {shlex.quote(ns)}",
        f"see {shell_command('kubectl', '-n', ns, 'get', 'pods')} (a new node ...)",
        f"kubectl -n {NAMESPACE} get daemonset agent",
        f"aws eks update-kubeconfig --name {shlex.join([name])} --region {shlex.quote(region)}",
        f"the kubectl provider's {NAMESPACE}",
        f"pods of {ns} are not ready: run the smoke test first",
    ]
"""


def test_the_walk_finds_each_way_of_putting_a_value_into_a_command(tmp_path: Path) -> None:
    module = tmp_path / "planted.py"
    module.write_text(PLANTED, encoding="utf-8")
    found = sorted((v.function, v.rule) for v in scan(module, "planted.py"))
    assert found == [
        ("concatenated", "concatenation"),
        ("formatted", "format"),
        ("formatted", "format"),
        ("fstring", "f-string"),
        ("joined", "join"),
        ("prose", "f-string"),
        ("ticked", "f-string"),
    ]
