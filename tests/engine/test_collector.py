"""A game in play keeps nothing per move for CPython's cyclic collector to scan.

A server holds every running race's games for as long as the races last; an object that
stays tracked for each move is scanned by every middle and full collection, which every
move of the node waits behind (each move's undo record did, while it held enum members).
"""

from __future__ import annotations

import enum
import gc
import random
import types

import pytest

from solrace.engine import VARIANTS, Move, format_move, new_game, parse_move


def tracked_reachable(root: object, shared: set[int]) -> int:
    """Objects the collector tracks that ``root`` reaches, not counting classes, modules,
    functions, enum members and the ``shared`` objects (a server's cached moves)."""
    seen: set[int] = set()
    stack = [root]
    count = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or id(obj) in shared:
            continue
        seen.add(id(obj))
        if isinstance(obj, type | types.ModuleType | types.FunctionType | enum.Enum):
            continue
        if not gc.is_tracked(obj):
            continue
        count += 1
        stack.extend(gc.get_referents(obj))
    return count


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_games_tracked_objects_do_not_grow_with_its_moves(variant: str) -> None:
    cache: dict[str, Move] = {}  # as the server reads each move's text once

    def shared(move: Move) -> Move:
        text = format_move(move)
        return cache.setdefault(text, parse_move(text))

    rng = random.Random(3)
    best: tuple[int, int, int] | None = None  # moves apart, tracked then, tracked after
    for seed in range(200):
        game = new_game(variant, seed)
        for _ in range(5):
            if legal := game.legal_moves():
                game.apply(shared(rng.choice(legal)))
        gc.collect()
        first = tracked_reachable(game, {id(m) for m in cache.values()})
        played = 0
        while played < 150 and (legal := game.legal_moves()):
            game.apply(shared(rng.choice(legal)))
            played += 1
        gc.collect()
        last = tracked_reachable(game, {id(m) for m in cache.values()})
        if best is None or played > best[0]:
            best = (played, first, last)
        if played >= 60:
            break
    assert best is not None and best[0] >= 40, f"no deal of the sample lasted: {best}"
    played, first, last = best
    assert last - first <= 5, (played, first, last)  # not one a move


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_move_leaves_no_new_object_for_the_collector_to_count(variant: str) -> None:
    """What a move keeps (its undo record) is no tracked object: CPython starts a young
    collection once tracked objects made outnumber those freed by its threshold, and on a
    busy server one kept a move made those come every few seconds, each scanning every
    room's current records (docs/benchmarks.md, 5 December, capacity)."""
    cache: dict[str, Move] = {}
    rng = random.Random(5)
    kept = played = 0
    for seed in range(40):
        game = new_game(variant, seed)
        gc.collect()
        gc.disable()
        try:
            before = gc.get_count()[0]
            for _ in range(100):
                if not (legal := game.legal_moves()):
                    break
                text = format_move(rng.choice(legal))
                game.apply(cache.setdefault(text, parse_move(text)))
                played += 1
            kept += gc.get_count()[0] - before
        finally:
            gc.enable()
    assert played >= 1_000
    assert kept / played < 0.5, (kept, played)  # about 1.2 a move while records were tuples
