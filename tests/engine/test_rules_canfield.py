"""Canfield, Solo Cards rules: each rule CF-n of docs/rules.md, accepted and refused."""

from __future__ import annotations

import pytest
from positions import (
    CANFIELD_STUCK,
    CF,
    accepts,
    build,
    every_card,
    names,
    play,
    refuses,
    suit_run,
    top,
)

from solrace.engine import PileKind, Reason, Status, new_game, player_view, shuffled_deck
from solrace.engine.cards import RANK, parse_card

SEEDS = [0, 42, 2**64 - 1]
SIX_CLUBS = parse_card("6C")

# The same, with 6C, which f1 takes, moved from the reserve into the stock.
SIX_IN_STOCK = dict(CANFIELD_STUCK, reserve="AD AH AS 2S 4D")


def _rest(deck: list[int]) -> list[int]:
    ace = next(i for i, c in enumerate(deck) if RANK[c] == 1)
    return deck[:ace] + deck[ace + 1 :]


@pytest.mark.parametrize("seed", SEEDS)
def test_cf_1_the_first_ace_in_deck_order_starts_f1(seed: int) -> None:
    game = new_game(CF, seed)
    deck = shuffled_deck(seed)
    first_ace = next(c for c in deck if RANK[c] == 1)
    assert game.foundations == [[first_ace], [], [], []]
    assert game.base_rank == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_cf_2_thirteen_cards_to_the_reserve_only_its_top_face_up(seed: int) -> None:
    game = new_game(CF, seed)
    rest = _rest(shuffled_deck(seed))
    assert game.reserve == rest[0:13]
    assert player_view(game)["reserve"] == {"count": 13, "top": names(rest[12:13])}


@pytest.mark.parametrize("seed", SEEDS)
def test_cf_3_one_card_face_up_to_each_of_four_tableau_piles(seed: int) -> None:
    game = new_game(CF, seed)
    assert game.tableau == [[c] for c in _rest(shuffled_deck(seed))[13:17]]


@pytest.mark.parametrize("seed", SEEDS)
def test_cf_4_the_other_34_cards_go_to_the_stock_and_the_waste_is_empty(seed: int) -> None:
    game = new_game(CF, seed)
    assert game.stock == _rest(shuffled_deck(seed))[17:]
    assert len(game.stock) == 34 and game.waste == []


def test_cf_5_only_an_ace_starts_a_foundation() -> None:
    game = build(CF, tableau=["9S AH", "9D 2H"], foundations=["AC"])
    refuses(game, "t2-f3", Reason.FOUNDATION_NEEDS_BASE)
    accepts(game, "t1-f")
    assert names(game.foundations[1]) == "AH"


def test_cf_6_a_foundation_builds_in_the_suit_of_its_ace() -> None:
    game = build(CF, tableau=["9S 2C"], foundations=["AC", "AH"])
    refuses(game, "t1-f2", Reason.FOUNDATION_WRONG_SUIT)
    accepts(game, "t1-f1")


def test_cf_7_a_foundation_builds_up_from_ace_to_king_without_wrapping() -> None:
    game = build(CF, tableau=["9D KC"], foundations=[suit_run("C", 1, 12)])
    accepts(game, "t1-f")
    assert len(game.foundations[0]) == 13
    game = build(CF, tableau=["9S 4C"], foundations=["AC 2C"])
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_RANK)
    refuses(game, "t1-f", Reason.FOUNDATION_WRONG_RANK)


