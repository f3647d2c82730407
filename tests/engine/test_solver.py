"""The solver: its certificates replay to a win, and its "no win" agrees with a plain search.

The plain search (``solrace.engine.solver_plain``) tries every legal move on the engine's
own game, without the solver's model, keys or safe moves, and keeps every position it
reaches; it finishes only on small positions, so the comparisons below use real deals
of the Canisters (almost all of them stuck within a few moves) and constrained deals of
the Canfields: a real deal with all but the highest few cards of each suit put on the
foundations, the rest left in their dealt order (and, for some, shuffled among their
places). Node budgets, not time, keep the run short and the same on every machine.
Hand-built positions check the cuts that the search makes without searching (a reserve
card that can never leave, a safe move, dominated waste positions, a card banked at once
whose way back onto the tableau a win needs) against the same plain search.
"""

from __future__ import annotations

import gc
import itertools
import random
from concurrent.futures import ProcessPoolExecutor

import pytest
from positions import CANFIELD_STUCK, RAINBOW_STUCK, build, suit_run

from solrace.engine import Game, Status, format_move, new_game, parse_card, replay
from solrace.engine.cards import RANK, SUIT
from solrace.engine.native import source
from solrace.engine.solver import (
    Verdict,
    certificate,
    solve_deal,
    solve_deals,
    solve_position,
)
from solrace.engine.solver_canfield import (
    CanfieldModel,
    Child,
    State,
    _packs,
    _reserve_leaves,
    _reserve_stuck,
)
from solrace.engine.solver_plain import plain_search
from solrace.engine.solver_search import search_model

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
    seeds = {CF: range(12), AC: range(40), RC: (10, 11, 18, 19)}[variant]
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
    for seed in range(24):
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
    assert compared >= 16


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


def test_the_search_turns_the_cyclic_collector_back_on() -> None:
    assert gc.isenabled()
    solve_deal(CF, 0, budget_s=None, max_nodes=50)
    assert gc.isenabled()
    gc.disable()
    try:
        solve_deal(CF, 0, budget_s=None, max_nodes=50)
        assert not gc.isenabled()  # left as it was
    finally:
        gc.enable()


def test_solve_deals_runs_in_worker_processes_in_the_seeds_order() -> None:
    with ProcessPoolExecutor(max_workers=2) as pool:
        outcomes = list(solve_deals(BC, [3, 1, 2], budget_s=1.0, executor=pool))
    assert [o.seed for o in outcomes] == [3, 1, 2]
    assert all(o.verdict is Verdict.NOT_WINNABLE for o in outcomes)


# Canfield with the reserve's top card QD and 7H under it: 7H cannot go to its foundation
# (6H lies under it), nor on a black 8 (both lie under it too), nor into a pile, since the
# four Kings that hold the piles can neither move nor be banked (8C, 9D, 6H and 5S, which
# their suits need, are all in the reserve). QD can go on KC or KS, and the stock has a
# few cards to play, so there is something to search.
RESERVE_STUCK = {
    "foundations": [suit_run("C", 1, 7), suit_run("D", 1, 8), suit_run("H", 1, 5), "AS 2S 3S 4S"],
    "tableau": ["KC", "KD", "KH", "KS"],
    "reserve": "5S 9D 8C 8S 6H 7H QD",
    "stock": "QH JS 10H",
    "rest": "reserve",
}


