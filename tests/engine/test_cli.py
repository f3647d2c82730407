"""The engine's commands, ``variants``, ``deal`` and ``replay``, through ``solrace.cli.main``."""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from solrace import cli
from solrace.cli import main
from solrace.cli_engine import parse_seed, read_moves, use_color
from solrace.engine import VARIANTS, IllegalMove, full_layout, new_game, parse_move

MAX_SEED = 2**64 - 1
ESC = "\x1b["


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- variants ------------------------------------------------------------------------------


def test_variants_lists_the_four_ids_with_their_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "variants")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 4
    for line, (variant, cls) in zip(lines, VARIANTS.items(), strict=True):
        assert line.split(None, 1) == [variant, cls.title]


def test_variants_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "variants", "--json")
    assert code == 0
    assert json.loads(out) == [{"id": v, "title": cls.title} for v, cls in VARIANTS.items()]


# -- deal ----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_deal_labels_every_pile(capsys: pytest.CaptureFixture[str], variant: str) -> None:
    code, out, err = run(capsys, "deal", variant, "--seed", "42")
    assert code == 0 and err == ""
    game = new_game(variant, 42)
    labels = {line.split()[0] for line in out.splitlines() if line.strip()}
    assert {f"t{i}" for i in range(1, len(game.tableau) + 1)} <= labels
    assert {"f1", "f2", "f3", "f4"} <= labels
    assert ({"r", "s", "w"} <= labels) is game.has_stock
    assert game.title in out.splitlines()[0]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_deal_shows_every_card_once_with_suit_symbols(
    capsys: pytest.CaptureFixture[str], variant: str
) -> None:
    _, out, _ = run(capsys, "deal", variant, "--seed", "7")
    body = out.split("\n\n", 1)[1]
    cards = [word.strip("[]") for line in body.splitlines() for word in line.split()[2:]]
    cards = [card for card in cards if card != "-"]
    assert len(cards) == 52 == len(set(cards))
    assert all(card[-1] in "♣♦♥♠" for card in cards)


def test_deal_marks_the_reserve_top_and_shows_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "deal", "canfield", "--seed", "42")
    (reserve,) = [line for line in out.splitlines() if line.startswith("r ")]
    # Seed 42's reserve, bottom first, is 7C 3H KC 2S AC AH KD 10D 5C 8S JH 2H 4S.
    assert reserve.split()[1:] == [
        "(13)", "7♣", "3♥", "K♣", "2♠", "A♣", "A♥", "K♦", "10♦", "5♣", "8♠", "J♥", "2♥", "[4♠]",
    ]  # fmt: skip


def test_deal_rainbow_canfield_names_the_lead_rank(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "deal", "rainbow-canfield", "--seed", "42")
    assert "Lead rank: 4" in out


def test_deal_is_not_coloured_when_stdout_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys, "deal", "canfield", "--seed", "1")
    assert ESC not in out


def test_deal_color_flag_colours_red_suits_only(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "deal", "british-canister", "--seed", "0", "--color")
    assert f"{ESC}31mJ♥{ESC}0m" in out
    assert f"{ESC}31m2♦{ESC}0m" in out
    assert f"{ESC}31m8♠" not in out and f"{ESC}31m9♣" not in out


