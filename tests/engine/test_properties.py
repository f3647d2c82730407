"""Property tests of the engine: random 64-bit seeds and random playouts in all four games.

A playout applies random legal moves and, now and then, an undo. Along the way it checks
that the game always holds the 52 cards, that the legal moves are exactly the moves
``apply`` accepts, that undo restores the position, that the views never carry a
face-down card and that replaying the log rebuilds the game.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from positions import ALL_VARIANTS, every_card, face_down, face_up, shown_cards

from solrace.engine import (
    DRAW,
    REDEAL,
    UNDO,
    Game,
    IllegalMove,
    Move,
    MoveKind,
    NotationError,
    PileKind,
    Position,
    Reason,
    Status,
    format_move,
    new_game,
    parse_move,
    player_view,
    replay,
    spectator_view,
)
from solrace.engine.cards import RANK, RED

SEEDS = st.integers(min_value=0, max_value=2**64 - 1)
RANDOMS = st.randoms(use_true_random=False)
variants = pytest.mark.parametrize("variant", ALL_VARIANTS)

T, F, R, W, S = (
    PileKind.TABLEAU,
    PileKind.FOUNDATION,
    PileKind.RESERVE,
    PileKind.WASTE,
    PileKind.STOCK,
)


def playout(
    game: Game,
    rng: random.Random,
    steps: int,
    check: Callable[[Game], None] = lambda game: None,
    undo_rate: float = 0.15,
) -> Game:
    """Play up to ``steps`` random legal moves or undos, calling ``check`` before each one.

    Every undo is checked to restore the position the undone move started from.
    """
    before: list[Position] = []
    for _ in range(steps):
        check(game)
        legal = game.legal_moves(all_forms=True)
        if game.can_undo and (not legal or rng.random() < undo_rate):
            moves = game.moves
            game.apply(UNDO)
            assert game.position() == before.pop()
            assert game.moves == moves + 1
        elif legal:
            before.append(game.position())
            game.apply(rng.choices(legal, [_weight(m) for m in legal])[0])
        else:
            break
    check(game)
    return game


def scrambled(variant: str, seed: int, rng: random.Random) -> Game:
    """A game of ``variant`` whose 52 cards lie at random over all its piles.

    The foundations hold runs of distinct suits from the base rank (never all 52 cards),
    some tableau piles are runs, and the reserve, the stock and the waste take random
    shares, any of them possibly empty: positions that random play from a deal seldom
    reaches, such as an empty reserve, empty piles and long runs.
    """
    game = new_game(variant, seed)
    base = game.base_rank
    left = set(range(52))
    game.foundations = [[], [], [], []]
    for pile, suit in zip(game.foundations, rng.sample(range(4), 4), strict=True):
        for j in range(rng.choice([0, 0, 1, 2, 4, 7, 12])):
            card = suit * 13 + (base - 1 + j) % 13
            pile.append(card)
            left.discard(card)
    rest = sorted(left)
    rng.shuffle(rest)
    on_tableau = rest
    if game.has_stock:
        r = rng.choice([0, 0, 1, 2, 5, 13])
        t = r + rng.randint(0, 16)
        w = t + rng.randint(0, max(0, len(rest) - t))
        game.reserve, on_tableau, game.waste, game.stock = rest[:r], rest[r:t], rest[t:w], rest[w:]
        game.fan = rng.randint(0, min(game.draw_count, len(game.waste)))
    piles = game.tableau = [[] for _ in game.tableau]
    if rng.random() < 0.5:  # leave one pile empty
        empty = rng.choice(piles)
        piles = [p for p in piles if p is not empty]
    for card in on_tableau:
        runs = [p for p in piles if p and _follows(game, card, p[-1])]
        rng.choice(runs if runs and rng.random() < 0.7 else piles).append(card)
    return game


def _follows(game: Game, card: int, onto: int) -> bool:
    if game.wraps:
        return RANK[card] % 13 + 1 == RANK[onto]
    return RANK[card] + 1 == RANK[onto] and RED[card] != RED[onto]


def _weight(move: Move) -> int:
    """Favour moves that bank cards, play from the reserve or move runs, so that playouts
    get further from the deal than uniform choices do."""
    if move.dst is F:
        return 8
    if move.src is R:
        return 6
    if move.src is T and move.count > 1:
        return 3
    return 1


def _pile(game: Game, kind: PileKind, index: int) -> list[int]:
    if kind is T:
        return game.tableau[index] if 0 <= index < len(game.tableau) else []
    if kind is F:
        return game.foundations[index] if 0 <= index < 4 else []
    return {R: game.reserve, W: game.waste, S: game.stock}[kind]


def candidates(game: Game) -> Iterator[Move]:
    """Every move worth trying: each source and target of every kind, in range or not,
    each foundation named and unnamed, 1 to one more than the source holds, draw, redeal."""
    n = len(game.tableau)
    sources = [(T, i) for i in range(-1, n + 1)] + [(F, i) for i in range(-1, 5)]
    sources += [(R, 0), (W, 0), (S, 0)]
    targets: list[tuple[PileKind, int | None]] = [(T, i) for i in range(-1, n + 1)]
    targets += [(F, None)] + [(F, i) for i in range(-1, 5)] + [(R, 0), (W, 0), (S, 0)]
    for src, si in sources:
        size = len(_pile(game, src, si))
        for dst, di in targets:
            for count in range(1, size + 2):
                yield Move(MoveKind.MOVE, src, si, dst, di, count)
    yield DRAW
    yield REDEAL


def check_legal_is_accepted(game: Game) -> None:
    """Every candidate move: ``apply`` on a copy accepts it iff ``legal_moves`` lists it."""
    legal = game.legal_moves(all_forms=True)
    assert len(set(legal)) == len(legal)
    listed = set(legal)
    accepted = set()
    trial = copy.deepcopy(game)
    for move in candidates(game):
        try:
            trial.apply(move)
        except IllegalMove as error:
            assert isinstance(error.reason, Reason)
            assert trial.moves == game.moves
            continue
        accepted.add(move)
        trial = copy.deepcopy(game)
    assert trial.position() == game.position() and trial.moves == game.moves
    assert accepted == listed, (
        f"accepted but not listed: {sorted(map(str, accepted - listed))}; "
        f"listed but refused: {sorted(map(str, listed - accepted))}"
    )


def check_52_cards(game: Game) -> None:
    assert sorted(every_card(game)) == list(range(52))


def check_views(game: Game) -> None:
    hidden, shown = face_down(game), face_up(game)
    for view in (player_view(game, legal=True), spectator_view(game)):
        names = shown_cards(view)
        assert not hidden & set(names)
        assert set(names) == shown
        assert len(names) == len(set(names))


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 120))
def test_a_game_always_holds_the_52_distinct_cards(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    playout(new_game(variant, seed), rng, steps, check_52_cards)


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 15))
def test_legal_moves_are_exactly_the_moves_apply_accepts(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    playout(new_game(variant, seed), rng, steps, check_legal_is_accepted)


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 8))
def test_legal_moves_are_exactly_the_moves_apply_accepts_in_any_position(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    game = scrambled(variant, seed, rng)
    check_52_cards(game)
    playout(game, rng, steps, check_legal_is_accepted)


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 150))
def test_replaying_the_log_rebuilds_the_game(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    game = playout(new_game(variant, seed), rng, steps)
    again = replay(variant, seed, game.log)
    assert again.position() == game.position()
    assert again.moves == game.moves == len(game.log)
    assert again.status is game.status


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 80))
def test_views_never_carry_a_face_down_card(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    playout(new_game(variant, seed), rng, steps, check_views)


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(1, 50))
def test_undo_restores_the_position_after_any_move(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    def undo_each_move(game: Game) -> None:
        if game.status is Status.WON:
            return
        before, moves = game.position(), game.moves
        for move in game.legal_moves(all_forms=True):
            probe = copy.deepcopy(game)
            probe.apply(move)
            if probe.status is Status.WON:
                continue
            probe.apply(UNDO)
            assert probe.position() == before
            assert probe.moves == moves + 2
            assert probe.log[-2:] == [move, UNDO]

    playout(new_game(variant, seed), rng, steps, undo_each_move, undo_rate=0.3)


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 80))
def test_every_legal_move_round_trips_through_the_notation(
    variant: str, seed: int, rng: random.Random, steps: int
) -> None:
    def round_trip(game: Game) -> None:
        for move in game.legal_moves(all_forms=True):
            assert parse_move(format_move(move)) == move

    playout(new_game(variant, seed), rng, steps, round_trip)


def stuck_by_the_rules(game: Game) -> bool:
    """Whether docs/rules.md says ``game`` is stuck, found by trying moves rather than by the
    engine's own test: Canfield plays a whole cycle of draws and redeals looking for a move."""
    if game.variant == "canfield":
        probe = copy.deepcopy(game)
        for _ in range(40):  # 18 draws, a redeal and 18 draws cover a full cycle
            if any(m.kind is MoveKind.MOVE for m in probe.legal_moves()):
                return False
            if not probe.stock and not probe.waste:
                break
            probe.apply(DRAW if probe.stock else REDEAL)
        return True
    if game.variant == "rainbow-canfield" and game.stock:
        return False
    return not game.legal_moves()