def test_a_reserve_card_that_can_never_leave_is_no_win_by_both_searches() -> None:
    game = build(CF, **RESERVE_STUCK)  # type: ignore[arg-type]
    model = CanfieldModel(game)
    piles, found, rc, seq, p, _ = model.root
    # QD can leave; 7H, under it, never: the search stops at the start.
    assert _reserve_leaves(piles, found, model.reserve[:rc], seq, p) == 1
    assert _reserve_leaves(piles, found, model.reserve[: rc - 1], seq, p) == 0
    assert plain_search(game, max_positions=20_000) is False
    outcome = solve_position(game, budget_s=None, max_nodes=20_000)
    assert outcome.verdict is Verdict.NOT_WINNABLE and outcome.nodes == 1
    # With 7H on top from the start, the search stops there; the plain search agrees.
    at_once = build(CF, **{**RESERVE_STUCK, "reserve": "5S 9D 8C 8S 6H 7H"})  # type: ignore[arg-type]
    outcome = solve_position(at_once, budget_s=None, max_nodes=20_000)
    assert outcome.verdict is Verdict.NOT_WINNABLE and outcome.nodes == 1
    assert plain_search(at_once, max_positions=20_000) is False
    # With 6H in the stock instead, 7H may reach its foundation: it may leave.
    free = build(CF, **{**RESERVE_STUCK, "reserve": "5S 9D 8C 8S 7H QD", "stock": "QH JS 10H 6H"})  # type: ignore[arg-type]
    model = CanfieldModel(free)
    piles, found, rc, seq, p, _ = model.root
    assert _reserve_leaves(piles, found, model.reserve[: rc - 1], seq, p) >= 1


def test_canfield_waste_positions_that_others_reach_are_skipped() -> None:
    fresh = CanfieldModel.table()
    rest = b"piles, foundations, reserve and stock"
    assert fresh((rest, 0))
    assert not fresh((rest, 0))  # seen
    assert fresh((rest, 4))  # off the draw cycle: reaches 4, 7, … and the cycle
    assert not fresh((rest, 7))  # 4 reaches it
    assert not fresh((rest, 0))  # any position reaches the cycle
    assert fresh((rest, 5))  # the other residue
    assert fresh((rest, 2))  # reaches 5
    assert not fresh((rest, 8))
    assert fresh((b"other", 7))


def test_a_safe_move_with_one_foundation_a_rank_behind() -> None:
    # 6H goes home at once: both black foundations hold 5 or more and diamonds, the other
    # red suit, 4 (a 5 of diamonds could never go on 6H).
    game = build(
        CF,
        foundations=[
            suit_run("C", 1, 5),
            suit_run("D", 1, 4),
            suit_run("H", 1, 5),
            suit_run("S", 1, 5),
        ],
        tableau=["7S 6H", "KD", "KH", "KC"],
        rest="stock",
    )
    model = CanfieldModel(game)
    assert (parse_card("6H"), 1, -2) in model.root_actions


def test_rainbow_certificates_draw_only_to_play_the_card_drawn() -> None:
    checked = 0
    for seed in range(80):
        outcome = solve_deal(RC, seed, budget_s=None, max_nodes=600)
        if outcome.verdict is not Verdict.WINNABLE:
            continue
        assert outcome.moves is not None
        texts = [format_move(m) for m in outcome.moves]
        assert_certified(new_game(RC, seed), texts)
        for before, after in itertools.pairwise(texts):
            if before == "d":
                assert after == "d" or after.startswith("w-"), (seed, before, after)
        checked += 1
    assert checked >= 3


# Canfield with 7H on top of the reserve: it goes only on a black 8 (6H and 8C lie under it
# in the reserve, no pile can empty: 9D and 9H need a black 10, the Kings their suits'
# Queens, all in the reserve). 8S is the stock's middle card of three, under KH: a draw of
# three shows KH on top, which never moves (no Queen is banked, no pile empties), so 8S
# never reaches the waste's top and 7H never leaves.
STOCK_LOCKED = {
    "tableau": ["9D", "9H", "KC", "KS"],
    "reserve": "7H",
    "stock": "KH 8S KD",
    "rest": "reserve",
}


def canfield_state(game: Game) -> tuple[tuple[bytes, ...], tuple[int, ...], bytes, bytes, int]:
    """The piles, foundation heights, reserve, waste and stock (``seq``) and waste count of
    ``game``, as the model's reserve check takes them."""
    found = [0, 0, 0, 0]
    for f in game.foundations:
        if f:
            found[SUIT[f[-1]]] = len(f)
    seq = bytes(game.waste) + bytes(reversed(game.stock))
    p = len(game.waste)
    p = 0 if p % 3 == 0 or p == len(seq) else p
    return tuple(bytes(pile) for pile in game.tableau), tuple(found), bytes(game.reserve), seq, p