def test_deal_no_color_flag(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "deal", "british-canister", "--seed", "0", "--no-color")
    assert ESC not in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_use_color_follows_the_terminal_and_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(None, _Terminal()) is True
    assert use_color(None, io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(None, _Terminal()) is False
    assert use_color(True, _Terminal()) is True
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color(None, _Terminal()) is True
    assert use_color(False, _Terminal()) is False


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_deal_json_is_full_layout_plus_title(
    capsys: pytest.CaptureFixture[str], variant: str
) -> None:
    code, out, err = run(capsys, "deal", variant, "--seed", "42", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    game = new_game(variant, 42)
    keys = {"title", "variant", "seed", "tableau", "foundations"}
    if game.has_stock:
        keys |= {"reserve", "stock", "waste"}
    assert set(data) == keys
    assert data == {"title": game.title, **full_layout(game)}


def test_deal_json_carries_the_largest_seed_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "deal", "canfield", "--seed", str(MAX_SEED), "--json")
    assert json.loads(out)["seed"] == MAX_SEED


def test_deal_accepts_hex_seeds(capsys: pytest.CaptureFixture[str]) -> None:
    _, decimal, _ = run(capsys, "deal", "canfield", "--seed", "42", "--json")
    _, hexa, _ = run(capsys, "deal", "canfield", "--seed", "0x2A", "--json")
    assert decimal == hexa


@pytest.mark.parametrize(
    ("text", "seed"),
    [("0", 0), ("42", 42), ("0x2a", 42), ("0X2A", 42), (" 7 ", 7), (str(MAX_SEED), MAX_SEED),
     ("0xFFFFFFFFFFFFFFFF", MAX_SEED)],
)  # fmt: skip
def test_parse_seed(text: str, seed: int) -> None:
    assert parse_seed(text) == seed


@pytest.mark.parametrize(
    "text", ["-1", str(MAX_SEED + 1), "0x10000000000000000", "abc", "0x", "", "1.5", "1e3", "0b1"]
)
def test_deal_refuses_a_bad_seed(capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, out, err = run(capsys, "deal", "canfield", "--seed", text)
    assert code == 2 and out == ""
    assert "--seed" in err and "seed" in err.splitlines()[-1]


def test_deal_refuses_an_unknown_variant(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "deal", "spider", "--seed", "1")
    assert code == 2 and out == ""
    assert "unknown variant 'spider'" in err
    assert all(variant in err for variant in VARIANTS)


def test_deal_accepts_underscores_and_capitals(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "deal", "Rainbow_Canfield", "--seed", "1", "--json")
    assert code == 0 and json.loads(out)["variant"] == "rainbow-canfield"


def test_deal_needs_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "deal", "canfield")
    assert code == 2 and "--seed" in err


def test_no_command_and_unknown_options_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys)[0] == 2
    assert run(capsys, "shuffle")[0] == 2
    code, _, err = run(capsys, "deal", "canfield", "--seed", "1", "--bogus")
    assert code == 2 and "--bogus" in err
    code, _, err = run(capsys, "deal", "canfield", "--seed", "1", "extra")
    assert code == 2 and "extra" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert all(command in out for command in ("variants", "deal", "replay"))
    code, out, _ = run(capsys, "replay", "--help")
    assert code == 0 and "--no-undo" in out and "--file" in out


# -- replay --------------------------------------------------------------------------------

# British Canister, seed 7: t4's top card is AC and t7's is 10D, which fits on t2's JS;
# t1's top card is KS.


def test_replay_prints_the_final_position_with_status(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", "british-canister", "--seed", "7", "t4-f", "t7-t2")
    assert code == 0 and err == ""
    assert "status: playing   banked: 1/52   moves: 2" in out
    (f1,) = [line for line in out.splitlines() if line.startswith("f1 ")]
    assert f1.split()[1:] == ["(1)", "A♣"]
    (t2,) = [line for line in out.splitlines() if line.startswith("t2 ")]
    assert t2.split()[-2:] == ["J♠", "10♦"]


def test_replay_json_adds_status_banked_and_moves(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "replay", "british-canister", "--seed", "7", "t4-f", "t7-t2", "--json"
    )
    assert code == 0
    data = json.loads(out)
    game = new_game("british-canister", 7)
    for text in ("t4-f", "t7-t2"):
        game.apply(parse_move(text))
    assert data == {
        "title": game.title,
        **full_layout(game),
        "status": "playing",
        "banked": 1,
        "moves": 2,
    }


def test_replay_with_no_moves_shows_the_deal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "canfield", "--seed", "3", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["moves"] == 0 and data["banked"] == 1 and data["status"] == "playing"


def test_replay_takes_moves_before_and_after_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "british-canister", "t4-f", "--seed", "7", "t7-t2")
    assert code == 0 and "moves: 2" in out


def test_replay_reports_the_first_refused_move(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "replay", "british-canister", "--seed", "7", "t4-f", "t1-f", "t7-t2"
    )
    assert code == 1
    game = new_game("british-canister", 7)
    game.apply(parse_move("t4-f"))
    with pytest.raises(IllegalMove) as refusal:
        game.apply(parse_move("t1-f"))
    assert err == f"move 2 (t1-f): foundation_needs_base: {refusal.value.message}\n"
    # stdout holds the position before the refused move.
    assert "banked: 1/52   moves: 1" in out


