"""Rainbow Canfield's solver model: its probe for a win, and its cuts, against the engine
and the plain search (``solrace.engine.solver_plain``)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from positions import RAINBOW_STUCK, build

from solrace.engine import Game, Status, new_game
from solrace.engine.native import source
from solrace.engine.solver import Verdict, certificate, solve_position
from solrace.engine.solver_plain import plain_search
from solrace.engine.solver_rainbow import BEST_FIRST_SHARE, Child, RainbowModel, State

RC = "rainbow-canfield"


@pytest.mark.parametrize("seed", [10, 19, 29, 32, 34, 37])
def test_the_best_first_search_finds_wins_that_replay(seed: int) -> None:
    game = new_game(RC, seed)
    line, nodes, exhausted = RainbowModel(game).search(3_000, None)
    assert line is not None and nodes <= 3_000 and not exhausted
    moves = certificate(game, line)  # raises unless the engine's moves win
    work = new_game(RC, seed)
    for move in moves:
        work.apply(move)
    assert work.status is Status.WON


def test_the_search_stops_at_its_budget_of_states() -> None:
    game = new_game(RC, 0)
    line, nodes, exhausted = RainbowModel(game).search(40, None)
    assert line is None and nodes == 40 and not exhausted
    outcome = solve_position(game, budget_s=None, max_nodes=40)
    assert outcome.verdict is Verdict.UNKNOWN and outcome.nodes == 40


def test_the_search_runs_out_of_positions_only_where_the_plain_search_finds_no_win() -> None:
    game = build(RC, **RAINBOW_STUCK)  # type: ignore[arg-type]
    assert plain_search(game, max_positions=5_000) is False
    line, nodes, exhausted = RainbowModel(game).search(5_000, None)
    assert line is None and exhausted and nodes < 5_000
    # The same search on a deal it wins does not call it exhausted on the way.
    line, _, exhausted = RainbowModel(new_game(RC, 10)).search(5_000, None)
    assert line is not None and not exhausted


# Lead rank Ace; hearts and spades banked. KC lies on AD and KD on AC: each of clubs and
# diamonds must be finished before the other starts. No pile holds two cards of a suit out
# of order (the per-pile test), but the piles together order the banking in a cycle.
RAINBOW_CYCLE = {
    "base_rank": 1,
    "foundations": [
        "AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH",
        "AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS",
    ],
    "tableau": [
        "AD KC",
        "AC KD",
        "QC JD 10C 9D 8C 7D 6C 5D 4C 3D 2C",
        "QD JC 10D 9C 8D 7C 6D 5C 4D 3C 2D",
    ],
}


def test_a_cycle_of_wraps_between_piles_is_cut_where_the_plain_search_finds_no_win() -> None:
    game = build(RC, **RAINBOW_CYCLE)  # type: ignore[arg-type]
    assert plain_search(game, max_positions=5_000) is False
    model = RainbowModel(game)
    piles = model.root[0]
    assert not any(model._dead(p) for p in piles)  # the per-pile test does not see it
    assert model._wrapped(piles) and model._cyclic(piles)
    line, nodes, exhausted = model.search(100, None)
    assert line is None and exhausted and nodes == 1  # every child of the root is cut
    # KD on AC alone still closes a cycle through the third pile: every diamond before AC,
    # AC before 2C, and 2C (on 3D) before 3D.
    assert model._cyclic((b"", *piles[1:]))
    # So does KC on AD with JD on QC: JD before QC, every club before AD.
    assert model._cyclic((piles[0], b"", piles[2], b""))
    # A wrap alone, or the interleaved piles without a wrap, order the suits without one.
    assert not model._cyclic((piles[0], b"", b"", b""))
    assert not model._cyclic((b"", b"", piles[2], piles[3]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_key_leaves_out_only_a_waste_the_rest_of_the_state_fixes(seed: int) -> None:
    # Run from source: a compiled model's methods cannot be replaced.
    model = source("solver_rainbow").RainbowModel(new_game(RC, seed))
    model.native = None  # the search in Python, which calls the patched expand
    wastes: dict[bytes, bytes] = {}
    expand = model.expand

    def checked(state: State) -> list[Child]:
        children = expand(state)
        for _, child, key in children:
            assert wastes.setdefault(key, child[4]) == child[4]
            assert not model._cyclic(child[0])
        return children

    model.expand = checked  # type: ignore[method-assign]
    model.search(2_000, None)
    assert len(wastes) > 1_000


def test_the_positions_a_search_cuts_as_cyclic_are_lost_for_the_plain_search() -> None:
    """The cycle test on a real deal's positions, late enough for the plain search."""
    game = new_game(RC, 15063802959729363297)
    model = source("solver_rainbow").RainbowModel(game)  # patched below: from source
    model.native = None  # the search in Python, which calls the patched methods
    cyclic = model._cyclic
    expand = model.expand
    at: list[State] = []
    cuts: list[tuple[State, tuple[bytes, ...]]] = []

    def recorded(piles: tuple[bytes, ...]) -> bool:
        if cyclic(piles):
            cuts.append((at[-1], piles))
            return True
        return False

    def expanding(state: State) -> list[Child]:
        at.append(state)
        return expand(state)

    model._cyclic = recorded  # type: ignore[method-assign]
    model.expand = expanding  # type: ignore[method-assign]
    model.search(6_000, None)
    lost = 0
    for (piles, found, rc, sp, waste), moved in cuts:
        new = set(b"".join(moved)) - set(b"".join(piles))
        if new:  # a card came to the tableau: from the reserve, the waste or the stock
            (card,) = new
            if rc and model.reserve[rc - 1] == card:
                rc -= 1
            elif waste and waste[-1] == card:
                waste = waste[:-1]
            else:
                q = model.stock.index(card, sp)
                waste, sp = waste + model.stock[sp:q], q + 1
        if sp < 30:
            continue
        work = _game_at(game, model, (moved, found, rc, sp, waste))
        verdict = plain_search(work, max_positions=2_000)
        assert verdict is not True
        lost += verdict is False
        if lost == 20:
            break
    assert lost == 20