def test_a_reserve_card_waiting_on_a_stock_card_that_never_turns_up_is_no_win() -> None:
    game = build(CF, **STOCK_LOCKED)  # type: ignore[arg-type]
    assert _reserve_leaves(*canfield_state(game)) == 0
    outcome = solve_position(game, budget_s=None, max_nodes=5_000)
    assert outcome.verdict is Verdict.NOT_WINNABLE and outcome.nodes == 1
    assert plain_search(game, max_positions=5_000) is False
    # With 8S the third card of the first draw, so on top, 7H may go on it once 8S is on 9D.
    shown = build(CF, **{**STOCK_LOCKED, "stock": "8S KD KH"})  # type: ignore[arg-type]
    assert _reserve_leaves(*canfield_state(shown)) >= 1
    # With 6D above 8S, and a black 7 for it on the tableau, playing 6D turns 8S up.
    under = {**STOCK_LOCKED, "tableau": ["9D", "9H", "KC", "8D 7C"], "stock": "6D 8S KD"}
    assert _reserve_leaves(*canfield_state(build(CF, **under))) >= 1  # type: ignore[arg-type]


def test_a_reserve_card_waiting_on_a_covered_card_is_no_win() -> None:
    # 7H goes only on 8S (8C lies under it in the reserve), and 8S lies under 7D, which can
    # never get off it: 8C is in the reserve, and 6D, which its foundation needs first, too.
    layout = {
        "tableau": ["9D 8S 7D", "9H", "KC", "KS"],
        "reserve": "8C 6D 7H",
        "stock": "KH KD",
        "rest": "reserve",
    }
    game = build(CF, **layout)  # type: ignore[arg-type]
    assert _reserve_leaves(*canfield_state(game)) == 0
    assert solve_position(game, budget_s=None, max_nodes=5_000).verdict is Verdict.NOT_WINNABLE
    assert plain_search(game, max_positions=5_000) is False
    # With 6D in the stock instead, 7D may go home once diamonds reach 6 (AD to 5D are in
    # the stock too, AD third): then 8S is uncovered, so 7H is not stuck.
    free = build(
        CF,
        **{**layout, "reserve": "8C 7H", "stock": "6D 5D 4D 3D 2D AD KD KH"},  # type: ignore[arg-type]
    )
    assert _reserve_leaves(*canfield_state(free)) >= 1


# Deals the solver wins within 20,000 positions (the first eight of seeds 0 to 11).
@pytest.mark.parametrize("seed", [0, 1, 5, 6, 7, 8, 10, 11])
def test_no_position_on_a_winning_line_has_a_reserve_card_that_cannot_leave(seed: int) -> None:
    outcome = solve_deal(CF, seed, budget_s=None, max_nodes=20_000)
    assert outcome.moves is not None, "no certificate within the budget"
    game = new_game(CF, seed)
    checked = 0
    for move in [None, *outcome.moves]:
        if move is not None:
            game.apply(move)
        if game.reserve:
            assert not _reserve_stuck(*canfield_state(game)), (seed, move)
            checked += 1
    assert checked > 10


def model_game(model: CanfieldModel, state: State) -> Game:
    """The engine's game at a state of Canfield's model (the state's own position)."""
    piles, found, rc, seq, p, _ = state
    game = new_game(CF, 1)
    game.tableau = [list(pile) for pile in piles]
    game.foundations = [list(range(s * 13, s * 13 + h)) for s, h in enumerate(found)]
    game.reserve = list(model.reserve[:rc])
    game.waste = list(seq[:p])
    game.stock = list(reversed(seq[p:]))
    game.fan = min(p, 3)
    return game


def no_plain_win(model: CanfieldModel, states: list[State]) -> int:
    """How many of ``states`` (cut by a check) the plain search finishes, each with no
    win; a win found fails the test."""
    compared = 0
    for state in states:
        plain = plain_search(model_game(model, state), max_positions=5_000)
        if plain is not None:
            assert plain is False, state
            compared += 1
    return compared


