"""A spectator's board of a running ``delayed`` race, with cards withheld, for the
clients' drawing tests."""

from __future__ import annotations

from typing import Any


def withheld_board() -> dict[str, Any]:
    """A fresh board with null where a card is not shown yet: in the tableau, a
    foundation's top (count 2), the reserve's top and the waste."""
    return {
        "variant": "canfield",
        "tableau": [["9C", None], [None], ["2D"], []],
        "foundations": [
            {"top": "AC", "count": 1},
            {"top": None, "count": 2},
            {"top": None, "count": 0},
            {"top": None, "count": 0},
        ],
        "base_rank": "A",
        "status": "playing",
        "banked": 3,
        "moves": 9,
        "reserve": {"count": 12, "top": None},
        "stock": {"count": 30},
        "waste": {"count": 3, "visible": ["5H", None, "6D"]},
    }
