"""Build engine positions from card names, and check moves against them.

A position is written pile by pile, bottom card first, as space-separated card names
(``"KS QH 10C"``). :func:`build` deals a real game and then overwrites its piles, so
every test plays through the engine's own ``apply``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from solrace.engine import (
    Game,
    IllegalMove,
    MoveKind,
    Reason,
    card_name,
    new_game,
    parse_card,
    parse_move,
)
from solrace.engine.cards import make_card
from solrace.engine.game import Change

BC = "british-canister"
AC = "american-canister"
RC = "rainbow-canfield"
CF = "canfield"
ALL_VARIANTS = (BC, AC, RC, CF)


def suit_run(suit: str, first: int = 1, last: int = 13) -> str:
    """The cards of ``suit`` from rank ``first`` to ``last`` in order (``suit_run("S", 1, 3)``
    is ``"AS 2S 3S"``); ranks wrap past the King when ``last < first``."""
    ranks = (
        list(range(first, last + 1)) if first <= last else [*range(first, 14), *range(1, last + 1)]
    )
    return " ".join(card_name(make_card(rank, suit)) for rank in ranks)


# British or American Canister with all 52 cards and no legal move: every card left is a
# spade, none can go on another, no pile is empty, and 5S, the spade the foundation needs
# next, lies under 6S.
CANISTER_STUCK = {
    "foundations": [suit_run("C"), suit_run("D"), suit_run("H"), suit_run("S", 1, 4)],
    "tableau": ["5S 6S", "7S", "8S", "9S", "10S", "JS", "QS", "KS"],
}

# All 52 cards; no single card can move, but the run JH 10S fits on QS (American Canister).
CANISTER_RUN_ONLY = {
    "foundations": [suit_run("C"), suit_run("D"), suit_run("H", 1, 10), suit_run("S", 1, 4)],
    "tableau": ["5S 6S", "KH QS", "7S", "8S", "9S", "JS", "QH KS", "JH 10S"],
}


def cards(text: str) -> list[int]:
    """The cards named in ``text``, in order (``"KS QH"``)."""
    return [parse_card(name) for name in text.split()]


def names(pile: Iterable[int]) -> str:
    """The names of ``pile``'s cards, space-separated: the inverse of :func:`cards`."""
    return " ".join(card_name(c) for c in pile)


def every_card(game: Game) -> list[int]:
    """Every card the game holds, wherever it lies."""
    found = [c for pile in game.tableau for c in pile]
    found += [c for pile in game.foundations for c in pile]
    return found + game.reserve + game.stock + game.waste


def build(
    variant: str,
    *,
    tableau: Sequence[str] = (),
    foundations: Sequence[str] = (),
    reserve: str = "",
    stock: str = "",
    waste: str = "",
    fan: int | None = None,
    base_rank: int | None = None,
    rest: str | None = None,
    seed: int = 1,
    undo_allowed: bool = True,
) -> Game:
    """A game of ``variant`` whose piles are exactly the ones given (the others empty).

    ``rest`` puts every card not named elsewhere at the bottom of ``"stock"`` (drawn last)
    or in ``"reserve"`` (under the named reserve cards), so that the game holds all 52.
    No card may be named twice. ``fan`` defaults to the waste's size, at most the number
    a draw deals.
    """
    game = new_game(variant, seed, undo_allowed=undo_allowed)
    if len(tableau) > len(game.tableau) or len(foundations) > 4:
        raise ValueError("more piles than the game has")
    game.tableau = [cards(p) for p in tableau]
    game.tableau += [[] for _ in range(type(game).tableau_piles - len(tableau))]
    game.foundations = [cards(f) for f in foundations]
    game.foundations += [[] for _ in range(4 - len(foundations))]
    game.reserve, game.stock, game.waste = cards(reserve), cards(stock), cards(waste)
    named = every_card(game)
    if len(set(named)) != len(named):
        raise ValueError("a card is named twice")
    if rest is not None:
        others = sorted(set(range(52)) - set(named))
        if rest == "stock":
            game.stock[:0] = others
        elif rest == "reserve":
            game.reserve[:0] = others
        else:
            raise ValueError(f"rest goes to 'stock' or 'reserve', not {rest!r}")
    game.fan = min(len(game.waste), game.draw_count) if fan is None else fan
    if base_rank is not None:
        game.base_rank = base_rank
    return game


def accepts(game: Game, text: str) -> Change:
    """Apply the move written as ``text``; fail the test if the engine refuses it."""
    move = parse_move(text)
    if move.kind is not MoveKind.UNDO:
        assert move in game.legal_moves(all_forms=True), f"{text} is not among the legal moves"
    try:
        return game.apply(move)
    except IllegalMove as error:  # pragma: no cover - the failure message is the point
        pytest.fail(f"{text} was refused ({error.reason}): {error.message}")


def refuses(game: Game, text: str, reason: Reason) -> None:
    """Check that the engine refuses ``text`` for ``reason`` and leaves the game as it was."""
    before, moves = game.position(), game.moves
    with pytest.raises(IllegalMove) as caught:
        game.apply(parse_move(text))
    assert caught.value.reason is reason, caught.value.message
    assert game.position() == before
    assert game.moves == moves


def play(game: Game, *texts: str) -> None:
    """Apply several moves in order, each of which must be accepted."""
    for text in texts:
        accepts(game, text)


def top(pile: Sequence[int]) -> str | None:
    """The name of the pile's top card, or None for an empty pile."""
    return card_name(pile[-1]) if pile else None


# Rainbow Canfield with all 52 cards, lead rank A, every foundation started; the stock is
# empty and nothing can move: the tableau piles are 5C, 9D, QH and 3S (none one rank above
# another), and the waste's top 7C and the reserve's top 7D fit nowhere.
RAINBOW_STUCK = {
    "base_rank": 1,
    "foundations": ["AC", "AD", "AH", "AS"],
    "tableau": ["5C", "9D", "QH", "3S"],
    "waste": "7C",
    "reserve": "7D",
    "rest": "reserve",
}

# Canfield with all 52 cards and no move but a draw: the tableau shows 2D 2H 3D 3H, f1
# shows 5C, the reserve shows 4D, and the only cards that could play (the Aces, 2S and 6C)
# lie under 4D in the reserve. Every other card is in the stock, none of them playable.
CANFIELD_STUCK = {
    "foundations": [suit_run("C", 1, 5)],
    "tableau": ["2D", "2H", "3D", "3H"],
    "reserve": "6C AD AH AS 2S 4D",
    "rest": "stock",
}

CARD_NAMES = frozenset(card_name(c) for c in range(52))


def shown_cards(view: object) -> list[str]:
    """Every card name anywhere in ``view`` (dicts, lists and strings, recursively)."""
    if isinstance(view, str):
        return [view] if view in CARD_NAMES else []
    if isinstance(view, dict):
        return [name for key, value in view.items() for name in shown_cards([key, value])]
    if isinstance(view, list | tuple):
        return [name for item in view for name in shown_cards(item)]
    return []


def face_down(game: Game) -> set[str]:
    """The names of the cards no client may see: the reserve under its top, the stock."""
    return {card_name(c) for c in game.reserve[:-1] + game.stock}


def face_up(game: Game) -> set[str]:
    """The names of the cards a view shows: the tableau, the foundations' and the reserve's
    top cards and the waste's visible cards."""
    shown = [c for pile in game.tableau for c in pile]
    shown += [pile[-1] for pile in (*game.foundations, game.reserve) if pile]
    return {card_name(c) for c in shown + game.visible_waste()}
