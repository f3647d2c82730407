"""The game state machine shared by the four variants: apply, legal moves, status, undo.

Each variant in ``variants/`` subclasses :class:`Game` and supplies its deal, its building
rules and its stuck test. A game holds every card; only :mod:`.views` turns it into data
for a client.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import ClassVar

from .cards import RANK, RED, SUIT, card_name, rank_name
from .moves import DRAW, REDEAL, UNDO, IllegalMove, Move, MoveKind, PileKind, Reason
from .rng import shuffled_deck

__all__ = ["STATUS_TEXT", "Change", "Game", "Position", "Status"]

T, F, R, W, S = (
    PileKind.TABLEAU,
    PileKind.FOUNDATION,
    PileKind.RESERVE,
    PileKind.WASTE,
    PileKind.STOCK,
)
KING = 13

Position = tuple[tuple[tuple[int, ...], ...], ...]


class Status(StrEnum):
    """Where a player's game stands."""

    PLAYING = "playing"
    WON = "won"
    STUCK = "stuck"
    RESIGNED = "resigned"


STATUS_TEXT: dict[Status, str] = {status: status.value for status in Status}
"""Each status's text (a look-up here is a tenth of an enum's ``.value``; one a move)."""


class Change:
    """What an accepted move changed: the move as applied and the piles it touched.

    One is made per move: a plain class, not a frozen dataclass, whose ``__init__`` sets
    each field through ``object.__setattr__`` (compiled, this is a native class). Read
    it, never change it.
    """

    __slots__ = ("move", "touched")

    def __init__(self, move: Move, touched: tuple[str, ...]) -> None:
        self.move = move
        self.touched = touched

    def __repr__(self) -> str:
        return f"Change(move={self.move!r}, touched={self.touched!r})"

    def __reduce__(self) -> tuple[object, ...]:  # compiled, a class pickles only so
        return (Change, (self.move, self.touched))


# One history record per applied move, enough to revert it exactly, written into one flat
# list of ints and pile letters, its kind last:
#   src, src_index, dst, dst_index, count, *reserve_fills, len(reserve_fills), fan_before, _MOVED
#   cards_drawn, fan_before, _DREW and fan_before, _REDEALT
# A record lives as long as its race, one a move. Held as its own tuple it was one more
# object a move for CPython's cyclic collector (a tuple of ints is tracked when made and
# only untracked at its first collection): on a busy server those made its young
# collections come every few seconds, each scanning every room's current records. Ints
# and interned letters in a list are no objects for the collector at all. (Holding enum
# members, records stayed tracked, and every middle and full collection scanned them.)
_Record = int | str
_MOVED, _DREW, _REDEALT = 0, 1, 2


def _name(kind: PileKind, index: int) -> str:
    return kind.value if kind in (R, W, S) else f"{kind.value}{index + 1}"