@pytest.mark.parametrize("seed", [2, 3, 7])
def test_a_reserve_card_under_the_top_that_can_never_leave_is_no_win_by_both_searches(
    seed: int,
) -> None:
    """Positions of real deals where the reserve's top card may leave but a card under it
    never can (the cut that follows the reserve card by card): the plain search finds no
    win from any of them that it finishes."""
    # Run from source: a compiled model's methods cannot be replaced.
    model = source("solver_canfield").CanfieldModel(new_game(CF, seed))
    # The search as it was before the piles' test (``runs``), which cuts most of these
    # positions sooner: the chained check alone is what this test compares.
    model.runs_only = False
    found: list[State] = []
    expand = model.expand

    def recording(state: State) -> list[Child]:
        piles, heights, rc, seq, p, checked = state
        if checked and rc and 0 < _reserve_leaves(piles, heights, model.reserve[:rc], seq, p) < rc:
            found.append(state)
        return expand(state)

    model.expand = recording  # type: ignore[method-assign]
    search_model(model, 2_000, None)
    assert no_plain_win(model, found[:8]) >= 4


class DepthFirst:
    """A model without a priority, so that the search is depth-first alone."""

    def __init__(self, model: CanfieldModel) -> None:
        self.model = model
        self.root = model.root
        self.root_actions = model.root_actions
        self.key = model.key
        self.table = model.table
        self.won = model.won
        self.expand = model.expand


@pytest.mark.parametrize("dives", [None, (1, 1), (5, 3), (1_000, 10)])
def test_the_search_with_dives_is_as_exhaustive_as_depth_first(
    dives: tuple[int, int] | None,
) -> None:
    """Best first with dives of any length decides what depth first decides: no win on the
    constrained deals that have none, and a win that replays on those that have one."""
    rng = random.Random(7)
    lost = won = 0
    cases = [
        (seed, keep, random.Random(seed) if shuffled else None)
        for seed, keep, shuffled in CANFIELD_LOST
    ]
    cases += [(seed, small_keep(CF, rng), None) for seed in range(12)]
    for seed, keep, shuffle in cases:
        game = constrained(CF, seed, keep, shuffle)
        model = CanfieldModel(game)
        if dives is not None:
            model.dives = dives
        actions, _, exhausted = search_model(model, 50_000, None)
        plain, _, plain_exhausted = search_model(DepthFirst(CanfieldModel(game)), 50_000, None)
        assert exhausted == plain_exhausted and (actions is None) == (plain is None), seed
        if actions is not None:
            certificate(game, actions)  # raises unless the line wins
            won += 1
        else:
            lost += exhausted
    assert lost >= 5 and won >= 5


# Canfield where the reserve's top card JS can leave only onto a red Queen, and both are
# their foundations' top cards: one must be brought down onto KS or KC first. No pile can
# empty: QS and QC cover the red Kings and go nowhere else, and 10S and JC, which JS, QS
# and QC need to go home, are under JS. The state with QH banked stands for the position
# with QH on KS, so the search needs the combined move "QH onto KS, then JS onto QH" (or
# the same with QD or KC) to win.
BRING_DOWN = {
    "foundations": [
        suit_run("C", 1, 10),
        suit_run("D", 1, 12),
        suit_run("H", 1, 12),
        suit_run("S", 1, 9),
    ],
    "tableau": ["KH QS", "KD QC", "KS", "KC"],
    "reserve": "JC 10S JS",
}


def test_a_card_put_on_a_foundation_card_brought_down_wins_by_both_searches() -> None:
    game = build(CF, **BRING_DOWN)  # type: ignore[arg-type]
    assert plain_search(game, max_positions=20_000) is True
    outcome = solve_position(game, budget_s=None, max_nodes=20_000)
    assert outcome.verdict is Verdict.WINNABLE and outcome.moves is not None
    texts = [format_move(m) for m in outcome.moves]
    for move in outcome.moves:
        game.apply(move)
    assert game.status is Status.WON
    assert texts[0].startswith("f"), texts  # a red Queen brought down first


