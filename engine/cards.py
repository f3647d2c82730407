"""Cards as small integers: ``suit * 13 + rank - 1`` with suits in C, D, H, S order."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CARD_NAMES",
    "DECK_SIZE",
    "RANK",
    "RANK_NAMES",
    "RED",
    "SUIT",
    "SUITS",
    "Card",
    "card_name",
    "make_card",
    "parse_card",
    "rank_name",
    "suit_symbol",
]

Card = int

DECK_SIZE: Final = 52
SUITS: Final = "CDHS"
SUIT_SYMBOLS: Final = "♣♦♥♠"
RANK_NAMES: Final = ("", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")

RANK: Final[tuple[int, ...]] = tuple(c % 13 + 1 for c in range(DECK_SIZE))
SUIT: Final[tuple[int, ...]] = tuple(c // 13 for c in range(DECK_SIZE))
RED: Final[tuple[bool, ...]] = tuple(c // 13 in (1, 2) for c in range(DECK_SIZE))
CARD_NAMES: Final[tuple[str, ...]] = tuple(
    RANK_NAMES[RANK[c]] + SUITS[SUIT[c]] for c in range(DECK_SIZE)
)
"""Every card's short name, by card: ``CARD_NAMES[c] == card_name(c)``."""
_BY_NAME: Final[dict[str, int]] = {name: c for c, name in enumerate(CARD_NAMES)}


def make_card(rank: int, suit: str) -> Card:
    """Return the card of ``rank`` (1 for Ace … 13 for King) and ``suit`` (one of C D H S)."""
    if not 1 <= rank <= 13 or len(suit) != 1 or suit not in SUITS:
        raise ValueError(f"no card of rank {rank!r} and suit {suit!r}")
    return SUITS.index(suit) * 13 + rank - 1


def card_name(card: Card) -> str:
    """Return the card's short name, such as ``10H`` or ``QS``."""
    return CARD_NAMES[card]


def rank_name(rank: int) -> str:
    """Return a rank's short name, such as ``A``, ``10`` or ``K``."""
    return RANK_NAMES[rank]


def suit_symbol(card: Card) -> str:
    """Return the card's suit symbol, such as ``♥``."""
    return SUIT_SYMBOLS[SUIT[card]]


def parse_card(text: str) -> Card:
    """Return the card named by ``text`` (``10H``, ``qs``, ``TD`` for ten of diamonds)."""
    name = text.strip().upper()
    if name.startswith("T"):
        name = "10" + name[1:]
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"not a card: {text!r}") from None