def check_stuck(game: Game) -> None:
    if game.status is not Status.WON:
        assert (game.status is Status.STUCK) == stuck_by_the_rules(game)


@variants
@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, rng=RANDOMS, steps=st.integers(0, 120), scramble=st.booleans())
def test_stuck_is_reported_exactly_when_the_rules_say(
    variant: str, seed: int, rng: random.Random, steps: int, scramble: bool
) -> None:
    game = scrambled(variant, seed, rng) if scramble else new_game(variant, seed)
    playout(game, rng, steps, check_stuck)


PILE = st.integers(1, 99)
CANONICAL = st.one_of(
    st.sampled_from(["d", "rd", "u", "r-f", "w-f"]),
    st.builds(lambda a, b: f"t{a}-t{b}", PILE, PILE),
    st.builds(lambda a, b, n: f"t{a}-t{b}x{n}", PILE, PILE, st.integers(2, 52)),
    st.builds(lambda a: f"t{a}-f", PILE),
    st.builds(lambda a, b: f"t{a}-f{b}", PILE, PILE),
    st.builds(lambda src, b: f"{src}-t{b}", st.sampled_from("rws"), PILE),
    st.builds(lambda a, b: f"f{a}-t{b}", PILE, PILE),
    st.builds(lambda src, dst: f"{src}-{dst}", st.sampled_from("rws"), st.sampled_from("rws")),
)


@settings(max_examples=150, deadline=None)
@given(text=CANONICAL)
def test_canonical_notation_reads_back_as_written(text: str) -> None:
    move = parse_move(text)
    assert format_move(move) == text
    assert parse_move(f"  {text.upper()} ") == move


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(st.text(max_size=12), st.from_regex(r"[tfrwsx0-9-]{1,8}", fullmatch=True)))
def test_any_text_is_a_move_or_a_notation_error(text: str) -> None:
    try:
        move = parse_move(text)
    except NotationError:
        return
    assert parse_move(format_move(move)) == move


@pytest.mark.parametrize(
    "text",
    [
        "t\u0661-t\u0663",  # Arabic-Indic digits, which int() reads as 1 and 3
        "\u3000d",  # an ideographic space, which str.strip() takes away
        "w-f\u00a0",  # a no-break space
        "t1-t\uff13",  # a full-width 3
        "\u212a",  # the Kelvin sign, which lower() makes a k
    ],
)
def test_the_notation_is_plain_ascii(text: str) -> None:
    with pytest.raises(NotationError, match="plain ASCII"):
        parse_move(text)
    assert parse_move(" \tw-f\r\n") == parse_move("w-f")  # ASCII spaces around it still pass