def _game_at(game: Game, model: RainbowModel, state: State) -> Game:
    """The engine's game of ``game``'s deal at the model's ``state``."""
    piles, found, rc, sp, waste = state
    work = copy.deepcopy(game)
    work.tableau = [list(p) for p in piles]
    work.foundations = [[model.at[s * 13 + r] for r in range(n)] for s, n in enumerate(found)]
    work.foundations.sort(key=len, reverse=True)
    work.reserve = list(model.reserve[:rc])
    work.stock = list(reversed(model.stock[sp:]))
    work.waste, work.fan = list(waste), min(len(waste), 1)
    return work


@pytest.mark.parametrize("in_c", [True, False])
def test_the_search_with_whole_pile_moves_only_before_a_fill_agrees_with_the_plain_search(
    in_c: bool,
) -> None:
    """Late positions of real deals, solved by the model (whose whole-pile moves come only
    with a fill of the pile they empty), in C and in Python, and by the plain search of
    every engine move."""
    agreed = {True: 0, False: 0}
    for seed in (10, 19, 15063802959729363297):
        game = new_game(RC, seed)
        model = source("solver_rainbow").RainbowModel(game)  # patched below: from source
        model.native = None  # the search in Python, which calls the patched expand
        expand = model.expand
        late: list[State] = []

        def expanding(
            state: State, expand: Callable[[State], list[Child]] = expand, late: list[State] = late
        ) -> list[Child]:
            if state[3] >= 22 and all(state[0]):
                late.append(state)
            return expand(state)

        model.expand = expanding  # type: ignore[method-assign]
        model.search(4_000, None)
        for state in late[:: max(1, len(late) // 40)][:40]:
            work = _game_at(game, model, state)
            plain = plain_search(work, max_positions=3_000)
            if plain is None:
                continue
            solver = RainbowModel(work)
            if not in_c:
                solver.native = None
            elif solver.native is None:
                pytest.skip("this build made no C search (no compiler, or SOLRACE_PURE=1)")
            line, _, exhausted = solver.search(20_000, None)
            assert (line is not None, exhausted) == (plain, not plain), (seed, state)
            if line is not None:
                certificate(work, line)  # raises unless the engine's moves win
            agreed[plain] += 1
    assert agreed[True] >= 5 and agreed[False] >= 5, agreed


def _both(game: Game, max_nodes: int) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The search's (line, states, exhausted) in C and in Python, on a budget of states."""
    in_c = RainbowModel(game)
    if in_c.native is None:
        pytest.skip("this build made no C search (no compiler, or SOLRACE_PURE=1)")
    in_python = RainbowModel(game)
    in_python.native = None
    return in_c.search(max_nodes, None), in_python.search(max_nodes, None)


@pytest.mark.parametrize(
    ("seed", "max_nodes", "verdict"),
    [
        (19, 3_000, "won best first"),
        (12193683034645059119, 2_000, "won depth first"),  # after the switch
        (14104536160193848072, 6_000, "won depth first"),
        (9555816473167389006, 60_000, "lost"),  # the queue run out depth first
        (5916093768886787885, 20_000, "unknown"),  # both phases, to the budget
        (0, 5_000, "unknown"),
    ],
)
def test_the_search_in_c_is_the_python_search_state_for_state(
    seed: int, max_nodes: int, verdict: str
) -> None:
    """The same moves in the same order, the same line, the same count of states expanded
    and the same verdict, best first and then depth first (BEST_FIRST_SHARE)."""
    game = new_game(RC, seed)
    in_c, in_python = _both(game, max_nodes)
    assert in_c == in_python
    line, nodes, exhausted = in_c
    switch = max_nodes * BEST_FIRST_SHARE
    assert {
        "won best first": line is not None and nodes < switch,
        "won depth first": line is not None and nodes > switch,
        "lost": exhausted and nodes > switch,
        "unknown": line is None and nodes == max_nodes,
    }[verdict]
    if line is not None:
        assert isinstance(line, list)
        certificate(game, line)  # raises unless the engine's moves win


def test_the_search_in_c_matches_on_late_positions_too() -> None:
    """Positions with a waste, an empty pile or an empty reserve, from a real deal's search:
    the C search starts from each as the Python one does."""
    game = new_game(RC, 4373617050511323977)
    model = source("solver_rainbow").RainbowModel(game)
    model.native = None
    expand = model.expand
    states: list[State] = []

    def expanding(state: State) -> list[Child]:
        states.append(state)
        return expand(state)

    model.expand = expanding  # type: ignore[method-assign]
    model.search(3_000, None)
    late = [s for s in states if s[4] and s[3] >= 20]
    kinds = {(not s[2], not all(s[0])) for s in late}
    assert len(late) > 100 and len(kinds) == 4, kinds
    for state in late[:: len(late) // 25]:
        in_c, in_python = _both(_game_at(game, model, state), 2_000)
        assert in_c == in_python, state


def test_the_search_in_c_ends_unknown_before_its_memory_passes_its_bound() -> None:
    model = RainbowModel(new_game(RC, 5916093768886787885))
    if model.native is None:
        pytest.skip("this build made no C search (no compiler, or SOLRACE_PURE=1)")
    piles, found, rc, sp, waste = model.root
    args = (bytes(model.rel), model.reserve, model.stock, piles, found, rc, sp, waste)
    bound = 8 << 20
    line, nodes, exhausted, held = model.native.search(*args, -1, -1.0, -1, -1.0, bound)
    assert line is None and not exhausted and 0 < held <= bound
    assert nodes > 10_000  # it searched until the bound, not stopped at once
    line, more, _, held = model.native.search(*args, -1, -1.0, -1, -1.0, 4 * bound)
    assert line is None and more > nodes and held <= 4 * bound
    # A state that is not one of the model's is refused plainly.
    with pytest.raises(ValueError, match="rel"):
        model.native.search(b"\x00" * 51, *args[1:], -1, -1.0, -1, -1.0, bound)
    with pytest.raises(ValueError, match="card"):
        model.native.search(args[0], model.reserve, b"\x40", *args[3:], -1, -1.0, -1, -1.0, bound)
    with pytest.raises(ValueError, match="state"):
        model.native.search(*args[:5], 99, sp, waste, -1, -1.0, -1, -1.0, bound)


def test_the_search_in_c_is_the_python_search_on_forty_more_deals() -> None:
    """Forty deals of a fixed sample, each at a budget of states that ends in either phase:
    the same line, count and verdict in C as in Python."""
    from solrace.engine.rng import SplitMix64

    rng = SplitMix64(20261205)
    verdicts = {"won": 0, "unknown": 0}
    for n in range(40):
        seed = rng.next_u64()
        max_nodes = (1_000, 5_000, 15_000)[n % 3]
        in_c, in_python = _both(new_game(RC, seed), max_nodes)
        assert in_c == in_python, seed
        verdicts["won" if in_c[0] is not None else "unknown"] += in_c[2] is False
    assert verdicts["won"] >= 3 and verdicts["unknown"] >= 20, verdicts
