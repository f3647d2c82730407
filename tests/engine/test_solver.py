"""The solver: its certificates replay to a win, and its "no win" agrees with a plain search.

The plain search (``solrace.engine.solver_plain``) tries every legal move on the engine's
own game, without the solver's model, keys or safe moves, and keeps every position it
reaches; it finishes only on small positions, so the comparisons below use real deals
of the Canisters (almost all of them stuck within a few moves) and constrained deals of
the Canfields: a real deal with all but the highest few cards of each suit put on the
foundations, the rest left in their dealt order (and, for some, shuffled among their
places). Node budgets, not time, keep the run short and the same on every machine.
"""

from __future__ import annotations

import random
from concurrent.futures import ProcessPoolExecutor

import pytest
from positions import CANFIELD_STUCK, RAINBOW_STUCK, build

from solrace.engine import Game, Status, format_move, new_game, replay
from solrace.engine.cards import RANK, SUIT
from solrace.engine.solver import Verdict, solve_deal, solve_deals, solve_position
from solrace.engine.solver_plain import plain_search

CF, RC, AC, BC = "canfield", "rainbow-canfield", "american-canister", "british-canister"


def constrained(variant: str, seed: int, keep: list[int], shuffle: random.Random | None) -> Game:
    """The deal of ``seed`` with every card banked but the highest ``keep[s]`` of suit ``s``."""
    game = new_game(variant, seed)
    base = game.base_rank

    def rel(card: int) -> int:
        return (RANK[card] - base) % 13

    banked = {c for c in range(52) if rel(c) < 13 - keep[SUIT[c]]}
    places = [*game.tableau, game.reserve, game.stock, game.waste]
    for place in places:
        place[:] = [c for c in place if c not in banked]
    if shuffle is not None:
        left = [c for place in places for c in place]
        shuffle.shuffle(left)
        cards = iter(left)
        for place in places:
            place[:] = [next(cards) for _ in place]
    suits = sorted(range(4), key=lambda s: keep[s])
    game.foundations = [sorted((c for c in banked if SUIT[c] == s), key=rel) for s in suits]
    if variant == CF:  # CF-13: no pile stays empty while the reserve has cards
        for pile in game.tableau:
            if not pile and game.reserve:
                pile.append(game.reserve.pop())
    game.fan = min(len(game.waste), game.draw_count)
    return game


def assert_certified(game: Game, moves: list[str]) -> None:
    """The moves, replayed from the deal through the engine with undo off, win."""
    won = replay(game.variant, game.seed, moves, undo_allowed=False)
    assert won.status is Status.WON
    assert won.banked == 52


@pytest.mark.parametrize("variant", [CF, AC, RC])
def test_certificates_replay_to_a_win(variant: str) -> None:
    seeds = {CF: range(12), AC: range(40), RC: (11, 18)}[variant]
    certified = 0
    for seed in seeds:
        outcome = solve_deal(variant, seed, budget_s=None, max_nodes=3_000)
        if outcome.verdict is Verdict.WINNABLE:
            assert outcome.moves is not None
            assert_certified(new_game(variant, seed), [format_move(m) for m in outcome.moves])
            certified += 1
    assert certified >= 1


def test_a_certificate_from_a_position_mid_game_finishes_it() -> None:
    game = new_game(CF, 0)
    first = solve_position(game, budget_s=None, max_nodes=3_000)
    assert first.moves is not None
    prefix = [format_move(m) for m in first.moves[:20]]
    middle = replay(CF, 0, prefix)
    before = (middle.position(), middle.moves)
    rest = solve_position(middle, budget_s=None, max_nodes=3_000)
    assert (middle.position(), middle.moves) == before
    assert rest.moves is not None
    assert_certified(middle, prefix + [format_move(m) for m in rest.moves])


@pytest.mark.parametrize("variant", [BC, AC])
def test_no_win_agrees_with_the_plain_search_on_canister_deals(variant: str) -> None:
    compared = lost = 0
    for seed in range(30):
        game = new_game(variant, seed)
        plain = plain_search(game, max_positions=3_000)
        if plain is None:
            continue
        outcome = solve_position(game, budget_s=None, max_nodes=20_000)
        assert outcome.decided
        assert (outcome.verdict is Verdict.WINNABLE) == plain, seed
        compared += 1
        lost += not plain
    assert compared >= 20 and lost >= 20


