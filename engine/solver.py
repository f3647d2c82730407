"""A full-information solver: for a deal, a winning line, a proof that none exists, or unknown.

The solver looks at every card, the face-down reserve and stock included, so it is a
tool for certifying deals, fixtures, tests and analysis, never something a player in a
race may use.

Each game has a compact model of its own (``solver_canfield``, ``solver_rainbow``,
``solver_canister``): states as tuples of ``bytes`` and small ints, moves written out
for that game alone, a canonical key (the tableau piles as a multiset where the rules
treat them alike, foundations by suit), and safe moves to the foundations that are taken
alone, each proved in its model's docstring. A proof there shows that a safe move leaves a
position from which a win, if there was one, is at least one move shorter; that is what
makes the search below complete with them.

A model's moves may be shortcuts that stand for several of the engine's moves (draws
folded into the waste's moves, in Canfield and Rainbow Canfield); a win's length below
counts the model's moves. A model may also leave out moves that no winning line needs,
when every winning line has a form no longer without them (draws put off until the
card drawn is played, in Rainbow Canfield), and cut positions it proves lost. A model's
state may stand for a class of positions that all reach each other (Canfield's: the
positions that cards banked at once, each undone by one move, turn into it), when its
moves cover every move of the class, as its model proves; its shortest win is then the
least over the class.

The search is a depth-first search over the model's states with one table of the states
seen (a state is expanded once, however it was reached, so the cycles of the rules, such
as a card moved back and forth, end there). The table may also skip a state that one it
recorded dominates: one whose shortest win is no longer (Canfield's waste, in its model).
It tries moves best first. (A model may bring a search of its own: Rainbow
Canfield's expands its states best first by a score for part of its budget, then depth
first from each state it queued, with the same table, in C where the build made it; the
proof below holds for any order.) A model may instead give each state a ``priority`` and the
lengths of its ``dives``: the search then dives depth-first from the start for the first
length, puts each state it records but has not expanded when a dive ends on a heap, and
dives again, for the second length, from the heap's state of lowest priority (the latest
put there among equals); Canfield's does. It is exhaustive: if it runs out of states
without a win, no win exists (a "no win" verdict); the state graph of every game is
finite. Proof of completeness: every state recorded is expanded before the search ends
(in a dive, or once taken from the heap), and every successor of an expanded state is
recorded, or skipped for a state recorded, hence expanded, whose shortest win is no
longer. If a win were reachable from
the start, take, among the expanded states from which a win is reachable, one whose
shortest win is shortest; its first move leads to a state, after the safe moves, from
which a win is shorter still, and that state, or one expanded whose win is no longer,
was expanded: a contradiction unless it is won, and the search stops at the first won
state.

A winning line is turned back into the engine's moves by playing it on a copy of the
engine's game (:func:`certificate`), which must end ``won``: the engine stays the source
of truth. :func:`solve_deals` runs the solver in worker processes, one deal per task,
each with its own time budget, never on the caller's thread.
"""

from __future__ import annotations

import copy
import gc
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from .game import Game, Status
from .moves import DRAW, REDEAL, Move, MoveKind, PileKind
from .registry import new_game
from .solver_canfield import CanfieldModel
from .solver_canister import CanisterModel
from .solver_rainbow import RainbowModel
from .solver_search import Action, Model, search_model

__all__ = [
    "DEFAULT_BUDGET_S",
    "DEFAULT_MAX_NODES",
    "Outcome",
    "SearchResult",
    "Verdict",
    "certificate",
    "search",
    "solve",
    "solve_deal",
    "solve_deals",
    "solve_game",
    "solve_position",
]

DEFAULT_MAX_NODES: Final = 200_000
DEFAULT_BUDGET_S: Final = 1.0

T, F, R, W = PileKind.TABLEAU, PileKind.FOUNDATION, PileKind.RESERVE, PileKind.WASTE
TO_FOUNDATION: Final = -2
TO_EMPTY: Final = -1
DRAW_ACTION: Final = (-1, 0, 0)

MODELS: Final[dict[str, Callable[[Game], Model]]] = {
    "canfield": CanfieldModel,
    "rainbow-canfield": RainbowModel,
    "american-canister": CanisterModel,
    "british-canister": CanisterModel,
}


