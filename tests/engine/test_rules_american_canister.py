"""American Canister: each rule AC-n of docs/rules.md, accepted and refused."""

from __future__ import annotations

import pytest
from positions import (
    AC,
    BC,
    CANISTER_RUN_ONLY,
    CANISTER_STUCK,
    accepts,
    build,
    every_card,
    names,
    play,
    refuses,
    suit_run,
)

from solrace.engine import PileKind, Reason, Status, new_game, player_view


@pytest.mark.parametrize("seed", [0, 42, 2**64 - 1])
def test_ac_1_deal_is_british_canisters_all_face_up(seed: int) -> None:
    game = new_game(AC, seed)
    assert game.tableau == new_game(BC, seed).tableau
    assert [len(p) for p in game.tableau] == [7, 7, 7, 7, 6, 6, 6, 6]
    shown = [name for pile in player_view(game)["tableau"] for name in pile]
    assert len(set(shown)) == 52


def test_ac_2_no_stock_waste_or_reserve() -> None:
    game = build(AC, tableau=["9C", "10H"])
    for text in ("d", "rd", "r-t1", "w-f", "s-t1", "t1-w", "t1-r", "t1-s"):
        refuses(game, text, Reason.NO_SUCH_PILE)
    accepts(game, "t1-t2")


def test_ac_3_only_an_ace_starts_a_foundation() -> None:
    game = build(AC, tableau=["AS 2S", "5D AH"])
    refuses(game, "t1-f", Reason.FOUNDATION_NEEDS_BASE)
    refuses(game, "t1-f4", Reason.FOUNDATION_NEEDS_BASE)
    accepts(game, "t2-f")
    assert names(game.foundations[0]) == "AH"


def test_ac_4_foundation_builds_in_the_suit_of_its_ace() -> None:
    game = build(AC, tableau=["2C", "2H"], foundations=["AH"])
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_SUIT)
    accepts(game, "t2-f1")


def test_ac_5_foundation_builds_up_one_rank_at_a_time_to_the_king() -> None:
    game = build(AC, tableau=["KD", "QD"], foundations=[suit_run("D", 1, 11)])
    refuses(game, "t1-f1", Reason.FOUNDATION_WRONG_RANK)
    play(game, "t2-f1", "t1-f1")
    assert len(game.foundations[0]) == 13


def test_ac_6_a_card_or_a_runs_first_card_goes_one_rank_lower() -> None:
    game = build(AC, tableau=["10H 9C", "QS", "JS"])
    refuses(game, "t1-t2x2", Reason.NOT_ONE_RANK_LOWER)
    refuses(game, "t1-t2", Reason.NOT_ONE_RANK_LOWER)
    accepts(game, "t1-t3x2")
    assert names(game.tableau[2]) == "JS 10H 9C"


def test_ac_7_a_card_or_a_runs_first_card_alternates_colour() -> None:
    game = build(AC, tableau=["10H 9C", "JD", "JC"])
    refuses(game, "t1-t2x2", Reason.NOT_ALTERNATING_COLOUR)
    accepts(game, "t1-t3x2")


def test_ac_8_a_run_moves_as_a_unit_but_not_cards_that_are_no_run() -> None:
    game = build(AC, tableau=["10H 9H", "JS", "10D 8C", "9D 8S", "10C"])
    refuses(game, "t1-t2x2", Reason.NOT_A_RUN)
    refuses(game, "t3-t2x2", Reason.NOT_A_RUN)
    accepts(game, "t4-t5x2")
    assert names(game.tableau[4]) == "10C 9D 8S"


def test_ac_9_any_part_of_a_run_moves_down_to_its_last_card() -> None:
    position = {"tableau": ["QD JS 10H 9C", "JC", "10D", "KS"]}
    for text, left in (("t1-t4x4", ""), ("t1-t2x2", "QD JS"), ("t1-t3", "QD JS 10H")):
        game = build(AC, **position)
        accepts(game, text)
        assert names(game.tableau[0]) == left
    game = build(AC, **position)
    refuses(game, "t1-t2x3", Reason.NOT_ONE_RANK_LOWER)
    refuses(game, "t1-t4x5", Reason.NOT_ENOUGH_CARDS)


def test_ac_10_an_empty_pile_takes_only_a_king_or_a_run_from_a_king() -> None:
    game = build(AC, tableau=["5D KS QH", "", "8C 7D", "9D KC"])
    refuses(game, "t1-t2", Reason.ONLY_KING_ON_EMPTY)
    refuses(game, "t3-t2x2", Reason.ONLY_KING_ON_EMPTY)
    refuses(game, "t1-t2x3", Reason.NOT_A_RUN)
    accepts(game, "t1-t2x2")
    assert names(game.tableau[1]) == "KS QH"
    accepts(game, "t4-t5")


def test_ac_11_only_the_top_card_goes_to_a_foundation() -> None:
    game = build(AC, tableau=["3H 2S"], foundations=["AS"])
    refuses(game, "t1-fx2", Reason.SINGLE_CARD_ONLY)
    refuses(game, "t1-f1x2", Reason.SINGLE_CARD_ONLY)
    accepts(game, "t1-f")


def test_ac_12_no_card_leaves_a_foundation() -> None:
    game = build(AC, tableau=["3H", "3S"], foundations=["AS 2S"])
    refuses(game, "f1-t1", Reason.FOUNDATION_LOCKED)
    assert all(m.src is not PileKind.FOUNDATION for m in game.legal_moves(all_forms=True))
    accepts(game, "t2-f1")


def test_ac_13_stuck_when_no_legal_move_exists() -> None:
    game = build(AC, **CANISTER_STUCK)
    assert game.legal_moves() == []
    assert game.status is Status.STUCK
    refuses(game, "t1-t2x2", Reason.NOT_A_RUN)


def test_ac_13_a_run_that_can_move_means_not_stuck() -> None:
    game = build(AC, **CANISTER_RUN_ONLY)
    assert sorted(every_card(game)) == list(range(52))
    assert [str(m) for m in game.legal_moves()] == ["t8-t2x2"]
    assert game.status is Status.PLAYING
    accepts(game, "t8-t2x2")
    assert names(game.tableau[1]) == "KH QS JH 10S"
