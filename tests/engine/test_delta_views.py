"""An ack's delta, applied to the view before the move, makes the view after it.

Random playouts in all four games (random legal moves in every spelling the engine takes,
and undos) check after each move that ``apply_delta(before, delta_view(game, touched))``
is ``player_view(game)``, and with the legal moves asked for, ``player_view(game,
legal=True)``: the piles a move reports as touched are all the piles it changed.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solrace.engine import (
    VARIANTS,
    Game,
    delta_view,
    format_move,
    new_game,
    parse_move,
    pile_view,
    player_view,
)
from solrace.protocol import apply_delta

SEEDS = [0, 1, 7, 42, 2024, 0xDEC0DE, 2**63 + 5, 2**64 - 1]
STEPS = 250
UNDO_RATE = 0.15
COMMON_KEYS = {"piles", "status", "banked", "moves", "can_undo"}


def pile_names(game: Game) -> list[str]:
    """Every pile of ``game`` in the move notation."""
    names = [f"t{i + 1}" for i in range(len(game.tableau))]
    names += [f"f{i + 1}" for i in range(len(game.foundations))]
    if game.has_stock:
        names += ["r", "s", "w"]
    return names


def check_step(game: Game, move: str, before: dict[str, Any], before_legal: dict[str, Any]) -> None:
    """Apply ``move`` and check both deltas against the views before and after it."""
    change = game.apply(parse_move(move))
    touched = change.touched
    assert touched, f"{move} touched no pile"
    assert set(touched) <= set(pile_names(game)), touched

    delta = delta_view(game, touched)
    assert set(delta) == COMMON_KEYS, delta
    assert set(delta["piles"]) == set(touched)
    assert delta["piles"] == {name: pile_view(game, name) for name in touched}
    after = player_view(game)
    assert apply_delta(before, delta) == after, (game.variant, move, touched)
    # A view that had the legal moves loses them: they would be out of date.
    assert apply_delta(before_legal, delta) == after, (game.variant, move, touched)

    with_legal = delta_view(game, touched, legal=True)
    assert set(with_legal) == COMMON_KEYS | {"legal"}
    after_legal = player_view(game, legal=True)
    assert with_legal["legal"] == after_legal["legal"]
    assert apply_delta(before_legal, with_legal) == after_legal, (game.variant, move, touched)
    assert apply_delta(before, with_legal) == after_legal, (game.variant, move, touched)


def playout(variant: str, seed: int, rng: random.Random, steps: int = STEPS) -> tuple[Game, int]:
    """Play random moves and undos, checking every delta; return the game and the undos."""
    game = new_game(variant, seed)
    undos = 0
    for _ in range(steps):
        if game.status.value != "playing":
            break
        before, before_legal = player_view(game), player_view(game, legal=True)
        legal = game.legal_moves(all_forms=True)
        if game.can_undo and (not legal or rng.random() < UNDO_RATE):
            move = "u"
            undos += 1
        elif legal:
            move = format_move(rng.choice(legal))
        else:
            break
        check_step(game, move, before, before_legal)
    return game, undos


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("seed", SEEDS)
def test_every_delta_of_a_random_playout_makes_the_next_view(variant: str, seed: int) -> None:
    game, _ = playout(variant, seed, random.Random(f"{variant}:{seed}"))
    assert game.moves > 0 or game.status.value == "stuck"  # a few deals are stuck at once


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_playouts_undo_moves_and_end_games(variant: str) -> None:
    # The checks above are worth something only if the playouts undo moves and play on
    # to the end of a game (won or stuck), where the status and can_undo change too.
    undone = ended = 0
    for seed in SEEDS:
        game, undos = playout(variant, seed, random.Random(f"{variant}:{seed}:long"), 3000)
        undone += undos
        ended += game.moves > 0 and game.status.value != "playing"
    assert undone > 0 and ended > 0


@settings(max_examples=40, deadline=None)
@given(
    variant=st.sampled_from(sorted(VARIANTS)),
    seed=st.integers(min_value=0, max_value=2**64 - 1),
    rng=st.randoms(use_true_random=False),
)
def test_every_delta_makes_the_next_view_from_any_deal(
    variant: str, seed: int, rng: random.Random
) -> None:
    playout(variant, seed, rng, steps=120)