def small_keep(variant: str, rng: random.Random) -> list[int]:
    """How many cards of each suit (C D H S) a constrained deal leaves off the foundations.

    In Canfield few red cards are left, so that few foundation cards can come back down
    (CF-25) and the plain search finishes.
    """
    if variant == CF:
        return [rng.randint(2, 4), rng.randint(0, 1), rng.randint(0, 1), rng.randint(2, 4)]
    return [rng.randint(1, 3) for _ in range(4)]


@pytest.mark.parametrize("variant", [CF, RC])
def test_verdicts_agree_with_the_plain_search_on_constrained_deals(variant: str) -> None:
    rng = random.Random(2026)
    compared = 0
    for seed in range(12):
        game = constrained(variant, seed, small_keep(variant, rng), rng if seed % 2 else None)
        plain = plain_search(game, max_positions=2_000)
        if plain is None:
            continue
        outcome = solve_position(game, budget_s=None, max_nodes=20_000)
        assert outcome.decided
        assert (outcome.verdict is Verdict.WINNABLE) == plain, seed
        if outcome.moves is not None:
            for move in outcome.moves:
                game.apply(move)
            assert game.status is Status.WON
        compared += 1
    assert compared >= 8


def buried(seed: int) -> Game:
    """A constrained Rainbow Canfield deal that cannot be won, though it has moves to try:
    a tableau pile holds the last club left above the club its foundation needs next."""
    game = constrained(RC, seed, [2, 1, 2, 1], None)
    base = game.base_rank
    clubs = sorted(
        (c for c in range(52) if SUIT[c] == 0 and all(c not in f for f in game.foundations)),
        key=lambda c: (RANK[c] - base) % 13,
    )
    low, high = clubs[0], clubs[-1]
    for place in [*game.tableau, game.reserve, game.stock, game.waste]:
        place[:] = [c for c in place if c not in (low, high)]
    game.tableau[0][:0] = [low, high]
    return game


def test_no_win_agrees_with_the_plain_search_on_buried_deals() -> None:
    for seed in (2, 5, 6, 7):
        game = buried(seed)
        assert plain_search(game, max_positions=20_000) is False
        outcome = solve_position(game, budget_s=None, max_nodes=20_000)
        assert outcome.verdict is Verdict.NOT_WINNABLE


# Constrained Canfield deals with no win (seed, cards left per suit, shuffled), found by
# trying constrained deals until the solver said so; the plain search must agree.
CANFIELD_LOST = [
    (119, [5, 0, 1, 5], True),
    (738, [6, 0, 0, 3], False),
    (37, [6, 1, 1, 5], True),
    (481, [5, 0, 0, 6], False),
    (826, [6, 0, 1, 5], False),
]


@pytest.mark.parametrize(("seed", "keep", "shuffled"), CANFIELD_LOST)
def test_no_win_agrees_with_the_plain_search_on_constrained_canfield_deals(
    seed: int, keep: list[int], shuffled: bool
) -> None:
    game = constrained(CF, seed, keep, random.Random(seed) if shuffled else None)
    assert plain_search(game, max_positions=20_000) is False
    assert solve_position(game, budget_s=None, max_nodes=20_000).verdict is Verdict.NOT_WINNABLE


@pytest.mark.parametrize(
    ("variant", "layout"), [(CF, CANFIELD_STUCK), (RC, RAINBOW_STUCK)], ids=[CF, RC]
)
def test_a_stuck_position_has_no_win_by_both_searches(
    variant: str, layout: dict[str, object]
) -> None:
    game = build(variant, **layout)  # type: ignore[arg-type]
    assert plain_search(game, max_positions=5_000) is False
    assert solve_position(game, budget_s=None, max_nodes=5_000).verdict is Verdict.NOT_WINNABLE


def test_a_budget_spent_is_unknown() -> None:
    outcome = solve_deal(RC, 0, budget_s=None, max_nodes=50)
    assert outcome.verdict is Verdict.UNKNOWN
    assert outcome.moves is None
    assert outcome.nodes <= 50


def test_solve_deals_runs_in_worker_processes_in_the_seeds_order() -> None:
    with ProcessPoolExecutor(max_workers=2) as pool:
        outcomes = list(solve_deals(BC, [3, 1, 2], budget_s=1.0, executor=pool))
    assert [o.seed for o in outcomes] == [3, 1, 2]
    assert all(o.verdict is Verdict.NOT_WINNABLE for o in outcomes)