def test_a_card_its_foundation_takes_on_a_card_it_fits_is_banked_in_the_state() -> None:
    # QH on KS with hearts at J, and QH banked, are one state of the search.
    on_king = {
        **BRING_DOWN,
        "foundations": [
            suit_run("C", 1, 10),
            suit_run("D", 1, 12),
            suit_run("H", 1, 11),
            suit_run("S", 1, 9),
        ],
        "tableau": ["KH QS", "KD QC", "KS QH", "KC"],
    }
    game = build(CF, **on_king)  # type: ignore[arg-type]
    model, other = CanfieldModel(game), CanfieldModel(build(CF, **BRING_DOWN))  # type: ignore[arg-type]
    assert model.key(model.root) == other.key(other.root)
    assert model.root_actions == ((parse_card("QH"), 1, -2),)
    assert plain_search(game, max_positions=20_000) is True
    assert solve_position(game, budget_s=None, max_nodes=20_000).verdict is Verdict.WINNABLE


def bits(cards: str) -> int:
    return sum(1 << parse_card(c) for c in cards.split())


def test_the_piles_hold_the_cards_that_must_be_on_them_only_as_runs() -> None:
    """4D, just out of the reserve and on no pile's bottom, needs a run from a bottom card
    of its class (a red card of even rank, or a black one of odd rank) above it: only QD's,
    through a red 8."""
    bottoms = bits("QD 7H 4H 3C")
    top = parse_card("4D")
    must = bits("QD 4D")
    assert _packs(must, bottoms, 0, bits("8H"), top)
    assert not _packs(must, bottoms, 0, bits("8H 8D"), top)
    # 4D may have filled a pile: it may be a bottom card itself, in 3C's place.
    assert _packs(must, bits("QD 7H 4H"), bits("3C 4D"), bits("8H 8D"), top)
    # 4S, of the other class, goes in 7H's run; 6D and 6H both need a run of QD's class
    # at rank 6, and only QD's goes that high.
    assert _packs(must | bits("4S"), bottoms, 0, 0, top)
    assert not _packs(bits("QD 6D 6H 4D"), bottoms, 0, 0, top)
    # a King that must be on the piles is a bottom card
    assert not _packs(must | bits("KS"), bottoms, 0, 0, top)
    assert _packs(must | bits("KS"), bits("QD 7H 4H"), bits("3C KS"), 0, top)


@pytest.mark.parametrize("seed", [2, 7])
def test_the_piles_test_agrees_with_the_plain_search(seed: int) -> None:
    """Positions of real deals that only the piles' test cuts (the chained check alone lets
    every reserve card leave): the plain search finds no win from any that it finishes."""
    model = source("solver_canfield").CanfieldModel(new_game(CF, seed))  # patched: source
    found: list[State] = []
    expand = model.expand

    def recording(state: State) -> list[Child]:
        piles, heights, rc, seq, p, checked = state
        if checked and rc:
            reserve = model.reserve[:rc]
            cut = _reserve_leaves(piles, heights, reserve, seq, p, True) < rc
            if cut and _reserve_leaves(piles, heights, reserve, seq, p) == rc:
                found.append(state)
        return expand(state)

    model.expand = recording  # type: ignore[method-assign]
    search_model(model, 2_000, None)
    assert no_plain_win(model, found[:6]) >= 3


def test_a_deal_whose_piles_cannot_hold_the_reserve_is_no_win_at_the_start() -> None:
    """A real deal (of the bench's sample) that the chained check lets through at the start
    but the piles' test does not: the search stops there."""
    game = new_game(CF, 5555059882594120888)
    model = CanfieldModel(game)
    piles, found, rc, seq, p, _ = model.root
    reserve = model.reserve[:rc]
    assert _reserve_leaves(piles, found, reserve, seq, p) == rc
    assert _reserve_leaves(piles, found, reserve, seq, p, True, True) < rc
    outcome = solve_position(game, budget_s=None, max_nodes=5_000)
    assert outcome.verdict is Verdict.NOT_WINNABLE and outcome.nodes == 1
