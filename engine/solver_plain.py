"""A plain exhaustive search over the engine's own positions, to check the solver against.

No model, no pruning, no safe moves: from the position given, it tries every move that
:meth:`Game.legal_moves` lists (draws and redeals included), on the engine's own game,
and keeps every position it has reached (:meth:`Game.position`, which holds every pile
and the waste's fan) so as to try each once. It is slow and only finishes on small or
constrained positions; the tests use it where it does, to check the solver's "no win".
Foundation moves are the engine's "to whichever foundation takes it" form (ALL-6): naming
another empty foundation for an Ace gives the same position up to the foundations' order.
"""

from __future__ import annotations

import copy

from .game import Game
from .moves import UNDO

__all__ = ["plain_search"]


def plain_search(game: Game, *, max_positions: int = 100_000) -> bool | None:
    """Whether a win is reachable from ``game``'s position (left untouched).

    True: some line of legal moves wins; False: none does (every reachable position was
    tried); None: more than ``max_positions`` positions were reached first.
    """
    work = copy.deepcopy(game)
    work.undo_allowed = True
    if work.banked == 52:
        return True
    seen = {work.position()}
    stack = [work.legal_moves()[::-1]]  # popped from the end: the engine's order
    while stack:
        moves = stack[-1]
        if not moves:
            stack.pop()
            if stack:
                work.apply(UNDO)
            continue
        work.apply(moves.pop())
        if work.banked == 52:
            return True
        position = work.position()
        if position in seen:
            work.apply(UNDO)
            continue
        if len(seen) >= max_positions:
            return None
        seen.add(position)
        if len(work.log) > 100_000:
            work.log.clear()
        stack.append(work.legal_moves()[::-1])
    return False
