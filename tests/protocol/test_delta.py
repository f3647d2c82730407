"""``apply_delta``: the view an ack's delta makes of the view before it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solrace.protocol import apply_delta

VIEW: dict[str, Any] = {
    "variant": "canfield",
    "tableau": [["5S"], ["9D", "8C"], ["QD"], ["10S"]],
    "foundations": [
        {"top": "AC", "count": 1},
        {"top": None, "count": 0},
        {"top": None, "count": 0},
        {"top": None, "count": 0},
    ],
    "base_rank": "A",
    "status": "playing",
    "banked": 1,
    "moves": 1,
    "reserve": {"count": 13, "top": "8C"},
    "stock": {"count": 31},
    "waste": {"count": 3, "visible": ["5H", "4C", "6D"]},
    "can_undo": True,
    "legal": ["t2-t4", "r-t2", "d"],
}


def delta(piles: dict[str, Any], **rest: Any) -> dict[str, Any]:
    """A delta with the counters of VIEW after one more move, and ``rest`` over them."""
    return {
        "piles": piles,
        "status": "playing",
        "banked": 1,
        "moves": 2,
        "can_undo": True,
        **rest,
    }


def test_the_view_given_is_left_as_it_was_and_a_new_one_returned() -> None:
    view = copy.deepcopy(VIEW)
    change = delta(
        {
            "t2": ["9D"],
            "f2": {"top": "AD", "count": 1},
            "r": {"count": 12, "top": "2S"},
            "s": {"count": 30},
            "w": {"count": 4, "visible": ["4C", "6D", "JH"]},
        },
        legal=["d"],
    )
    sent = copy.deepcopy(change)
    new = apply_delta(view, change)
    assert view == VIEW, "apply_delta changed the view it was given"
    assert change == sent, "apply_delta changed the delta"
    assert new is not view and new["tableau"] is not view["tableau"]
    assert new["foundations"] is not view["foundations"]


def test_only_the_piles_named_are_replaced() -> None:
    new = apply_delta(
        VIEW, delta({"t2": ["9D"], "t4": ["10S", "9H"], "f3": {"top": "AH", "count": 1}})
    )
    assert new["tableau"] == [["5S"], ["9D"], ["QD"], ["10S", "9H"]]
    assert new["foundations"] == [
        {"top": "AC", "count": 1},
        {"top": None, "count": 0},
        {"top": "AH", "count": 1},
        {"top": None, "count": 0},
    ]
    for key in ("variant", "base_rank", "reserve", "stock", "waste"):
        assert new[key] == VIEW[key], key
    assert new["moves"] == 2


def test_the_reserve_stock_and_waste_are_named_by_their_letters() -> None:
    reserve = {"count": 12, "top": "2S"}
    stock = {"count": 28}
    waste = {"count": 6, "visible": ["7C", "2H", "KD"]}
    new = apply_delta(VIEW, delta({"r": reserve, "s": stock, "w": waste}))
    assert (new["reserve"], new["stock"], new["waste"]) == (reserve, stock, waste)
    assert new["tableau"] == VIEW["tableau"] and new["foundations"] == VIEW["foundations"]
    assert "piles" not in new


def test_the_counters_status_and_undo_come_from_the_delta() -> None:
    new = apply_delta(VIEW, delta({}, status="stuck", banked=7, moves=40, can_undo=False))
    assert {k: new[k] for k in ("status", "banked", "moves", "can_undo")} == {
        "status": "stuck",
        "banked": 7,
        "moves": 40,
        "can_undo": False,
    }
    assert {k: v for k, v in new.items() if k not in ("status", "banked", "moves", "can_undo")} == {
        k: v for k, v in VIEW.items() if k not in ("status", "banked", "moves", "can_undo", "legal")
    }


def test_a_delta_without_legal_moves_drops_the_stale_ones() -> None:
    new = apply_delta(VIEW, delta({"s": {"count": 28}}))
    assert "legal" not in new
    # A view that had none gets none either.
    bare = {k: v for k, v in VIEW.items() if k != "legal"}
    assert "legal" not in apply_delta(bare, delta({"s": {"count": 28}}))


def test_a_delta_with_legal_moves_replaces_them() -> None:
    assert apply_delta(VIEW, delta({}, legal=["t1-f"]))["legal"] == ["t1-f"]
    assert apply_delta(VIEW, delta({}, legal=[]))["legal"] == []
    bare = {k: v for k, v in VIEW.items() if k != "legal"}
    assert apply_delta(bare, delta({}, legal=["d"]))["legal"] == ["d"]


@pytest.mark.parametrize(
    "name",
    [
        "x",
        "q1",
        "T1",
        "tx",
        "",
        "stock",
        "r1",
        "t0",
        "t5",
        "t-1",
        "f0",
        "f5",
    ],
)
def test_a_delta_that_names_no_pile_is_refused(name: str) -> None:
    view = copy.deepcopy(VIEW)
    with pytest.raises(ValueError):
        apply_delta(view, delta({name: {"count": 1}}))
    assert view == VIEW