class Game:
    """One player's game of one variant, dealt from a 64-bit seed."""

    variant: ClassVar[str]
    title: ClassVar[str]
    tableau_piles: ClassVar[int]
    has_stock: ClassVar[bool] = False
    draw_count: ClassVar[int] = 1
    waste_visible: ClassVar[int] = 1
    wraps: ClassVar[bool] = False
    foundation_to_tableau: ClassVar[bool] = False

    def __init__(self, seed: int, *, undo_allowed: bool = True) -> None:
        self.seed = seed
        self.undo_allowed = undo_allowed
        self.tableau: list[list[int]] = [[] for _ in range(self.tableau_piles)]
        self.foundations: list[list[int]] = [[], [], [], []]
        self.reserve: list[int] = []
        self.stock: list[int] = []
        self.waste: list[int] = []
        self.fan = 0
        self.base_rank = 1
        self.moves = 0
        self.log: list[Move] = []
        self._history: list[_Record] = []  # flat: see _Record
        self._ended: Status | None = None
        self._stuck_at = -1
        self._stuck = False
        # Counts the moves that changed the tableau, foundations or reserve (not draws and
        # redeals), so that a variant may keep what it worked out of those piles alone.
        self.layout_rev = 0
        self._deal(shuffled_deck(seed))

    # -- the variant's parts -------------------------------------------------------------

    def _deal(self, deck: list[int]) -> None:
        raise NotImplementedError

    def _check_tableau(self, src: PileKind, pile: list[int], dst_index: int, count: int) -> None:
        """Raise IllegalMove unless ``count`` cards from ``pile`` may go on tableau pile ``dst_index``."""
        raise NotImplementedError

    def _tableau_moves(self) -> Iterable[Move]:
        """Yield every legal move onto the tableau."""
        raise NotImplementedError

    def _auto_fill(self) -> tuple[int, ...]:
        """Fill empty tableau piles from the reserve where the variant does so; return which."""
        return ()

    def _is_stuck(self) -> bool:
        return not self.has_legal_move()

    def __deepcopy__(self, memo: dict[int, object]) -> Game:
        """An independent copy of the game: its position, history and log.

        Written out because the compiled class (setup.py) has no default way to be copied
        or pickled; the plain class does the same. A variant's caches start empty in the
        copy.
        """
        return restored(type(self), self.seed, self.undo_allowed, self._state())

    def __reduce__(self) -> tuple[object, ...]:
        return (restored, (type(self), self.seed, self.undo_allowed, self._state()))

    def _state(self) -> tuple[object, ...]:
        """What a copy takes over (the lists copied: none is shared)."""
        return (
            [list(pile) for pile in self.tableau],
            [list(pile) for pile in self.foundations],
            list(self.reserve),
            list(self.stock),
            list(self.waste),
            self.fan,
            self.base_rank,
            self.moves,
            list(self.log),  # moves and records are immutable
            list(self._history),
            self._ended,
            self._stuck_at,
            self._stuck,
            self.layout_rev,
        )

    def _take_state(self, state: tuple[object, ...]) -> None:
        (
            self.tableau,
            self.foundations,
            self.reserve,
            self.stock,
            self.waste,
            self.fan,
            self.base_rank,
            self.moves,
            self.log,
            self._history,
            self._ended,
            self._stuck_at,
            self._stuck,
            self.layout_rev,
        ) = state  # type: ignore[assignment]

    # -- reading the position --------------------------------------------------------------

    @property
    def banked(self) -> int:
        """Cards on the foundations."""
        f = self.foundations
        return len(f[0]) + len(f[1]) + len(f[2]) + len(f[3])

    @property
    def status(self) -> Status:
        """``won``, ``resigned``, ``stuck`` (RULES.md, per variant) or ``playing``."""
        if self._ended is not None:
            return self._ended
        if self._stuck_at != self.moves:
            self._stuck = self._is_stuck()
            self._stuck_at = self.moves
        return Status.STUCK if self._stuck else Status.PLAYING

    @property
    def can_undo(self) -> bool:
        """Whether an undo would be accepted now."""
        return self.undo_allowed and self._ended is None and bool(self._history)

    def position(self) -> Position:
        """Every pile's cards (bottom first) and the waste fan, for comparing positions."""
        return (
            tuple(tuple(p) for p in self.tableau),
            tuple(tuple(f) for f in self.foundations),
            (tuple(self.reserve), tuple(self.stock), tuple(self.waste), (self.fan,)),
        )

    def visible_waste(self) -> list[int]:
        """The waste cards a player sees, bottom first (the top card last)."""
        if not self.waste:
            return []
        shown = min(len(self.waste), max(1, min(self.fan, self.waste_visible)))
        return self.waste[-shown:]

    def resign(self) -> None:
        """End the game as resigned (no effect on a game already won or resigned)."""
        if self._ended is None:
            self._ended = Status.RESIGNED

    # -- moves -----------------------------------------------------------------------------

    def apply(self, move: Move) -> Change:
        """Apply ``move`` and return what changed, or raise IllegalMove leaving the game as it was."""
        if self._ended is not None:
            raise IllegalMove(Reason.GAME_OVER, f"the game is over ({self._ended.value})")
        kind = move.kind
        if kind is MoveKind.MOVE:
            change = self._transfer(move)
        elif kind is MoveKind.DRAW:
            change = self._draw()
        elif kind is MoveKind.REDEAL:
            change = self._redeal()
        else:
            change = self._undo()
        self.moves += 1
        self.log.append(move)
        return change

    def legal_moves(self, *, all_forms: bool = False) -> list[Move]:
        """Every move ``apply`` accepts now, undo aside.

        A move to the foundations is listed once with no pile named; ``all_forms`` adds
        the same move naming each foundation that takes the card.
        """
        if self._ended is not None:
            return []
        moves = self._foundation_moves(all_forms)
        moves.extend(self._tableau_moves())
        if self.has_stock:
            if self.stock:
                moves.append(DRAW)
            elif self.waste and self.draw_count > 1:
                moves.append(REDEAL)
        return moves

    def has_legal_move(self) -> bool:
        """Whether any move other than undo is legal."""
        if self.has_stock and (self.stock or (self.waste and self.draw_count > 1)):
            return True  # a draw or a redeal
        for _ in self._progress_moves():
            return True
        return False

    def _progress_moves(self) -> Iterable[Move]:
        yield from self._foundation_moves(False)
        yield from self._tableau_moves()

    # -- sources and targets ---------------------------------------------------------------

    def _sources(self) -> Iterable[tuple[PileKind, int, list[int]]]:
        """Every non-empty pile whose top card may move, with its kind and index."""
        for i, pile in enumerate(self.tableau):
            if pile:
                yield T, i, pile
        if self.reserve:
            yield R, 0, self.reserve
        if self.waste:
            yield W, 0, self.waste
        if self.foundation_to_tableau:
            for i, pile in enumerate(self.foundations):
                if pile:
                    yield F, i, pile

    def _source(self, kind: PileKind | None, index: int) -> list[int]:
        if kind is T:
            if 0 <= index < len(self.tableau):
                return self.tableau[index]
        elif kind is F:
            if 0 <= index < 4:
                return self.foundations[index]
        elif kind is S:
            if self.has_stock:
                raise IllegalMove(Reason.NOT_A_SOURCE, "cards leave the stock only by a draw ('d')")
        elif self.has_stock:
            return self.reserve if kind is R else self.waste
        raise IllegalMove(Reason.NO_SUCH_PILE, f"this game has no pile {_name(kind or T, index)}")

    def next_rank(self, rank: int) -> int:
        """The rank that follows ``rank`` on a foundation (14 after a King where nothing wraps)."""
        return rank % 13 + 1 if self.wraps else rank + 1

    def _foundation_for(self, card: int, index: int | None) -> int:
        """Return the foundation that takes ``card`` (``index`` if named) or raise why none does."""
        rank = RANK[card]
        if index is not None:
            if not 0 <= index < 4:
                raise IllegalMove(Reason.NO_SUCH_PILE, f"there is no foundation f{index + 1}")
            pile = self.foundations[index]
            if not pile:
                if rank == self.base_rank:
                    return index
                raise self._needs_base(card)
            top = pile[-1]
            if SUIT[top] != SUIT[card]:
                raise IllegalMove(
                    Reason.FOUNDATION_WRONG_SUIT,
                    f"{card_name(card)} cannot go on f{index + 1}: it builds in {card_name(top)[-1]}",
                )
            if rank != self.next_rank(RANK[top]):
                raise self._wrong_rank(card, top)
            return index
        if rank == self.base_rank:
            for i, pile in enumerate(self.foundations):
                if not pile:
                    return i
        suit = SUIT[card]
        for i, pile in enumerate(self.foundations):
            if pile and SUIT[pile[-1]] == suit:
                if rank == self.next_rank(RANK[pile[-1]]):
                    return i
                raise self._wrong_rank(card, pile[-1])
        raise self._needs_base(card)

    def _needs_base(self, card: int) -> IllegalMove:
        return IllegalMove(
            Reason.FOUNDATION_NEEDS_BASE,
            f"{card_name(card)} cannot start a foundation: only a card of rank {rank_name(self.base_rank)} does",
        )

    def _wrong_rank(self, card: int, top: int) -> IllegalMove:
        return IllegalMove(
            Reason.FOUNDATION_WRONG_RANK,
            f"{card_name(card)} cannot go on {card_name(top)}: the foundation needs "
            f"{rank_name(self.next_rank(RANK[top]))} next",
        )

    def _foundation_moves(self, all_forms: bool) -> list[Move]:
        moves: list[Move] = []
        for kind, i, pile in self._sources():
            if kind is F:
                continue
            card = pile[-1]
            rank = RANK[card]
            targets = []
            for fi, f in enumerate(self.foundations):
                if (not f and rank == self.base_rank) or (
                    f and SUIT[f[-1]] == SUIT[card] and rank == self.next_rank(RANK[f[-1]])
                ):
                    targets.append(fi)
                    if not all_forms:
                        break
            if targets:
                moves.append(Move(MoveKind.MOVE, kind, i, F, None, 1))
                if all_forms:
                    moves.extend(Move(MoveKind.MOVE, kind, i, F, fi, 1) for fi in targets)
        return moves

    # -- shared building rules --------------------------------------------------------------

    @staticmethod
    def _check_alternating(card: int, onto: int) -> None:
        """Raise unless ``card`` is one rank below ``onto`` and of the other colour."""
        if RANK[card] + 1 != RANK[onto]:
            raise IllegalMove(
                Reason.NOT_ONE_RANK_LOWER,
                f"{card_name(card)} cannot go on {card_name(onto)}: the tableau builds down by one",
            )
        if RED[card] == RED[onto]:
            raise IllegalMove(
                Reason.NOT_ALTERNATING_COLOUR,
                f"{card_name(card)} cannot go on {card_name(onto)}: colours must alternate",
            )

    @staticmethod
    def run_length(pile: list[int]) -> int:
        """Length of the descending, alternating-colour run at the end of ``pile``."""
        n = len(pile)
        if n == 0:
            return 0
        k = 1
        while k < n:
            upper, lower = pile[n - k - 1], pile[n - k]
            if RANK[lower] + 1 != RANK[upper] or RED[lower] == RED[upper]:
                break
            k += 1
        return k

    def _check_run(self, pile: list[int], count: int) -> None:
        if count > 1 and self.run_length(pile) < count:
            raise IllegalMove(
                Reason.NOT_A_RUN,
                f"the last {count} cards of that pile do not descend in alternating colours",
            )

    # -- performing ------------------------------------------------------------------------

    def _transfer(self, move: Move) -> Change:
        src, si, dst, di, count = move.src, move.src_index, move.dst, move.dst_index, move.count
        if count < 1:
            raise IllegalMove(Reason.NOT_ENOUGH_CARDS, "a move takes at least one card")
        pile = self._source(src, si)
        assert src is not None
        if not pile:
            raise IllegalMove(Reason.EMPTY_PILE, f"{_name(src, si)} is empty")
        if count > len(pile):
            raise IllegalMove(
                Reason.NOT_ENOUGH_CARDS, f"{_name(src, si)} holds only {len(pile)} card(s)"
            )
        if src is F:
            if not self.foundation_to_tableau:
                raise IllegalMove(Reason.FOUNDATION_LOCKED, "no card ever leaves a foundation")
            if dst is not T:
                raise IllegalMove(
                    Reason.FOUNDATION_TO_TABLEAU_ONLY,
                    "a foundation's top card may move only to the tableau",
                )
        if dst is F:
            if count != 1:
                raise IllegalMove(
                    Reason.SINGLE_CARD_ONLY, "one card at a time goes to a foundation"
                )
            di = self._foundation_for(pile[-1], di)
            target = self.foundations[di]
        elif dst is T:
            assert di is not None
            if not 0 <= di < len(self.tableau):
                raise IllegalMove(Reason.NO_SUCH_PILE, f"this game has no pile t{di + 1}")
            if src is T and si == di:
                raise IllegalMove(Reason.SAME_PILE, "a pile cannot move onto itself")
            if src is not T and count != 1:
                raise IllegalMove(
                    Reason.SINGLE_CARD_ONLY, f"only one card moves from {_name(src, si)}"
                )
            self._check_tableau(src, pile, di, count)
            target = self.tableau[di]
        elif self.has_stock:
            raise IllegalMove(
                Reason.NOT_A_TARGET, f"cards cannot be placed on {_name(dst or T, 0)}"
            )
        else:
            raise IllegalMove(Reason.NO_SUCH_PILE, f"this game has no pile {_name(dst or T, 0)}")
        if count == 1:
            target.append(pile.pop())
        else:
            target.extend(pile[-count:])
            del pile[-count:]
        fan = self.fan
        if src is W and fan:
            self.fan = fan - 1
        fills = self._auto_fill() if src is T else ()
        history = self._history
        history.append(src.value)
        history.append(si)
        history.append(dst.value)
        history.append(di)
        history.append(count)
        history.extend(fills)
        history.append(len(fills))
        history.append(fan)
        history.append(_MOVED)
        self.layout_rev += 1
        if dst is F and self.banked == 52:
            self._ended = Status.WON
        touched: tuple[str, ...] = (_name(src, si), _name(dst, di))
        if fills:
            touched += ("r", *(f"t{i + 1}" for i in fills))
        return Change(Move(MoveKind.MOVE, src, si, dst, di, count), touched)

    def _draw(self) -> Change:
        if not self.has_stock:
            raise IllegalMove(Reason.NO_SUCH_PILE, "this game has no stock")
        stock = self.stock
        if not stock:
            if self.draw_count > 1 and self.waste:
                raise IllegalMove(Reason.STOCK_EMPTY, "the stock is empty: redeal with 'rd'")
            raise IllegalMove(Reason.STOCK_EMPTY, "the stock is empty")
        n = min(self.draw_count, len(stock))
        for _ in range(n):
            self.waste.append(stock.pop())
        history = self._history
        history.append(n)
        history.append(self.fan)
        history.append(_DREW)
        self.fan = n
        return Change(DRAW, ("s", "w"))

    def _redeal(self) -> Change:
        if not self.has_stock:
            raise IllegalMove(Reason.NO_SUCH_PILE, "this game has no stock")
        if self.draw_count == 1:
            raise IllegalMove(Reason.NO_REDEAL, "this game has no redeal")
        if self.stock:
            raise IllegalMove(Reason.STOCK_NOT_EMPTY, "redeal only once the stock is empty")
        if not self.waste:
            raise IllegalMove(Reason.NOTHING_TO_REDEAL, "the stock and the waste are both empty")
        history = self._history
        history.append(self.fan)
        history.append(_REDEALT)
        self.waste.reverse()
        self.stock, self.waste = self.waste, []
        self.fan = 0
        return Change(REDEAL, ("s", "w"))

    def _pile(self, kind: PileKind, index: int) -> list[int]:
        if kind is T:
            return self.tableau[index]
        if kind is F:
            return self.foundations[index]
        return self.reserve if kind is R else self.waste

    def _undo(self) -> Change:
        if not self.undo_allowed:
            raise IllegalMove(Reason.UNDO_NOT_ALLOWED, "undo is off in this game")
        if not self._history:
            raise IllegalMove(Reason.NOTHING_TO_UNDO, "there is no move to undo")
        history = self._history
        kind = history.pop()
        if kind == _DREW:
            fan, n = history.pop(), history.pop()
            assert isinstance(n, int) and isinstance(fan, int)
            for _ in range(n):
                self.stock.append(self.waste.pop())
            self.fan = fan
            return Change(UNDO, ("s", "w"))
        if kind == _REDEALT:
            fan = history.pop()
            assert isinstance(fan, int)
            self.stock.reverse()
            self.waste, self.stock = self.stock, []
            self.fan = fan
            return Change(UNDO, ("s", "w"))
        fan, filled = history.pop(), history.pop()
        assert isinstance(fan, int) and isinstance(filled, int)
        last_first: list[int] = []
        for _ in range(filled):
            i = history.pop()
            assert isinstance(i, int)
            last_first.append(i)
        count, di, dst_letter, si, src_letter = (history.pop() for _ in range(5))
        assert isinstance(src_letter, str) and isinstance(dst_letter, str)
        src, dst = PileKind(src_letter), PileKind(dst_letter)
        assert isinstance(si, int) and isinstance(di, int) and isinstance(count, int)
        for i in last_first:
            self.reserve.append(self.tableau[i].pop())
        fills = tuple(reversed(last_first))
        target, pile = self._pile(dst, di), self._pile(src, si)
        pile.extend(target[-count:])
        del target[-count:]
        self.fan = fan
        self.layout_rev += 1
        touched: tuple[str, ...] = (_name(src, si), _name(dst, di))
        if fills:
            touched += ("r", *(f"t{i + 1}" for i in fills))
        return Change(UNDO, touched)


def restored(cls: type[Game], seed: int, undo_allowed: bool, state: tuple[object, ...]) -> Game:
    """A game of ``cls`` dealt from ``seed``, then put in ``state`` (``Game._state``): how a
    game is copied and unpickled."""
    game = cls(seed, undo_allowed=undo_allowed)
    game._take_state(state)
    return game
