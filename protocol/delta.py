"""Applying an ack's ``delta`` to the player's view it follows (docs/protocol.md, ack)."""

from __future__ import annotations

from typing import Any

__all__ = ["apply_delta"]

View = dict[str, Any]

_PILES = {"r": "reserve", "s": "stock", "w": "waste"}


def apply_delta(view: View, delta: View) -> View:
    """The view after ``delta``, as a new dict (``view`` itself is left as it was).

    Each pile in ``delta["piles"]`` replaces its part of the view (``t2`` the second
    tableau pile, ``f1`` the first foundation, ``r``, ``s`` and ``w`` the reserve, stock
    and waste); every other key replaces the view's. A view whose delta has no ``legal``
    list loses the one it had, which would be out of date.
    """
    new = dict(view)
    tableau: list[Any] | None = None
    foundations: list[Any] | None = None
    for name, pile in delta.get("piles", {}).items():
        kind, number = name[:1], name[1:]
        if kind in _PILES and not number:
            new[_PILES[kind]] = pile
            continue
        index = int(number) - 1 if number.isascii() and number.isdigit() else -1
        if kind == "t" and 0 <= index < len(view["tableau"]):
            if tableau is None:
                tableau = new["tableau"] = list(view["tableau"])
            tableau[index] = pile
        elif kind == "f" and 0 <= index < len(view["foundations"]):
            if foundations is None:
                foundations = new["foundations"] = list(view["foundations"])
            foundations[index] = pile
        else:
            raise ValueError(f"a delta names no pile {name!r} of this view")
    for key, value in delta.items():
        if key != "piles":
            new[key] = value
    if "legal" not in delta:
        new.pop("legal", None)
    return new
