"""Rainbow Canfield: each rule RC-n of docs/rules.md, accepted and refused.

Most positions use lead rank 5 (``base_rank=5``): foundations run 5 … K A … 4.
"""

from __future__ import annotations

import pytest
from positions import (
    RAINBOW_STUCK,
    RC,
    accepts,
    build,
    every_card,
    names,
    play,
    refuses,
    suit_run,
    top,
)

from solrace.engine import Reason, Status, new_game, player_view, shuffled_deck
from solrace.engine.cards import RANK

SEEDS = [0, 42, 2**64 - 1]


@pytest.mark.parametrize("seed", SEEDS)
def test_rc_1_reserve_gets_13_cards_only_its_top_face_up(seed: int) -> None:
    game = new_game(RC, seed)
    deck = shuffled_deck(seed)
    assert game.reserve == deck[0:13]
    assert player_view(game)["reserve"] == {"count": 13, "top": names(deck[12:13])}


@pytest.mark.parametrize("seed", SEEDS)
def test_rc_2_the_next_card_starts_f1_and_sets_the_lead_rank(seed: int) -> None:
    game = new_game(RC, seed)
    deck = shuffled_deck(seed)
    assert game.foundations == [[deck[13]], [], [], []]
    assert game.base_rank == RANK[deck[13]]


@pytest.mark.parametrize("seed", SEEDS)
def test_rc_3_one_card_face_up_to_each_of_four_tableau_piles(seed: int) -> None:
    game = new_game(RC, seed)
    assert game.tableau == [[c] for c in shuffled_deck(seed)[14:18]]


@pytest.mark.parametrize("seed", SEEDS)
def test_rc_4_the_other_34_cards_go_to_the_stock_and_the_waste_is_empty(seed: int) -> None:
    game = new_game(RC, seed)
    assert game.stock == shuffled_deck(seed)[18:]
    assert len(game.stock) == 34
    assert game.waste == []
    assert player_view(game)["stock"] == {"count": 34}


def test_rc_5_an_empty_foundation_takes_only_the_lead_rank() -> None:
    game = build(RC, tableau=["9S 5C", "6C", "AC"], foundations=["5H"], base_rank=5)
    refuses(game, "t2-f", Reason.FOUNDATION_NEEDS_BASE)
    refuses(game, "t3-f3", Reason.FOUNDATION_NEEDS_BASE)
    accepts(game, "t1-f")
    assert names(game.foundations[1]) == "5C"


def test_rc_6_a_foundation_builds_in_the_suit_of_its_first_card() -> None:
    game = build(RC, tableau=["6C", "6H"], foundations=["5H", "5C"], base_rank=5)
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_SUIT)
    accepts(game, "t2-f1")
    accepts(game, "t1-f2")


def test_rc_7_a_foundation_wraps_from_king_to_ace_and_ends_below_the_lead() -> None:
    game = build(RC, tableau=["AH", "3H", "2H", "4H"], foundations=[suit_run("H", 5, 13)])
    game.base_rank = 5
    refuses(game, "t2-f1", Reason.FOUNDATION_WRONG_RANK)
    refuses(game, "t3-f", Reason.FOUNDATION_WRONG_RANK)
    play(game, "t1-f1", "t3-f", "t2-f", "t4-f")
    assert names(game.foundations[0]) == suit_run("H", 5, 4)


