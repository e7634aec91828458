"""One A/B measurement, by construction: the code is walked for second copies of its parts, as
the boundary test walks it for raw parsers. The arms' order, the median round, the spread, the
median's interval, the tokens-per-step bound and the verdict type each have one definition, no
module outside the core alternates arms by the parity of a counter, and none decides for itself
whether a run counts (its errors read beside its completions or throughput)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = [ROOT / "trnspec_tools", ROOT / "image" / "trnspec"]
#: name -> the one module (relative to the root) that may define it
FUNCTIONS = {
    "round_order": "trnspec_tools/ab/order.py",
    "measurement_steps": "trnspec_tools/ab/order.py",
    "median_round": "trnspec_tools/ab/median_round.py",
    "spread": "trnspec_tools/ab/spread.py",
    "median_interval": "trnspec_tools/ab/spread.py",
    "exceeds_tokens_per_step": "trnspec_tools/ab/comparison.py",
    "pair_rounds": "trnspec_tools/ab/comparison.py",
}
CLASSES = {
    "Spread": "trnspec_tools/ab/spread.py",
    "Verdict": "image/trnspec/plan/verdict.py",
    "Comparison": "trnspec_tools/ab/comparison.py",
    "ArmRound": "trnspec_tools/ab/comparison.py",
}
#: modules whose job is the arms' order
ORDER_MODULES = {"trnspec_tools/ab/order.py"}
#: the module whose job is whether a run counts (ArmRound.of_run, ArmRound.problem)
RUN_RULE_MODULE = "trnspec_tools/ab/comparison.py"
#: a run's error count, and the figures the run rule reads beside it
ERROR_NAMES = {"errors", "error_total"}
RUN_FIGURES = {"completed", "num_requests", "output_tokens_per_s", "output_tokens"}


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for top in PRODUCT:
        for path in sorted(top.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out.append((rel, ast.parse(path.read_text(encoding="utf-8"), rel)))
    return out


def definitions(kind: type[ast.AST], names: dict[str, str]) -> list[str]:
    """Every definition of a listed name outside its one module."""
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            name = getattr(node, "name", None)
            if isinstance(node, kind) and name in names and names[name] != rel:
                found.append(f"{rel}:{getattr(node, 'lineno', 0)}: {name}")
    return found


def parity_alternations() -> list[str]:
    """`x % 2 == 0` (or `!= 0`, `== 1`) outside the order module: a second ABBA rule."""
    found = []
    for rel, tree in _modules():
        if rel in ORDER_MODULES:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.BinOp)
                and isinstance(node.left.op, ast.Mod)
                and isinstance(node.left.right, ast.Constant)
                and node.left.right.value == 2
            ):
                found.append(f"{rel}:{node.lineno}")
    return found


def _conditions(node: ast.AST) -> list[ast.expr]:
    """The conditions a node tests or computes: an if's, a loop's, a conditional expression's,
    a comprehension's, and a boolean expression assigned or returned."""
    if isinstance(node, ast.If | ast.IfExp | ast.While):
        return [node.test]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.Return) and isinstance(
        node.value, ast.BoolOp | ast.UnaryOp | ast.Compare
    ):
        return [node.value]
    return []


def run_rules() -> list[str]:
    """Every condition reading a run's errors beside its completions or throughput: a rule
    of whether the run counts."""
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            for cond in _conditions(node):
                read = {
                    n.attr if isinstance(n, ast.Attribute) else n.id
                    for n in ast.walk(cond)
                    if isinstance(n, ast.Attribute | ast.Name)
                }
                if read & ERROR_NAMES and read & RUN_FIGURES:
                    found.append(f"{rel}:{cond.lineno}")
    return found


def test_each_part_of_the_ab_measurement_is_defined_once():
    assert definitions(ast.FunctionDef, FUNCTIONS) == []
    assert definitions(ast.ClassDef, CLASSES) == []


def test_no_module_outside_the_core_alternates_arms_by_parity():
    assert parity_alternations() == []


def test_whether_a_run_counts_is_decided_in_the_core_only():
    rules = run_rules()
    assert [r for r in rules if not r.startswith(f"{RUN_RULE_MODULE}:")] == []
    assert rules, "the walk must find the core's own rule (ArmRound.of_run)"


def test_the_walk_finds_what_it_looks_for():
    """The walk is not vacuous: the core's own definitions are found where they belong."""
    seen = {name for rel, tree in _modules() for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
            and (name := node.name) in {**FUNCTIONS, **CLASSES}}  # fmt: skip
    assert seen == set(FUNCTIONS) | set(CLASSES)
