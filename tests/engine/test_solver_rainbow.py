"""Rainbow Canfield's solver model: its probe for a win, and its cuts, against the engine
and the plain search (``solrace.engine.solver_plain``)."""

from __future__ import annotations

import pytest

from solrace.engine import Status, new_game
from solrace.engine.solver import Verdict, certificate, solve_position
from solrace.engine.solver_rainbow import RainbowModel

RC = "rainbow-canfield"


@pytest.mark.parametrize("seed", [10, 19, 29, 32, 34, 37])
def test_the_probe_finds_wins_that_replay(seed: int) -> None:
    game = new_game(RC, seed)
    line, nodes = RainbowModel(game).probe(3_000, None)
    assert line is not None and nodes <= 3_000
    moves = certificate(game, line)  # raises unless the engine's moves win
    work = new_game(RC, seed)
    for move in moves:
        work.apply(move)
    assert work.status is Status.WON


def test_the_probe_stops_at_its_share_and_the_search_goes_on() -> None:
    game = new_game(RC, 0)
    line, nodes = RainbowModel(game).probe(40, None)
    assert line is None and nodes == 40
    outcome = solve_position(game, budget_s=None, max_nodes=200)
    assert outcome.verdict is not Verdict.NOT_WINNABLE
    assert outcome.nodes <= 200