def test_rc_8_tableau_builds_down_regardless_of_suit_and_a_king_goes_on_an_ace() -> None:
    game = build(RC, tableau=["AS", "7D"], reserve="3C KD", waste="6H", base_rank=5)
    refuses(game, "t1-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "r-t1")
    accepts(game, "w-t2")
    assert names(game.tableau[0]) == "AS KD"
    assert names(game.tableau[1]) == "7D 6H"


def test_rc_9_only_a_whole_pile_moves_between_tableau_piles() -> None:
    game = build(RC, tableau=["7C 6D", "7H", "8S"], base_rank=5)
    refuses(game, "t1-t2", Reason.PARTIAL_PILE_MOVE)
    refuses(game, "t1-t3", Reason.PARTIAL_PILE_MOVE)
    assert [str(m) for m in game.legal_moves() if str(m).startswith("t1")] == ["t1-t3x2"]
    accepts(game, "t1-t3x2")
    assert names(game.tableau[2]) == "8S 7C 6D"


def test_rc_10_a_pile_moves_onto_a_top_one_rank_above_its_bottom_card() -> None:
    game = build(RC, tableau=["KC QD", "7H", "AS"], base_rank=5)
    refuses(game, "t1-t2x2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "t1-t3x2")
    assert names(game.tableau[2]) == "AS KC QD"


def test_rc_11_a_tableau_top_card_goes_to_a_foundation() -> None:
    game = build(RC, tableau=["9S 6H", "7H"], foundations=["5H"], base_rank=5)
    refuses(game, "t2-f", Reason.FOUNDATION_WRONG_RANK)
    refuses(game, "t1-fx2", Reason.SINGLE_CARD_ONLY)
    play(game, "t1-f", "t2-f")


def test_rc_12_the_reserves_top_goes_to_a_foundation_or_the_tableau() -> None:
    position = {"tableau": ["7S"], "foundations": ["5H"], "reserve": "8H 6H", "base_rank": 5}
    for text in ("r-f", "r-t1"):
        accepts(build(RC, **position), text)
    game = build(RC, **dict(position, reserve="6H 8H"))
    refuses(game, "r-t1", Reason.NOT_ONE_RANK_LOWER)
    refuses(game, "r-f", Reason.FOUNDATION_WRONG_RANK)


def test_rc_13_the_next_reserve_card_is_turned_up() -> None:
    game = build(RC, foundations=["5H"], reserve="9C 6H", base_rank=5)
    assert player_view(game)["reserve"] == {"count": 2, "top": "6H"}
    accepts(game, "r-f")
    assert player_view(game)["reserve"] == {"count": 1, "top": "9C"}
    play(game, "r-t1")
    assert player_view(game)["reserve"] == {"count": 0, "top": None}
    refuses(game, "r-f", Reason.EMPTY_PILE)


def test_rc_14_an_empty_pile_stays_empty_until_the_player_fills_it() -> None:
    game = build(RC, tableau=["6H", "9S"], foundations=["5H"], reserve="JC QC", base_rank=5)
    change = accepts(game, "t1-f")
    assert game.tableau[0] == [] and names(game.reserve) == "JC QC"
    assert change.touched == ("t1", "f1")
    refuses(game, "t2-t1", Reason.TABLEAU_CANNOT_FILL_EMPTY)
    accepts(game, "r-t1")


def test_rc_15_while_the_reserve_has_cards_only_its_top_fills_an_empty_pile() -> None:
    game = build(RC, tableau=["", "9S"], reserve="JC", waste="8D", base_rank=5)
    refuses(game, "w-t1", Reason.EMPTY_PILE_NEEDS_RESERVE)
    accepts(game, "r-t1")
    assert names(game.tableau[0]) == "JC"


def test_rc_16_once_the_reserve_is_empty_only_the_waste_fills_an_empty_pile() -> None:
    game = build(RC, tableau=["", "9S"], waste="8D 3C", base_rank=5)
    refuses(game, "t2-t1", Reason.TABLEAU_CANNOT_FILL_EMPTY)
    refuses(game, "r-t1", Reason.EMPTY_PILE)
    accepts(game, "w-t1")
    assert names(game.tableau[0]) == "3C"


def test_rc_17_no_tableau_card_or_pile_fills_an_empty_pile() -> None:
    for reserve in ("", "JC"):
        game = build(RC, tableau=["", "9S", "8D 7C"], reserve=reserve, base_rank=5)
        refuses(game, "t2-t1", Reason.TABLEAU_CANNOT_FILL_EMPTY)
        refuses(game, "t3-t1x2", Reason.TABLEAU_CANNOT_FILL_EMPTY)
    accepts(game, "t3-t2x2")


def test_rc_18_a_draw_deals_one_card_to_the_waste() -> None:
    game = build(RC, tableau=["9S"], stock="3C 4D", base_rank=5)
    accepts(game, "d")
    assert names(game.waste) == "4D" and names(game.stock) == "3C"
    accepts(game, "d")
    assert names(game.waste) == "4D 3C" and game.stock == []
    refuses(game, "d", Reason.STOCK_EMPTY)


def test_rc_19_there_is_no_redeal() -> None:
    game = build(RC, tableau=["9S"], stock="3C", base_rank=5)
    refuses(game, "rd", Reason.NO_REDEAL)
    accepts(game, "d")
    refuses(game, "rd", Reason.NO_REDEAL)
    assert "rd" not in [str(m) for m in game.legal_moves()]


def test_rc_20_the_wastes_top_goes_to_a_foundation_or_a_tableau_pile() -> None:
    position = {"tableau": ["7S", "8S"], "foundations": ["5H"], "waste": "9C 6H", "base_rank": 5}
    for text in ("w-f", "w-t1"):
        accepts(build(RC, **position), text)
    refuses(build(RC, **position), "w-t2", Reason.NOT_ONE_RANK_LOWER)


def test_rc_21_only_the_wastes_top_card_is_visible_and_playable() -> None:
    game = build(RC, tableau=["8S", "7S"], waste="6D 7H", base_rank=5)
    assert player_view(game)["waste"] == {"count": 2, "visible": ["7H"]}
    refuses(game, "w-t2x2", Reason.SINGLE_CARD_ONLY)
    refuses(game, "w-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "w-t1")
    assert player_view(game)["waste"] == {"count": 1, "visible": ["6D"]}


def test_rc_22_no_card_leaves_a_foundation() -> None:
    game = build(RC, tableau=["7S", "6D"], foundations=["5H 6H"], base_rank=5)
    refuses(game, "f1-t1", Reason.FOUNDATION_LOCKED)
    refuses(game, "f1-f2", Reason.FOUNDATION_LOCKED)
    accepts(game, "t2-t1")


def test_rc_23_stuck_when_the_stock_is_empty_and_no_legal_move_exists() -> None:
    game = build(RC, **RAINBOW_STUCK)
    assert sorted(every_card(game)) == list(range(52))
    assert game.legal_moves() == []
    assert game.status is Status.STUCK
    refuses(game, "d", Reason.STOCK_EMPTY)
    refuses(game, "w-t1", Reason.NOT_ONE_RANK_LOWER)


def test_rc_23_a_card_left_in_the_stock_means_not_stuck() -> None:
    game = build(RC, **dict(RAINBOW_STUCK, stock="6C"))
    assert [str(m) for m in game.legal_moves()] == ["d"]
    assert game.status is Status.PLAYING
    accepts(game, "d")
    assert top(game.waste) == "6C"
    assert game.status is Status.STUCK
