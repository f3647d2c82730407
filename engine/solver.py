"""A full-information solver: a winning move list for a deal, found by searching moves.

The solver looks at every card, the face-down reserve and stock included, so it is a
tool for fixtures, tests and analysis, never something a player in a race may use.

A search walks one :class:`Game`, going from one position to the next by undoing moves up
to their common ancestor and applying moves down from it. It expands the best-scoring
position seen (by cards banked, and cards left in the reserve and, where there is no
redeal, in the waste), the deepest first among equal scores, so that on a plateau it is a
depth-first search in the move generator's order. Several weightings are tried in turn,
the first being all zero (a plain depth-first search), because each wins deals the others
miss: in Rainbow Canfield an early mistake, such as cards buried in the waste with no
redeal, is seldom undone within any useful budget.

Draws and redeals are folded into the waste play they lead to ("draw until the card is on
top, then play it"): they touch nothing but the stock and the waste, so any winning line
can be reordered that way, and the search never branches on a draw alone. Positions
already seen are kept in a transposition table under a canonical key: the tableau piles
as a multiset (their order does not matter to the rules), the foundation tops, and the
reserve and waste sizes (the stock and waste cards always keep the deal's order, so their
sizes fix them).
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from .cards import RANK, RED, SUIT
from .game import Game, Status
from .moves import DRAW, REDEAL, UNDO, Move, MoveKind, PileKind
from .registry import new_game

__all__ = ["DEFAULT_MAX_NODES", "SearchResult", "search", "solve", "solve_game"]

DEFAULT_MAX_NODES = 100_000

T, F, R, W = PileKind.TABLEAU, PileKind.FOUNDATION, PileKind.RESERVE, PileKind.WASTE

# Variants whose tableau builds down regardless of suit, wrapping from Ace to King.
_ANY_SUIT = frozenset({"rainbow-canfield"})
# Undo appends to the game's log; the solver clears that log past this length.
_LOG_LIMIT = 100_000

# The searches tried in turn, each with an equal share of the node budget, as weights of
# a position's score: per card banked, per card in the reserve, and per card in the waste
# (counted only where there is no redeal, so that the waste can only be dug out). All
# zero makes a plain depth-first search; each weighting wins deals that the others miss.
_PROFILES: tuple[tuple[int, int, int], ...] = ((0, 0, 0), (10, 2, 3), (10, 3, 5), (10, 4, 8))

_Macro = tuple[Move, ...]

# Move ordering, lower first: it settles ties between positions that score the same.
_TO_FOUNDATION = 0
_FROM_RESERVE = 1
_EMPTIES_PILE = 2
_WASTE_TO_TABLEAU = 3
_DRAWN = 4
_TABLEAU_TO_TABLEAU = 5
_FROM_FOUNDATION = 6


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What a search found: the winning moves or None, the positions it expanded, and
    whether it ran out of positions (then no win exists among the moves it tries)."""

    moves: list[Move] | None
    nodes: int
    exhausted: bool


@dataclass(frozen=True, slots=True, eq=False)
class _Node:
    parent: _Node | None
    macro: _Macro
    depth: int


def solve(variant: str, seed: int, *, max_nodes: int = DEFAULT_MAX_NODES) -> list[Move] | None:
    """Return moves that win the deal of ``variant`` from ``seed``, or None if none is found."""
    return search(new_game(variant, seed), max_nodes=max_nodes).moves


def solve_game(game: Game, *, max_nodes: int = DEFAULT_MAX_NODES) -> list[Move] | None:
    """Return moves that win ``game`` from its current position (left untouched), or None."""
    return search(game, max_nodes=max_nodes).moves


