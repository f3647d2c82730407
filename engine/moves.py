"""The one move type of all four games, its text notation, and the refusal reasons.

Notation (``docs/rules.md`` has the full table), piles numbered from 1:

============  =====================================================
``t1-t3``     top card of tableau pile 1 onto tableau pile 3
``t1-t3x3``   the last three cards of pile 1 (a run) onto pile 3
``t2-f``      top card of pile 2 to whichever foundation takes it
``t2-f3``     top card of pile 2 to foundation 3
``r-t1``      reserve's top card to pile 1 (``r-f`` to a foundation)
``w-t2``      waste's top card to pile 2 (``w-f`` to a foundation)
``f2-t4``     foundation 2's top card back to pile 4 (Canfield)
``d``         draw from the stock
``rd``        redeal the waste into the stock (Canfield)
``u``         undo the last move
============  =====================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, StrEnum

__all__ = [
    "DRAW",
    "REDEAL",
    "UNDO",
    "IllegalMove",
    "Move",
    "MoveKind",
    "NotationError",
    "PileKind",
    "Reason",
    "format_move",
    "parse_move",
]


class PileKind(StrEnum):
    """The kinds of pile, named by their notation letter."""

    TABLEAU = "t"
    FOUNDATION = "f"
    RESERVE = "r"
    WASTE = "w"
    STOCK = "s"


class MoveKind(Enum):
    """What a move does."""

    MOVE = "move"
    DRAW = "draw"
    REDEAL = "redeal"
    UNDO = "undo"


@dataclass(frozen=True, slots=True)
class Move:
    """One move: cards from one pile to another, a draw, a redeal or an undo.

    Pile indices count from 0; ``dst_index`` is ``None`` for "any foundation".
    """

    kind: MoveKind
    src: PileKind | None = None
    src_index: int = 0
    dst: PileKind | None = None
    dst_index: int | None = 0
    count: int = 1

    def __reduce__(self) -> tuple[object, ...]:
        # Compiled (setup.py), a frozen dataclass's own unpickling cannot set its fields:
        # a solver's winning line crosses from its worker process as these.
        return (Move, (self.kind, self.src, self.src_index, self.dst, self.dst_index, self.count))

    @classmethod
    def transfer(
        cls, src: PileKind, src_index: int, dst: PileKind, dst_index: int | None, count: int = 1
    ) -> Move:
        """Return a move of ``count`` cards from one pile to another."""
        return cls(MoveKind.MOVE, src, src_index, dst, dst_index, count)

    def __str__(self) -> str:
        return format_move(self)


DRAW = Move(MoveKind.DRAW, None, 0, None, 0, 1)
REDEAL = Move(MoveKind.REDEAL, None, 0, None, 0, 1)
UNDO = Move(MoveKind.UNDO, None, 0, None, 0, 1)


class NotationError(ValueError):
    """Raised for text that is not a move in the notation."""


_SINGLE = {PileKind.RESERVE, PileKind.WASTE, PileKind.STOCK}
_MOVE_RE = re.compile(r"^([tfrws])(\d*)-([tfrws])(\d*)(?:x(\d+))?$", re.ASCII)
_WORDS = {"d": DRAW, "draw": DRAW, "rd": REDEAL, "redeal": REDEAL, "u": UNDO, "undo": UNDO}
MAX_INDEX = 99


def _pile_text(kind: PileKind, index: int | None) -> str:
    if kind in _SINGLE or index is None:
        return kind.value
    return f"{kind.value}{index + 1}"


def format_move(move: Move) -> str:
    """Return the move in the notation (the inverse of :func:`parse_move`)."""
    if move.kind is MoveKind.DRAW:
        return "d"
    if move.kind is MoveKind.REDEAL:
        return "rd"
    if move.kind is MoveKind.UNDO:
        return "u"
    assert move.src is not None and move.dst is not None
    text = f"{_pile_text(move.src, move.src_index)}-{_pile_text(move.dst, move.dst_index)}"
    if move.count != 1:
        text += f"x{move.count}"
    return text


def _parse_pile(
    kind_text: str, digits: str, text: str, *, is_dst: bool
) -> tuple[PileKind, int | None]:
    kind = PileKind(kind_text)
    if kind in _SINGLE:
        if digits:
            raise NotationError(f"{text!r}: pile {kind_text!r} takes no number")
        return kind, 0
    if not digits:
        if is_dst and kind is PileKind.FOUNDATION:
            return kind, None
        raise NotationError(f"{text!r}: pile {kind_text!r} needs a number, such as {kind_text}1")
    number = int(digits)
    if not 1 <= number <= MAX_INDEX:
        raise NotationError(f"{text!r}: pile numbers run from 1")
    return kind, number - 1


def parse_move(text: str) -> Move:
    """Return the move written as ``text`` in the notation; raise NotationError if it is not one."""
    if not isinstance(text, str):
        raise NotationError("a move is written as text, such as 't1-t3'")
    # ASCII alone: Unicode's other spaces and digits (an ideographic space, an Arabic-Indic
    # 1) are not the notation, whatever str.strip and int would make of them.
    compact = text.strip(" \t\r\n")
    if not compact.isascii():
        raise NotationError(f"{text!r} is not a move: the notation is plain ASCII, such as 't1-t3'")
    compact = compact.lower()
    word = _WORDS.get(compact)
    if word is not None:
        return word
    match = _MOVE_RE.match(compact)
    if match is None:
        raise NotationError(
            f"{text!r} is not a move: write e.g. 't1-t3', 't1-t3x2', 'w-f', 'd', 'rd' or 'u'"
        )
    src, src_index = _parse_pile(match[1], match[2], text, is_dst=False)
    dst, dst_index = _parse_pile(match[3], match[4], text, is_dst=True)
    count = int(match[5]) if match[5] is not None else 1
    if not 1 <= count <= 52:
        raise NotationError(f"{text!r}: a move takes 1 to 52 cards")
    assert src_index is not None
    return Move(MoveKind.MOVE, src, src_index, dst, dst_index, count)


class Reason(StrEnum):
    """Stable codes for a refused move."""

    NO_SUCH_PILE = "no_such_pile"
    SAME_PILE = "same_pile"
    EMPTY_PILE = "empty_pile"
    NOT_ENOUGH_CARDS = "not_enough_cards"
    NOT_A_SOURCE = "not_a_source"
    NOT_A_TARGET = "not_a_target"
    SINGLE_CARD_ONLY = "single_card_only"
    NOT_A_RUN = "not_a_run"
    PARTIAL_PILE_MOVE = "partial_pile_move"
    NOT_ONE_RANK_LOWER = "not_one_rank_lower"
    NOT_ALTERNATING_COLOUR = "not_alternating_colour"
    ONLY_KING_ON_EMPTY = "only_king_on_empty"
    EMPTY_PILE_NEEDS_RESERVE = "empty_pile_needs_reserve"
    EMPTY_PILE_NEEDS_WASTE = "empty_pile_needs_waste"
    TABLEAU_CANNOT_FILL_EMPTY = "tableau_cannot_fill_empty"
    FOUNDATION_NEEDS_BASE = "foundation_needs_base"
    FOUNDATION_WRONG_SUIT = "foundation_wrong_suit"
    FOUNDATION_WRONG_RANK = "foundation_wrong_rank"
    FOUNDATION_LOCKED = "foundation_locked"
    FOUNDATION_TO_TABLEAU_ONLY = "foundation_to_tableau_only"
    STOCK_EMPTY = "stock_empty"
    STOCK_NOT_EMPTY = "stock_not_empty"
    NOTHING_TO_REDEAL = "nothing_to_redeal"
    NO_REDEAL = "no_redeal"
    UNDO_NOT_ALLOWED = "undo_not_allowed"
    NOTHING_TO_UNDO = "nothing_to_undo"
    GAME_OVER = "game_over"


class IllegalMove(Exception):
    """A refused move: a stable :class:`Reason` code and a sentence for a person."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
