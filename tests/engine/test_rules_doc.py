"""docs/rules.md against the code and the tests, so that neither can drift from the page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from solrace.engine import Reason, format_move, parse_move

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "rules.md"
RULE = re.compile(r"^- \*\*((ALL|BC|AC|RC|CF)-(\d+))\*\* (.+)$")
PREFIXES = ("ALL", "BC", "AC", "RC", "CF")


def _rules() -> dict[str, str]:
    rules: dict[str, str] = {}
    for line in DOC.read_text().splitlines():
        match = RULE.match(line)
        if match:
            assert match[1] not in rules, f"{match[1]} is numbered twice"
            rules[match[1]] = match[4]
    return rules


def _test_names() -> list[str]:
    names = []
    for path in HERE.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names.append(node.name)
    return names


def test_every_rule_in_the_doc_has_a_test_naming_it() -> None:
    names = _test_names()
    missing = []
    for rule_id in _rules():
        tag = rule_id.lower().replace("-", "_")
        if not any(re.search(rf"^test_{tag}(_|$)", name) for name in names):
            missing.append(rule_id)
    assert not missing, f"rules without a test named test_<id>_...: {missing}"


def test_every_test_naming_a_rule_names_one_the_doc_has() -> None:
    rules = {rule_id.lower().replace("-", "_") for rule_id in _rules()}
    tagged = re.compile(r"^test_((?:all|bc|ac|rc|cf)_\d+)_")
    stray = [n for n in _test_names() if (m := tagged.match(n)) and m[1] not in rules]
    assert not stray, f"tests naming rules docs/rules.md does not have: {stray}"


def test_each_game_has_rules_listed_in_the_order_of_their_numbers() -> None:
    rules = list(_rules())  # ids are stable, so a rule dropped later leaves a gap
    for prefix in PREFIXES:
        numbers = [int(r.split("-")[1]) for r in rules if r.startswith(prefix + "-")]
        assert numbers, prefix
        assert numbers == sorted(numbers) and numbers[0] == 1, prefix


def test_each_rule_is_one_sentence() -> None:
    for rule_id, text in _rules().items():
        assert text.endswith("."), rule_id
        assert not re.search(r"[.!?] [A-Z]", text), f"{rule_id} has more than one sentence"


def test_the_reason_table_lists_every_reason_code_once() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| [A-Z]", DOC.read_text(), flags=re.MULTILINE)
    assert sorted(rows) == sorted(r.value for r in Reason)


def test_the_notation_table_reads_back_as_written() -> None:
    section = DOC.read_text().split("## Move notation")[1].split("\n## ")[0]
    texts = re.findall(r"`([a-z0-9-]+)`", section)
    assert {"t1-t3", "t1-t3x3", "t2-f", "t2-f3", "r-t1", "w-f", "f2-t4", "d", "rd", "u"} <= set(
        texts
    )
    for text in texts:
        if text in ("draw", "redeal", "undo", "x1"):
            continue
        assert format_move(parse_move(text)) == text
