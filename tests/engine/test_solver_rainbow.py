"""Rainbow Canfield's solver model: its probe for a win, and its cuts, against the engine
and the plain search (``solrace.engine.solver_plain``)."""

from __future__ import annotations

import pytest
from positions import RAINBOW_STUCK, build

from solrace.engine import Status, new_game
from solrace.engine.solver import Verdict, certificate, solve_position
from solrace.engine.solver_plain import plain_search
from solrace.engine.solver_rainbow import RainbowModel

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