class Verdict(StrEnum):
    """The solver's answer for a position."""

    WINNABLE = "winnable"
    NOT_WINNABLE = "not_winnable"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A verdict, with the winning line (the certificate) when there is one.

    ``moves`` are engine moves that win from the position solved; ``nodes`` counts the
    states expanded; ``seconds`` is the CPU time spent (the process's own).
    """

    verdict: Verdict
    moves: list[Move] | None
    nodes: int
    seconds: float
    variant: str = ""
    seed: int = -1

    @property
    def decided(self) -> bool:
        return self.verdict is not Verdict.UNKNOWN


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What a search found: the winning moves or None, the states it expanded, and
    whether it ran out of states (then no win exists)."""

    moves: list[Move] | None
    nodes: int
    exhausted: bool


def _locate(game: Game, card: int) -> tuple[PileKind, int, int]:
    """Where ``card`` is: (pile kind, index, its depth from the top + 1), drawing if needed."""
    for i, pile in enumerate(game.tableau):
        if card in pile:
            return T, i, len(pile) - pile.index(card)
    if game.reserve and game.reserve[-1] == card:
        return R, 0, 1
    for i, f in enumerate(game.foundations):
        if f and f[-1] == card:
            return F, i, 1
    if card in game.waste or card in game.stock:
        for _ in range(2 * (len(game.waste) + len(game.stock)) + 2):
            if game.waste and game.waste[-1] == card:
                return W, 0, 1
            game.apply(DRAW if game.stock else REDEAL)
    raise ValueError(f"card {card} cannot be reached")


def certificate(game: Game, actions: Iterable[Action]) -> list[Move]:
    """The engine moves for a model's winning ``actions``, checked on a copy of ``game``.

    Raises ValueError unless the moves are legal and end with the game won.
    """
    work = copy.deepcopy(game)
    work.undo_allowed = False
    start = len(work.log)
    for card, count, target in actions:
        if (card, count, target) == DRAW_ACTION:
            work.apply(DRAW)
            continue
        src, si, depth = _locate(work, card)
        if src is T and depth != count:
            raise ValueError(f"card {card} is not at the bottom of {count} cards")
        if target == TO_FOUNDATION:
            work.apply(Move(MoveKind.MOVE, src, si, F, None, count))
            continue
        if target == TO_EMPTY:
            dst = next(j for j, pile in enumerate(work.tableau) if not pile)
        else:
            dst = next(j for j, pile in enumerate(work.tableau) if pile and pile[-1] == target)
        work.apply(Move(MoveKind.MOVE, src, si, T, dst, count))
    if work.status is not Status.WON:
        raise ValueError("the line does not end in a win")
    return work.log[start:]


def solve_position(
    game: Game, *, budget_s: float | None = DEFAULT_BUDGET_S, max_nodes: int | None = None
) -> Outcome:
    """Solve ``game`` from its current position (left untouched)."""
    began = time.process_time()
    if game.status is Status.WON:
        return Outcome(Verdict.WINNABLE, [], 0, 0.0, game.variant, game.seed)
    if game.status is Status.RESIGNED:
        return Outcome(Verdict.NOT_WINNABLE, None, 0, 0.0, game.variant, game.seed)
    # The cyclic collector stays off until the model, and what it keeps, is gone
    # (:func:`.solver_search.search_model`).
    collecting = gc.isenabled()
    gc.disable()
    try:
        model = MODELS[game.variant](game)
        actions, nodes, exhausted = search_model(model, max_nodes, budget_s)
        del model
    finally:
        if collecting:
            gc.enable()
    moves = None if actions is None else certificate(game, actions)
    if moves is not None:
        verdict = Verdict.WINNABLE
    else:
        verdict = Verdict.NOT_WINNABLE if exhausted else Verdict.UNKNOWN
    seconds = time.process_time() - began
    return Outcome(verdict, moves, nodes, seconds, game.variant, game.seed)


def solve_deal(
    variant: str,
    seed: int,
    *,
    budget_s: float | None = DEFAULT_BUDGET_S,
    max_nodes: int | None = None,
) -> Outcome:
    """Solve the deal of ``variant`` from ``seed`` with every card known."""
    return solve_position(new_game(variant, seed), budget_s=budget_s, max_nodes=max_nodes)


def _solve_task(task: tuple[str, int, float | None, int | None]) -> Outcome:
    variant, seed, budget_s, max_nodes = task
    return solve_deal(variant, seed, budget_s=budget_s, max_nodes=max_nodes)


def solve_deals(
    variant: str,
    seeds: Iterable[int],
    *,
    budget_s: float | None = DEFAULT_BUDGET_S,
    max_nodes: int | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
) -> Iterator[Outcome]:
    """Solve each seed's deal in worker processes; yield the outcomes in the seeds' order.

    Each deal gets ``budget_s`` seconds of its worker's CPU time. Pass ``executor`` to use
    a pool kept warm by the caller (a ``ProcessPoolExecutor``); otherwise one of
    ``workers`` processes (default: one per core) is made and shut down here. The search
    never runs on the calling thread, so an event loop may await these through
    ``loop.run_in_executor`` or iterate them in a thread.
    """
    tasks = [(variant, seed, budget_s, max_nodes) for seed in seeds]
    if executor is not None:
        yield from executor.map(_solve_task, tasks)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_solve_task, tasks)


# -- the older interface, kept for its callers ------------------------------------------


def search(game: Game, *, max_nodes: int = DEFAULT_MAX_NODES) -> SearchResult:
    """Search for a win from ``game``'s position (left untouched), expanding at most ``max_nodes``."""
    outcome = solve_position(game, budget_s=None, max_nodes=max_nodes)
    return SearchResult(outcome.moves, outcome.nodes, outcome.verdict is Verdict.NOT_WINNABLE)


def solve(variant: str, seed: int, *, max_nodes: int = DEFAULT_MAX_NODES) -> list[Move] | None:
    """Return moves that win the deal of ``variant`` from ``seed``, or None if none is found."""
    return search(new_game(variant, seed), max_nodes=max_nodes).moves


def solve_game(game: Game, *, max_nodes: int = DEFAULT_MAX_NODES) -> list[Move] | None:
    """Return moves that win ``game`` from its current position (left untouched), or None."""
    return search(game, max_nodes=max_nodes).moves
