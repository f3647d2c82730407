"""Boards held back for the spectators of a ``delayed`` room. Pure: the caller passes time.

A node keeps, for each room it holds whose spectators see boards late, the boards it
hears (in progress events, or from its own games when a spectator comes) and shows each
one ``delay_ms`` after it heard it: a board is never shown sooner than that after the
move that made it. On Redis the node that serves a spectator may play none of the
room's games; the boards it hears are all it needs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_WAITING", "DelayedBoards", "face_up", "foundation_cards", "masked"]

MAX_WAITING = 120
"""About the most boards of one player a room holds back at once, whatever the delay."""


_RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")


def foundation_cards(foundation: dict[str, Any]) -> list[str]:
    """Every card a foundation holds, as its top and count tell them: each game's
    foundations build up in suit (wrapping from King to Ace in Rainbow Canfield), so the
    cards under the top are the ranks below it, one a card."""
    top = foundation["top"]
    if top is None:
        return []
    rank, suit = _RANKS.index(top[:-1]), top[-1]
    return [_RANKS[(rank - i) % 13] + suit for i in range(min(foundation["count"], 13))]


def face_up(board: dict[str, Any]) -> set[str]:
    """The cards a board shows, or tells: the tableau's, every card of the foundations
    (a card buried under a foundation's top is known by the top and the count), the
    reserve's top, and the waste's visible cards."""
    cards = {name for pile in board["tableau"] for name in pile if name is not None}
    for foundation in board["foundations"]:
        cards.update(foundation_cards(foundation))
    reserve = board.get("reserve")
    if reserve is not None and reserve["top"] is not None:
        cards.add(reserve["top"])
    waste = board.get("waste")
    if waste is not None:
        cards.update(name for name in waste["visible"] if name is not None)
    return cards


def masked(board: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """``board`` with every face-up card not in ``known`` turned face down (None where its
    name was; the counts stay)."""
    out = dict(board)
    out["tableau"] = [[n if n in known else None for n in pile] for pile in board["tableau"]]
    out["foundations"] = [
        f if known.issuperset(foundation_cards(f)) else {**f, "top": None}
        for f in board["foundations"]
    ]
    reserve = board.get("reserve")
    if reserve is not None and reserve["top"] is not None and reserve["top"] not in known:
        out["reserve"] = {**reserve, "top": None}
    waste = board.get("waste")
    if waste is not None:
        out["waste"] = {**waste, "visible": [n if n in known else None for n in waste["visible"]]}
    return out


class DelayedBoards:
    """One race's boards of a room, each shown ``delay_ms`` after it was heard.

    Memory is bounded: the boards of a player heard within ``step_ms`` of the first of a
    run are kept as one entry, the latest of them, shown ``delay_ms`` after it was heard.
    So a player has at most ``delay_ms / step_ms + 1`` entries waiting, and ``step_ms`` is
    at least the progress interval and at least ``delay_ms / MAX_WAITING``.

    A delay alone does not keep the deal from a racer who watches their own room from a
    second connection: everyone plays the same deal, so a card another player brought up
    a minute ago may still be face down on the racer's board. So the boards are also
    shown through :meth:`hidden_from`: a board is shown only once every card face up on
    it has been face up on the board of every player still racing (as far as the boards
    heard show; a card seen between two reports counts as unseen, which only hides more);
    until then the player's last board that was, or the deal. Turning the unseen cards
    face down in place was not enough: where a card lies tells what it is (a foundation's
    count gives its rank, a tableau card its rank and colour under the card it is on), and
    the reserve's order is the same on every board, so a racer watching their own room
    read their own face-down reserve cards off another player's board.
    """

    __slots__ = (
        "clean",
        "deal",
        "delay_ms",
        "race",
        "seen",
        "shown",
        "start",
        "step_ms",
        "waiting",
    )

    def __init__(
        self, race: int, delay_ms: int, step_ms: int = 0, start: dict[str, Any] | None = None
    ) -> None:
        self.race = race
        self.delay_ms = delay_ms
        self.step_ms = max(step_ms, -(-delay_ms // MAX_WAITING), 1)  # ceil: <= MAX_WAITING runs
        # By player: [first heard, last heard, board] of each run, oldest first.
        self.waiting: dict[str, deque[list[Any]]] = {}
        self.shown: dict[str, dict[str, Any]] = {}  # by player: the board due last
        # The cards face up on the deal, which every player has seen.
        self.start: frozenset[str] = frozenset(face_up(start) if start is not None else ())
        self.deal = start  # the deal as spectators see it: shown until a board may be
        self.clean: dict[str, dict[str, Any]] = {}  # by player: the last board shown whole
        self.seen: dict[str, set[str]] = {}  # by player: the cards their boards showed

    def hear(self, player_id: str, board: dict[str, Any], now_ms: int) -> None:
        """Keep ``board``, heard at ``now_ms``, to be shown ``delay_ms`` later."""
        seen = self.seen.get(player_id)
        if seen is None:
            seen = self.seen[player_id] = set(self.start)
        seen |= face_up(board)
        queue = self.waiting.get(player_id)
        if queue is None:
            queue = self.waiting[player_id] = deque()
        if queue:
            last = queue[-1]
            now_ms = max(now_ms, last[1])  # a clock that steps back never brings one sooner
            if now_ms - last[0] < self.step_ms:
                last[1], last[2] = now_ms, board
                return
        queue.append([now_ms, now_ms, board])

    def due(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """Take the boards due at ``now_ms``: each player's latest heard ``delay_ms`` ago or
        more, for the players whose shown board this changes."""
        cutoff = now_ms - self.delay_ms
        changed: dict[str, dict[str, Any]] = {}
        for player_id, queue in self.waiting.items():
            board = None
            while queue and queue[0][1] <= cutoff:
                board = queue.popleft()[2]
            if board is not None:
                self.shown[player_id] = changed[player_id] = board
        return changed

    def as_of(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """Each player's board as shown at ``now_ms`` (nothing is taken): for a snapshot."""
        cutoff = now_ms - self.delay_ms
        boards = dict(self.shown)
        for player_id, queue in self.waiting.items():
            for _, heard, board in queue:
                if heard > cutoff:
                    break
                boards[player_id] = board
        return boards

    def hidden_from(
        self, racing: Iterable[str], boards: dict[str, dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        """``boards`` as they may be shown while the players in ``racing`` (those whose
        game goes on) play: each one whose every face-up card they have all had face up;
        in place of one that is not, the player's last board that was, else the deal (and
        where the deal is not known here, the board with those cards face down)."""
        known: set[str] | None = None
        for player_id in racing:
            seen = self.seen.get(player_id, self.start)
            known = set(seen) if known is None else known & seen
        if known is None:  # no one races on: nothing to keep from anyone
            return boards
        shown: dict[str, dict[str, Any]] = {}
        for player_id, board in boards.items():
            if face_up(board) <= known:
                shown[player_id] = self.clean[player_id] = board
                continue
            earlier = self.clean.get(player_id, self.deal)
            shown[player_id] = earlier if earlier is not None else masked(board, known)
        return shown

    def next_due_ms(self) -> int | None:
        """When the next board waiting comes due, or None if none waits."""
        times = [queue[0][1] + self.delay_ms for queue in self.waiting.values() if queue]
        return min(times) if times else None

    def held(self) -> int:
        """How many boards wait."""
        return sum(len(queue) for queue in self.waiting.values())
