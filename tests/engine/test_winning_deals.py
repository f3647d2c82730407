"""The winning-deal fixtures replay to a win, and the solver's answers really win."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solrace.engine import Status, format_move, new_game, replay
from solrace.engine.solver import search, solve, solve_game

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "winning_deals.json"
DEALS: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))


def _first(variant: str) -> dict[str, Any]:
    return next(deal for deal in DEALS if deal["variant"] == variant)


def test_fixtures_cover_canfield_and_rainbow_canfield() -> None:
    variants = {deal["variant"] for deal in DEALS}
    assert {"canfield", "rainbow-canfield"} <= variants


@pytest.mark.parametrize("deal", DEALS, ids=lambda deal: f"{deal['variant']}-{deal['seed']}")
def test_fixture_replays_to_a_win(deal: dict[str, Any]) -> None:
    game = replay(deal["variant"], deal["seed"], deal["moves"], undo_allowed=False)
    assert game.status is Status.WON
    assert game.banked == 52
    assert game.moves == len(deal["moves"])


def test_solve_wins_the_canfield_fixture_deal() -> None:
    seed = _first("canfield")["seed"]
    moves = solve("canfield", seed, max_nodes=20_000)
    assert moves is not None
    game = replay("canfield", seed, moves, undo_allowed=False)
    assert game.status is Status.WON
    assert game.banked == 52


def test_solve_game_finishes_a_nearly_won_game_and_leaves_it_untouched() -> None:
    deal = _first("rainbow-canfield")
    prefix = deal["moves"][:-15]
    game = replay(deal["variant"], deal["seed"], prefix)
    before = (game.position(), game.moves, list(game.log), game.status)
    moves = solve_game(game, max_nodes=2_000)
    assert moves is not None
    assert (game.position(), game.moves, game.log, game.status) == before
    finished = replay(deal["variant"], deal["seed"], [*prefix, *map(format_move, moves)])
    assert finished.status is Status.WON
    assert finished.banked == 52


def test_search_stops_at_its_node_budget() -> None:
    result = search(new_game("rainbow-canfield", 0), max_nodes=40)
    assert result.moves is None
    assert not result.exhausted
    assert result.nodes <= 40


def test_search_exhausts_a_canfield_deal_with_no_win() -> None:
    # Seed 4 has no win: a search of every position, without the solver's pruning, agrees.
    result = search(new_game("canfield", 4), max_nodes=10_000)
    assert result.moves is None
    assert result.exhausted


def test_a_won_game_needs_no_moves() -> None:
    deal = _first("canfield")
    game = replay(deal["variant"], deal["seed"], deal["moves"])
    assert solve_game(game) == []