def search(game: Game, *, max_nodes: int = DEFAULT_MAX_NODES) -> SearchResult:
    """Search for a win from ``game``'s position (left untouched), expanding at most ``max_nodes``."""
    if game.banked == 52:
        return SearchResult([], 0, False)
    if game.status is Status.RESIGNED:
        return SearchResult(None, 0, True)
    work = copy.deepcopy(game)
    work.undo_allowed = True
    work.log.clear()
    share = max(1, max_nodes // len(_PROFILES))
    spent = 0
    for weights in _PROFILES:
        result = _best_first(work, weights, min(share, max_nodes - spent))
        spent += result.nodes
        if result.moves is not None or result.exhausted:
            return SearchResult(result.moves, spent, result.exhausted)
    return SearchResult(None, spent, False)


def _best_first(work: Game, weights: tuple[int, int, int], max_nodes: int) -> SearchResult:
    """One search: expand the best-scoring position seen, the deepest first among equals."""
    banked_weight, reserve_weight, waste_weight = weights
    if work.draw_count > 1:
        waste_weight = 0
    root = _Node(None, (), 0)
    seen = {_key(work)}
    frontier: list[tuple[int, int, int, _Node]] = [(0, 0, 0, root)]
    current = root
    pushed = expanded = 0
    try:
        while frontier:
            if expanded >= max_nodes:
                return SearchResult(None, expanded, False)
            node = heapq.heappop(frontier)[3]
            _walk(work, current, node)
            current = node
            expanded += 1
            last = node.macro[-1] if node.macro else None
            for macro in _children(work, last):
                for move in macro:
                    work.apply(move)
                if work.banked == 52:
                    return SearchResult([*_path(node), *macro], expanded, False)
                key = _key(work)
                if key not in seen:
                    seen.add(key)
                    pushed += 1
                    score = (
                        banked_weight * work.banked
                        - reserve_weight * len(work.reserve)
                        - waste_weight * len(work.waste)
                    )
                    child = _Node(node, macro, node.depth + 1)
                    heapq.heappush(frontier, (-score, -child.depth, pushed, child))
                _undo(work, len(macro))
        return SearchResult(None, expanded, True)
    finally:
        if work.banked < 52:
            _walk(work, current, root)


def _undo(game: Game, count: int) -> None:
    for _ in range(count):
        game.apply(UNDO)
    if len(game.log) > _LOG_LIMIT:
        game.log.clear()


def _walk(game: Game, here: _Node, there: _Node) -> None:
    """Take ``game`` from the position of node ``here`` to that of node ``there``."""
    down: list[_Macro] = []
    up: _Node | None = here
    target: _Node | None = there
    while up is not target:
        assert up is not None and target is not None
        if up.depth >= target.depth:
            _undo(game, len(up.macro))
            up = up.parent
        else:
            down.append(target.macro)
            target = target.parent
    for macro in reversed(down):
        for move in macro:
            game.apply(move)


def _path(node: _Node) -> list[Move]:
    macros: list[_Macro] = []
    at: _Node | None = node
    while at is not None:
        macros.append(at.macro)
        at = at.parent
    return [move for macro in reversed(macros) for move in macro]


def _key(game: Game) -> bytes:
    piles = sorted(bytes(pile) for pile in game.tableau)
    tops = sorted(f[-1] if f else 255 for f in game.foundations)
    return b"\xfe".join(piles) + b"\xff" + bytes(tops) + bytes((len(game.reserve), len(game.waste)))


def _fits_tableau(game: Game, card: int, onto: int) -> bool:
    if game.variant in _ANY_SUIT:
        return RANK[card] % 13 + 1 == RANK[onto]
    return RANK[card] + 1 == RANK[onto] and RED[card] != RED[onto]


def _fits_foundation(game: Game, card: int) -> bool:
    rank, suit = RANK[card], SUIT[card]
    for f in game.foundations:
        if not f:
            if rank == game.base_rank:
                return True
        elif SUIT[f[-1]] == suit:
            return rank == game.next_rank(RANK[f[-1]])
    return False


def _banked_count(game: Game, suit: int) -> int:
    for f in game.foundations:
        if f and SUIT[f[-1]] == suit:
            return len(f)
    return 0


def _safe(game: Game, card: int) -> bool:
    """Whether banking ``card`` can never hurt: no card left off the foundations fits on it."""
    if game.variant in _ANY_SUIT:
        relative = (RANK[card] - game.base_rank) % 13
        return relative > 0 and all(_banked_count(game, s) >= relative for s in range(4))
    rank = RANK[card]
    if rank <= 2:
        return True
    opposite = (0, 3) if RED[card] else (1, 2)
    return all(_banked_count(game, s) >= rank - 1 for s in opposite)


def _stock_cycle(game: Game) -> list[tuple[_Macro, int]]:
    """Each waste top that draws (and redeals) alone reach, with the shortest way there."""
    sequence = game.waste + game.stock[::-1]
    total, start = len(sequence), len(game.waste)
    redeals = game.draw_count > 1
    reached: list[tuple[_Macro, int]] = []
    steps: list[Move] = []
    at = start
    visited = {start}
    while total:
        if at < total:
            at = min(at + game.draw_count, total)
            steps.append(DRAW)
        elif redeals:
            at = 0
            steps.append(REDEAL)
        else:
            break
        if at in visited:
            break
        visited.add(at)
        if at:
            reached.append((tuple(steps), sequence[at - 1]))
    return reached


def _source_pile(game: Game, kind: PileKind, index: int) -> list[int]:
    if kind is T:
        return game.tableau[index]
    if kind is F:
        return game.foundations[index]
    return game.reserve if kind is R else game.waste


def _reverses(move: Move, last: Move | None) -> bool:
    return (
        last is not None
        and last.kind is MoveKind.MOVE
        and move.src is last.dst
        and move.dst is last.src
        and move.src_index == last.dst_index
        and move.dst_index == last.src_index
        and move.count == last.count
    )


def _lowest_by_suit(game: Game) -> list[dict[int, int]]:
    """Per tableau pile, each suit's lowest rank counted from the base (rainbow only, else [])."""
    if game.variant not in _ANY_SUIT:
        return []
    base = game.base_rank
    lowest: list[dict[int, int]] = []
    for pile in game.tableau:
        low: dict[int, int] = {}
        for card in pile:
            relative = (RANK[card] - base) % 13
            if relative < low.get(SUIT[card], 13):
                low[SUIT[card]] = relative
        lowest.append(low)
    return lowest


def _buries(game: Game, cards: Sequence[int], low: dict[int, int]) -> bool:
    """Whether putting ``cards`` on a pile would cover a lower card of their suit for good.

    In Rainbow Canfield a card leaves the tableau only to a foundation or with its whole
    pile, so the cards of one pile reach the foundations top first: a card above a lower
    card of its suit can never be banked.
    """
    base = game.base_rank
    return any((RANK[c] - base) % 13 > low.get(SUIT[c], 13) for c in cards)


def _children(game: Game, last: Move | None) -> list[_Macro]:
    """The moves worth trying from here, best first (a safe foundation move alone)."""
    ranked: list[tuple[int, int, _Macro]] = []
    tableau = game.tableau
    empty_targets: set[tuple[PileKind | None, int, int]] = set()
    lowest = _lowest_by_suit(game)
    for move in game.legal_moves():
        if move.kind is not MoveKind.MOVE or _reverses(move, last):
            continue
        src, dst = move.src, move.dst
        assert src is not None
        if dst is F:
            card = _source_pile(game, src, move.src_index)[-1]
            if (src is not W or game.draw_count == 1) and _safe(game, card):
                return [(move,)]
            ranked.append((_TO_FOUNDATION, 0 if src is R else 1, (move,)))
            continue
        assert move.dst_index is not None
        if lowest and _buries(
            game, _source_pile(game, src, move.src_index)[-move.count :], lowest[move.dst_index]
        ):
            continue
        if not tableau[move.dst_index]:
            # Empty piles are interchangeable: try one of them only.
            if (src, move.src_index, move.count) in empty_targets:
                continue
            if src is T and move.count == len(tableau[move.src_index]):
                continue  # a whole pile into an empty one changes nothing
            empty_targets.add((src, move.src_index, move.count))
        if src is R:
            ranked.append((_FROM_RESERVE, 0, (move,)))
        elif src is W:
            ranked.append((_WASTE_TO_TABLEAU, 0, (move,)))
        elif src is F:
            ranked.append((_FROM_FOUNDATION, 0, (move,)))
        elif move.count == len(tableau[move.src_index]):
            ranked.append((_EMPTIES_PILE, 0, (move,)))
        else:
            ranked.append((_TABLEAU_TO_TABLEAU, -move.count, (move,)))
    if game.has_stock:
        for steps, card in _stock_cycle(game):
            if _fits_foundation(game, card):
                ranked.append((_DRAWN, 2 * len(steps), (*steps, Move.transfer(W, 0, F, None))))
            empty_done = False
            for j, target in enumerate(tableau):
                if target:
                    if not _fits_tableau(game, card, target[-1]):
                        continue
                    if lowest and _buries(game, (card,), lowest[j]):
                        continue
                elif game.reserve or empty_done:
                    continue
                else:
                    empty_done = True
                ranked.append((_DRAWN, 2 * len(steps) + 1, (*steps, Move.transfer(W, 0, T, j))))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [macro for _, _, macro in ranked]