def test_cf_8_tableau_builds_down_by_one_rank() -> None:
    game = build(CF, tableau=["9C", "JH", "10H"])
    refuses(game, "t1-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "t1-t3")


def test_cf_9_tableau_builds_down_in_alternating_colour() -> None:
    game = build(CF, tableau=["9C", "10S", "10D"])
    refuses(game, "t1-t2", Reason.NOT_ALTERNATING_COLOUR)
    accepts(game, "t1-t3")


def test_cf_10_a_king_never_goes_on_an_ace() -> None:
    game = build(CF, tableau=["KH", "AS", "QS"])
    refuses(game, "t1-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "t3-t1")


def test_cf_11_a_tableau_top_card_goes_to_the_tableau_or_a_foundation() -> None:
    position = {"tableau": ["9C 2H", "3S"], "foundations": ["AH"]}
    for text in ("t1-t2", "t1-f"):
        accepts(build(CF, **position), text)
    refuses(build(CF, **position), "t1-w", Reason.NOT_A_TARGET)


def test_cf_12_a_run_or_any_part_of_it_moves_if_its_first_card_fits() -> None:
    position = {"tableau": ["QD JS 10H 9C", "JC", "10D", "10S 9S"]}
    for text, left in (("t1-t2x2", "QD JS"), ("t1-t3", "QD JS 10H")):
        game = build(CF, **position)
        accepts(game, text)
        assert names(game.tableau[0]) == left
    game = build(CF, **position)
    refuses(game, "t4-t2x2", Reason.NOT_A_RUN)
    refuses(game, "t1-t2x3", Reason.NOT_ONE_RANK_LOWER)


def test_cf_13_an_emptied_pile_is_filled_at_once_from_the_reserve() -> None:
    game = build(CF, tableau=["2H", "8S", "8D", "QC"], foundations=["AH"], reserve="5C 7D")
    change = accepts(game, "t1-f")
    assert names(game.tableau[0]) == "7D"
    assert names(game.reserve) == "5C"
    assert change.touched == ("t1", "f1", "r", "t1")
    refuses(game, "t2-t1", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "t1-t2")
    assert names(game.tableau[0]) == "5C" and game.reserve == []


def test_cf_14_several_empty_piles_fill_in_pile_order_while_the_reserve_lasts() -> None:
    game = build(CF, tableau=["", "2H", "", "QC"], foundations=["AH"], reserve="5C 6D 7S")
    refuses(game, "t4-t1", Reason.EMPTY_PILE_NEEDS_RESERVE)
    accepts(game, "t2-f")
    assert [names(p) for p in game.tableau] == ["7S", "6D", "5C", "QC"]
    game = build(CF, tableau=["", "2H", "", "QC"], foundations=["AH"], reserve="6D")
    accepts(game, "t2-f")
    assert [names(p) for p in game.tableau] == ["6D", "", "", "QC"]


def test_cf_15_while_the_reserve_has_cards_no_move_fills_an_empty_pile() -> None:
    game = build(CF, tableau=["", "3C"], foundations=["AH 2H"], reserve="5C", waste="8D")
    for text in ("t2-t1", "w-t1", "f1-t1", "r-t1"):
        refuses(game, text, Reason.EMPTY_PILE_NEEDS_RESERVE)
    assert not [m for m in game.legal_moves() if m.dst is PileKind.TABLEAU and m.dst_index == 0]
    accepts(game, "f1-t2")


def test_cf_16_once_the_reserve_is_empty_an_empty_pile_takes_any_card_or_run() -> None:
    position = {"tableau": ["", "10H 9C", "QC", "9S 8S"], "foundations": ["AH 2H"], "waste": "8D"}
    for text in ("t2-t1x2", "t2-t1", "t3-t1", "w-t1", "f1-t1"):
        game = build(CF, **position)
        accepts(game, text)
        assert game.tableau[0]
    refuses(build(CF, **position), "t4-t1x2", Reason.NOT_A_RUN)


def test_cf_17_the_reserves_top_goes_to_the_tableau_or_a_foundation() -> None:
    position = {"tableau": ["3S", "3D"], "foundations": ["AH"], "reserve": "9C 2H"}
    for text in ("r-f", "r-t1"):
        accepts(build(CF, **position), text)
    refuses(build(CF, **position), "r-t2", Reason.NOT_ALTERNATING_COLOUR)


def test_cf_18_the_next_reserve_card_is_turned_up() -> None:
    game = build(CF, tableau=["9D"], foundations=["AH"], reserve="8C 2H")
    accepts(game, "r-f")
    assert player_view(game)["reserve"] == {"count": 1, "top": "8C"}
    accepts(game, "r-t1")
    assert player_view(game)["reserve"] == {"count": 0, "top": None}
    refuses(game, "r-t1", Reason.EMPTY_PILE)


def test_cf_19_a_draw_deals_three_cards_or_what_is_left() -> None:
    game = build(CF, tableau=["9D"], stock="2C 3C 4C 5C")
    accepts(game, "d")
    assert names(game.waste) == "5C 4C 3C" and names(game.stock) == "2C"
    accepts(game, "d")
    assert names(game.waste) == "5C 4C 3C 2C" and game.stock == []
    refuses(game, "d", Reason.STOCK_EMPTY)


def test_cf_20_a_redeal_turns_the_waste_back_in_its_original_order() -> None:
    game = build(CF, tableau=["9D"], stock="2C 3C 4C 5C 6S")
    refuses(game, "rd", Reason.STOCK_NOT_EMPTY)
    play(game, "d", "d")
    accepts(game, "rd")
    assert names(game.stock) == "2C 3C 4C 5C 6S" and game.waste == []
    empty = build(CF, tableau=["9D"])
    refuses(empty, "rd", Reason.NOTHING_TO_REDEAL)


def test_cf_21_redeals_are_unlimited() -> None:
    game = build(CF, tableau=["9D"], stock="2C 3C 4C 5C")
    start = game.position()
    for _ in range(5):
        refuses(game, "rd", Reason.STOCK_NOT_EMPTY)
        play(game, "d", "d", "rd")
        assert game.position() == start
    assert game.moves == 15


def test_cf_22_only_the_wastes_top_card_is_playable() -> None:
    game = build(CF, tableau=["9D", "8S"], stock="", waste="7C 8C 7D")
    refuses(game, "w-t2x2", Reason.SINGLE_CARD_ONLY)
    refuses(game, "w-t1x3", Reason.SINGLE_CARD_ONLY)
    accepts(game, "w-t2")
    refuses(game, "w-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "w-t1")


def test_cf_23_the_waste_shows_the_cards_of_the_last_draw_still_on_it() -> None:
    game = build(CF, tableau=["9S"], foundations=["AH"], stock="2H 3H 4H JC QC KC")
    play(game, "d")
    assert player_view(game)["waste"] == {"count": 3, "visible": ["KC", "QC", "JC"]}
    play(game, "d")
    assert player_view(game)["waste"] == {"count": 6, "visible": ["4H", "3H", "2H"]}
    play(game, "w-f")
    assert player_view(game)["waste"]["visible"] == ["4H", "3H"]
    play(game, "w-f", "w-f")
    assert player_view(game)["waste"] == {"count": 3, "visible": ["JC"]}
    refuses(game, "w-f", Reason.FOUNDATION_NEEDS_BASE)


def test_cf_24_the_wastes_top_goes_to_the_tableau_or_a_foundation() -> None:
    position = {"tableau": ["3S", "3D"], "foundations": ["AH"], "waste": "9C 2H"}
    for text in ("w-f", "w-t1"):
        accepts(build(CF, **position), text)
    refuses(build(CF, **position), "w-t2", Reason.NOT_ALTERNATING_COLOUR)


def test_cf_25_a_foundations_top_card_moves_back_to_the_tableau() -> None:
    game = build(CF, tableau=["4D", "4S"], foundations=["AH 2H 3H"], reserve="9C")
    refuses(game, "f1-t1", Reason.NOT_ALTERNATING_COLOUR)
    accepts(game, "f1-t2")
    assert names(game.tableau[1]) == "4S 3H" and names(game.foundations[0]) == "AH 2H"
    open_space = build(CF, tableau=["", "4D"], foundations=["AH 2H 3H"])
    accepts(open_space, "f1-t1")


def test_cf_26_a_foundations_top_card_moves_only_to_the_tableau() -> None:
    game = build(CF, tableau=["4S"], foundations=["AH 2H 3H"])
    refuses(game, "f1-f2", Reason.FOUNDATION_TO_TABLEAU_ONLY)
    refuses(game, "f1-f", Reason.FOUNDATION_TO_TABLEAU_ONLY)
    refuses(game, "f1-t1x2", Reason.SINGLE_CARD_ONLY)
    assert all(
        m.dst is PileKind.TABLEAU
        for m in game.legal_moves(all_forms=True)
        if m.src is PileKind.FOUNDATION
    )
    accepts(game, "f1-t1")


def test_cf_27_stuck_when_no_card_a_full_cycle_brings_up_could_play() -> None:
    game = build(CF, **CANFIELD_STUCK)
    assert sorted(every_card(game)) == list(range(52))
    assert [str(m) for m in game.legal_moves()] == ["d"]
    assert game.status is Status.STUCK
    refuses(game, "r-t1", Reason.NOT_ONE_RANK_LOWER)
    refuses(game, "f1-t3", Reason.NOT_ONE_RANK_LOWER)


def test_cf_27_a_playable_card_deep_in_the_stock_means_not_stuck() -> None:
    game = build(CF, **SIX_IN_STOCK)
    game.stock.remove(SIX_CLUBS)
    game.stock.insert(0, SIX_CLUBS)  # the last card the stock deals
    assert sorted(every_card(game)) == list(range(52))
    assert [str(m) for m in game.legal_moves()] == ["d"]
    assert game.status is Status.PLAYING
    while top(game.waste) != "6C":
        accepts(game, "d")
        assert game.status is Status.PLAYING
    assert game.stock == []
    accepts(game, "w-f")
    assert names(game.foundations[0]) == suit_run("C", 1, 6)


def test_cf_28_a_card_every_draw_of_three_covers_does_not_count() -> None:
    game = build(CF, **SIX_IN_STOCK)
    game.stock.remove(SIX_CLUBS)
    game.stock.append(SIX_CLUBS)  # the first card dealt, under the next two
    assert game.status is Status.STUCK
    for _ in range(3):  # three full cycles: 6C never reaches the top of the waste
        while game.stock:
            accepts(game, "d")
            assert top(game.waste) != "6C"
            assert game.status is Status.STUCK
        accepts(game, "rd")


def test_cf_28_a_cycle_includes_the_waste_after_the_redeal() -> None:
    game = build(CF, **SIX_IN_STOCK)
    deck = [c for c in game.stock if c != SIX_CLUBS]
    # One card left in the stock; 6C is the third card of the waste, so after the
    # redeal it tops the first draw of three.
    game.stock = deck[-1:]
    game.waste = [*deck[:2], SIX_CLUBS, *deck[2:-1]]
    game.fan = 0
    assert sorted(every_card(game)) == list(range(52))
    assert game.status is Status.PLAYING
    play(game, "d", "rd", "d")
    assert top(game.waste) == "6C"
    accepts(game, "w-f")
