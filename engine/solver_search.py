"""The search loop of :mod:`.solver`, apart so that it can be compiled (setup.py).

Its proof of completeness, and what a model must offer, are in :mod:`.solver`'s docstring.
This module and the games' models are compiled with mypyc where the package is built
with it; they run as plain Python where it is not (``solrace.engine.compiled()`` says
which).
"""

from __future__ import annotations

import gc
import heapq
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final, Protocol

__all__ = ["Action", "Model", "search_model"]

# The clock is read once per this many states.
_CLOCK_EVERY: Final = 64

Action = tuple[int, int, int]


class Model(Protocol):
    """What the search needs of a game's model (it may also have ``search``, or
    ``priority(state) -> int`` and ``dives: tuple[int, int]``: :mod:`.solver`'s docstring)."""

    root: Any
    root_actions: tuple[Action, ...]

    def key(self, state: Any) -> Hashable: ...

    def table(self) -> Callable[[Any], bool]: ...

    def won(self, state: Any) -> bool: ...

    def expand(self, state: Any) -> Sequence[tuple[tuple[Action, ...], Any, Hashable]]: ...


# A model may also offer a search of its own, used instead of the depth-first search below:
# ``search(max_nodes, deadline) -> (winning actions or None, states expanded, exhausted)``,
# with ``deadline`` on the process's CPU clock. It must keep the depth-first search's
# guarantee (every successor of a state it expands is expanded or recorded as seen).


def search_model(
    model: Model, max_nodes: int | None, budget_s: float | None
) -> tuple[list[Action] | None, int, bool]:
    """Search ``model``: (winning actions or None, states expanded, exhausted).

    Depth-first, unless the model has a ``priority``: then best-first with depth-first dives
    (:mod:`.solver`'s docstring). A line is kept as a chain of links ``(parent link, actions)``.
    """
    # The search makes many small tuples and no cycles: the cyclic collector would only
    # rescan the states it holds (about a tenth of the time on Canfield's slow deals).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _search_states(model, max_nodes, budget_s)
    finally:
        if collecting:
            gc.enable()


def _search_states(
    model: Model, max_nodes: int | None, budget_s: float | None
) -> tuple[list[Action] | None, int, bool]:
    """The search of :func:`search_model`, with the cyclic collector off."""
    clock = time.process_time
    deadline = None if budget_s is None else clock() + budget_s
    limit = -1 if max_nodes is None else max_nodes
    root = model.root
    if model.won(root):
        return list(model.root_actions), 0, False
    own = getattr(model, "search", None)
    if own is not None:
        result: tuple[list[Action] | None, int, bool] = own(max_nodes, deadline)
        return result
    won = model.won
    expand = model.expand
    fresh = model.table()
    fresh(model.key(root))
    priority: Callable[[Any], int] | None = getattr(model, "priority", None)
    dive, later = (-1, -1) if priority is None else getattr(model, "dives", (-1, -1))
    heap: list[tuple[int, int, Any, Any]] = [(0, 0, root, (None, model.root_actions))]
    order = 0
    nodes = 0
    while heap:
        _, _, state, link = heapq.heappop(heap)
        if nodes == limit:
            return None, nodes, False
        nodes += 1
        if deadline is not None and nodes % _CLOCK_EVERY == 0 and clock() > deadline:
            return None, nodes, False
        stack: list[Sequence[tuple[tuple[Action, ...], Any, Hashable]]] = [expand(state)]
        index = [0]
        links = [link]
        left, dive = dive, later  # states this dive may still expand (-1: no end)
        while stack:
            children = stack[-1]
            i = index[-1]
            if i == len(children):
                stack.pop()
                index.pop()
                links.pop()
                continue
            index[-1] = i + 1
            actions, child, key = children[i]
            if not fresh(key):
                continue
            link = (links[-1], actions)
            if won(child):
                steps = []
                while link is not None:
                    steps.append(link[1])
                    link = link[0]
                return [a for step in reversed(steps) for a in step], nodes, False
            if left == 0:
                assert priority is not None
                order -= 1  # among equals, the latest first
                heapq.heappush(heap, (priority(child), order, child, link))
                continue
            left -= 1
            if nodes == limit:
                return None, nodes, False
            nodes += 1
            if deadline is not None and nodes % _CLOCK_EVERY == 0 and clock() > deadline:
                return None, nodes, False
            stack.append(expand(child))
            index.append(0)
            links.append(link)
    return None, nodes, True