def test_replay_refusal_quotes_the_move_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "replay", "canfield", "--seed", "0", "W-F")
    assert code == 1
    assert err.startswith("move 1 (W-F): empty_pile: ")


def test_replay_no_undo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "british-canister", "--seed", "7", "t4-f", "u")
    assert code == 0 and "banked: 0/52   moves: 2" in out
    code, _, err = run(
        capsys, "replay", "british-canister", "--seed", "7", "--no-undo", "t4-f", "u"
    )
    assert code == 1
    assert err.startswith("move 2 (u): undo_not_allowed: ")


def test_replay_bad_notation_exits_2_before_applying_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "replay", "canfield", "--seed", "0", "d", "t1-q", "w-f")
    assert code == 2 and out == ""
    assert err.startswith("solrace replay: error: move 2: 't1-q' is not a move")


def test_replay_bad_variant_and_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "replay", "klondike", "--seed", "1", "d")[0] == 2
    assert run(capsys, "replay", "canfield", "--seed", "x", "d")[0] == 2


def test_replay_reads_moves_from_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "moves.txt"
    path.write_text("# British Canister, seed 7\nt4-f   # the Ace of clubs\n\n", encoding="utf-8")
    code, out, _ = run(
        capsys, "replay", "british-canister", "--seed", "7", "--file", str(path), "t7-t2"
    )
    assert code == 0 and "banked: 1/52   moves: 2" in out
    # Moves from the file come first, so a refusal counts them.
    code, _, err = run(
        capsys, "replay", "british-canister", "--seed", "7", "--file", str(path), "t1-f"
    )
    assert code == 1 and err.startswith("move 2 (t1-f): ")


def test_replay_reads_moves_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("t4-f t7-t2\n"))
    code, out, _ = run(capsys, "replay", "british-canister", "--seed", "7", "--file", "-")
    assert code == 0 and "moves: 2" in out


def test_replay_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "none.txt"
    code, out, err = run(capsys, "replay", "canfield", "--seed", "0", "--file", str(missing))
    assert code == 2 and out == ""
    assert f"cannot read moves from {missing}" in err


def test_read_moves_splits_on_whitespace_and_drops_comments() -> None:
    text = "t1-f t2-t3\n# a whole-line comment\n  d\tw-f # after a move\nrd"
    assert read_moves(text) == ["t1-f", "t2-t3", "d", "w-f", "rd"]


# -- the command list is open to other modules ---------------------------------------------


def test_other_modules_add_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType("solrace_test_commands")

    def hello(args: argparse.Namespace) -> int:
        print(f"hello {args.name}")
        return 3

    def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        parser = subparsers.add_parser("hello")
        parser.add_argument("name")
        parser.set_defaults(func=hello)

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(cli, "COMMAND_MODULES", [*cli.COMMAND_MODULES, module.__name__])
    assert run(capsys, "hello", "world") == (3, "hello world\n", "")
    assert run(capsys, "variants")[0] == 0


# -- the installed console script ----------------------------------------------------------


def _console_script() -> str:
    beside = Path(sys.executable).with_name("solrace")
    found = str(beside) if beside.exists() else shutil.which("solrace")
    assert found, "the solrace console script is not installed: pip install -e ."
    return found


def test_console_script_runs() -> None:
    script = _console_script()
    result = subprocess.run(
        [script, "deal", "rainbow-canfield", "--seed", "42", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["title"] == "Rainbow Canfield" and data["foundations"][0] == ["4S"]

    result = subprocess.run(
        [script, "replay", "british-canister", "--seed", "7", "t1-f"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("move 1 (t1-f): foundation_needs_base: ")

    result = subprocess.run(
        [script, "deal", "canfield", "--seed", "-5"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == "" and "seed" in result.stderr


def test_the_readme_engine_examples_work(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Try the engine", 1)[1].split("\n## ", 1)[0]
    commands = [
        line.split()[1:] for line in section.splitlines() if line.startswith("    solrace ")
    ]
    assert commands
    for argv in commands:
        code, _, err = run(capsys, *argv)
        assert code == 0, (argv, err)
